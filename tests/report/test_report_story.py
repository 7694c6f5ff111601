"""The default report tells one story (issue 17): the deployment's engine count follows from the capacity,
the operating point is one engine's share and lies inside the region the report plots, the verdicts and
simulations look at that load and at one engine fewer, the latency section says which orderings its
intervals separate (or that none do) and how much is unfinished; human numbers carry 4 significant digits
while the JSON keeps full precision."""
import json
import math
import re

import pytest

from fluidq import max_throughput
from fluidq.report import build_report, default_inputs
from fluidq.report.reference import TARGET_UTILISATION
from fluidq.report.sections.s50_latency import separated
from fluidq.results import round_numbers


@pytest.fixture(scope="module")
def story(tmp_path_factory):
    out = tmp_path_factory.mktemp("story")
    e, w, prof = default_inputs()
    res = build_report(out, e, w, quick=True, profile_name=prof)
    md = (out / "report.md").read_text()
    secs = {s["title"]: s["data"] for s in res["sections"]}
    text = dict(re.findall(r"^## (.+?)\n(.*?)(?=^## |\Z)", md, re.MULTILINE | re.DOTALL))
    cap = max_throughput(e, w)
    return {"res": res, "md": md, "data": secs, "text": text, "cap": cap, "rho": w.token_rate_per_s / cap.tokens_per_s}


def _get(d, word):
    return next(v for k, v in d.items() if word in k)


def test_engine_count_follows_from_capacity(story):
    ref = _get(story["data"], "Reference")["reference"]
    rho = story["rho"]
    assert rho > 1  # the embedded default needs more than one engine
    n = ref["n_engines"]
    assert n == math.ceil(rho / TARGET_UTILISATION - 1e-9)
    assert ref["engine_load"] == pytest.approx(rho / n) and ref["engine_load"] <= TARGET_UTILISATION
    assert (n - 1) == 0 or rho / (n - 1) > TARGET_UTILISATION  # no smaller count meets the target
    assert f"**{n} engines**" in _get(story["text"], "Reference")
    assert f"| engines needed (at most load {TARGET_UTILISATION:g} each) | {n} |" in _get(story["text"], "Capacity")


def test_operating_point_is_inside_the_plotted_region(story):
    ref = _get(story["data"], "Reference")["reference"]
    reg = _get(story["data"], "region")
    x = ref["engine_load"] * story["cap"].requests_per_s
    e, w, _ = default_inputs()
    assert reg["operating_point"] == pytest.approx([x * w.mean_prompt_tokens, x * w.mean_output_tokens])
    assert reg["inside"] and reg["load"] == pytest.approx(ref["engine_load"], rel=1e-6)
    # the region's own test on the drawn polygon: the point is below the boundary along its ray
    from fluidq.region import stability_region
    from fluidq.report.sections.s40_region import ILLUSTRATIVE_K_MAX

    region = stability_region(e if e.k_max else e.with_(k_max=ILLUSTRATIVE_K_MAX))
    assert region.scale_of(reg["operating_point"]) > 1
    (hx, hy), = reg["marks"].values()  # one engine fewer: outside
    assert region.scale_of((hx, hy)) < 1
    assert "inside the region" in _get(story["text"], "region")


def test_verdicts_and_simulations_are_at_the_operating_point(story):
    ref = _get(story["data"], "Reference")["reference"]
    lo, hi = ref["loads_shown"]
    assert lo == pytest.approx(ref["engine_load"]) and hi == pytest.approx(story["rho"] / (ref["n_engines"] - 1))
    sim = _get(story["data"], "Simulated")["windows"]
    assert sorted(w_["load"] for w_ in sim.values()) == pytest.approx([lo, hi])
    verdicts = _get(story["text"], "verdict")
    assert "(operating point)" in verdicts and "every scheduler is unstable" in verdicts


def test_latency_says_which_intervals_separate_and_what_is_unfinished(story):
    lat_text = _get(story["text"], "Latency")
    res = story["res"]
    from fluidq.report import ReportContext  # noqa: F401  (the section's public helper is tested below)

    data = _get(story["data"], "Latency")
    loads = data["loads_of_reference"]
    assert loads[0] == pytest.approx(_get(story["data"], "Reference")["reference"]["engine_load"])
    lines = [s for s in lat_text.splitlines() if s.startswith("At load ") and "mean latency per token" in s]
    assert len(lines) == len(loads)
    for i, line in enumerate(lines):
        sep = data["separation"][f"{loads[i]:.12g}"]
        if sep["better"] or sep["worse"]:
            assert "the intervals separate" in line
            for p in sep["better"]:
                assert f"**{p}**" in line
        else:
            assert "indistinguishable" in line
        # the unfinished share stated is 1 - the finished fractions of the table
        fr = [data["values"][p]["finished_fraction"][i][0] for p in data["policies"]]
        m = re.search(r"Unfinished: ([0-9.]+)–([0-9.]+) %", line)
        assert m, line
        assert float(m.group(1)) == pytest.approx(100 * (1 - max(fr)), rel=1e-3, abs=0.01)
        assert float(m.group(2)) == pytest.approx(100 * (1 - min(fr)), rel=1e-3, abs=0.01)
    assert res["figures"]


def test_separation_reads_the_intervals():
    class R:  # a minimal LatencyComparison: values[policy][metric][load] = (mean, half-width)
        policies = ("fcfs", "a", "b", "c")
        values = {"fcfs": {"m": [(1.0, 0.1)]}, "a": {"m": [(0.5, 0.1)]}, "b": {"m": [(1.05, 0.1)]},
                  "c": {"m": [(2.0, 0.5)]}}

    assert separated(R, "m", 0) == {"better": ["a"], "worse": ["c"], "same": ["b"]}


def test_human_numbers_are_rounded_and_json_keeps_full_precision(story):
    ids = re.compile(r"arXiv:\d+\.\d+")
    long = [m for m in re.findall(r"(?<![\w.:])\d[\d,]*\.\d+", ids.sub("", story["md"]))
            if len(m.replace(",", "").replace(".", "").lstrip("0")) > 4]
    assert not long, long[:10]
    ref = _get(story["data"], "Reference")["reference"]
    assert ref["reference_requests_per_s"] == story["cap"].requests_per_s  # not rounded
    assert json.loads(json.dumps(ref))["offered_load"] == story["rho"]
    assert len(repr(story["rho"]).replace(".", "")) > 5  # so the check above would see a rounding


def test_round_numbers_keeps_identifiers_and_rounds_decimals():
    assert round_numbers("3342.909 tokens/s, 0.0167145 req/ms") == "3,343 tokens/s, 0.01671 req/ms"
    assert round_numbers("('E1', 0.8999999999999999)") == "('E1', 0.9000)"
    for keep in ("arXiv:2504.07347", "b_max=512", "fluidq 0.1.0", "0.75", "1,678"):
        assert round_numbers(keep) == keep


def test_every_analysis_section_names_the_operating_point(story):
    from fluidq.report.reference import fmt4

    ref = _get(story["data"], "Reference")["reference"]
    x = fmt4(ref["engine_load"])
    for word in ("Reference", "Capacity", "verdict", "Simulated", "region", "Latency"):
        assert x in _get(story["text"], word), word


def test_verdict_plot_outlines_the_operating_point(tmp_path):
    from fluidq.plotting import plot_verdicts
    from fluidq.results import Status

    class V:
        def __init__(self, s):
            self.status = Status(s)

    grid = {"a": [V("stable"), V("unstable")], "b": [V("unknown"), V("unstable")]}
    ax = plot_verdicts(grid, (0.7532, 1.13), mark=0.7532)  # no path: the axes
    assert [t.get_text() for t in ax.get_xticklabels()] == ["0.7532\n(operating point)", "1.13"]
    outlined = [p for p in ax.patches if not p.get_fill()]
    assert len(outlined) == 1 and outlined[0].get_x() < 0.5


def test_capacity_plot_shows_the_per_engine_load():
    from fluidq.capacity import capacity_vs_bmax
    from fluidq.errors import ParameterError
    from fluidq.plotting import plot_capacity_vs_bmax

    e, w, _ = default_inputs()
    curve = capacity_vs_bmax(e, w, b_max_values=[256, 512])
    ax = plot_capacity_vs_bmax(curve, engines=3)
    levels = {ln.get_label(): ln.get_ydata()[0] for ln in ax.get_lines() if "offered" in ln.get_label()}
    assert levels["offered load per engine, 3 engines"] == pytest.approx(w.token_rate_per_s / 3)
    assert levels["offered load (one engine)"] == pytest.approx(w.token_rate_per_s)
    with pytest.raises(ParameterError, match="engines"):
        curve.plot(engines=0)
    # plotting computes no capacity: the old call (an engine and a workload) says what to call instead
    with pytest.raises(ParameterError, match="capacity_vs_bmax"):
        plot_capacity_vs_bmax(e, w, b_max_values=[512], engines=3)


def test_latency_horizon_follows_the_arrival_count(tmp_path, monkeypatch):
    """The latency horizon is about ARRIVALS_PER_RUN arrivals at the busier load, within
    [MIN_HORIZON_S, HORIZON_S]: a faster engine (more requests per second) gets a shorter one."""
    from fluidq.report import ReportContext
    from fluidq.report.sections import s50_latency as s50

    seen = []

    def fake(engine, workload, pols, *, loads, horizon_s, n_replications, rng):
        seen.append((horizon_s, n_replications))
        raise RuntimeError("stop")  # only the horizon chosen is wanted here

    monkeypatch.setattr("fluidq.latency.compare_orderings", fake)
    e, w, _ = default_inputs()
    for n in (s50.ARRIVALS_PER_RUN, 400, 10):
        monkeypatch.setattr(s50, "ARRIVALS_PER_RUN", n)
        with pytest.raises(RuntimeError):
            s50.render(ReportContext(engine=e, workload=w, out_dir=tmp_path))
    e_kv = e.with_(kv_capacity_tokens=50_000)
    busiest = s50.BUSY * max_throughput(e_kv, w).requests_per_s
    assert seen[0] == (s50.HORIZON_S, s50.REPLICATIONS)  # the embedded default: the full 400 s
    assert seen[1][0] == pytest.approx(400 / busiest) and s50.MIN_HORIZON_S < seen[1][0] < s50.HORIZON_S
    assert seen[2][0] == s50.MIN_HORIZON_S
