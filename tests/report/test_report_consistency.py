"""The report's sections agree with each other: one scheduler configuration, one reference capacity,
loads below and above it, and no ``nan`` in a table (the quick report of the embedded default)."""
import re

import pytest

from fluidq import max_throughput
from fluidq.report import build_report, default_inputs


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("report")
    e, w, prof = default_inputs()
    res = build_report(out, e, w, quick=True, profile_name=prof)
    md = (out / "report.md").read_text()
    sections = dict(re.findall(r"^## (.+?)\n(.*?)(?=^## |\Z)", md, re.MULTILINE | re.DOTALL))
    return {"res": res, "md": md, "sections": sections, "lam": max_throughput(e, w).requests_per_s,
            "load": w.token_rate_per_s / max_throughput(e, w).tokens_per_s}


def _section(report, word):
    return next(text for title, text in report["sections"].items() if word in title)


def test_one_scheduler_configuration_in_every_section(report):
    by_title = {s["title"]: s["data"] for s in report["res"]["sections"]}
    configs = [d["reference"]["policies"] for d in by_title.values() if isinstance(d, dict) and "reference" in d]
    assert len(configs) >= 3 and all(c == configs[0] for c in configs)
    assert "chunk_long_prompts=True" in configs[0]["fastertransformer"]
    verdicts, sim = _section(report, "verdict"), _section(report, "Simulated")
    for text in (verdicts, sim, _section(report, "Reference")):
        assert "--chunk-long-prompts" in text
    # the verdict table judges the same FasterTransformer / vLLM the simulations run: not the ones that
    # never schedule a prompt longer than b_max (that variant is only quoted, marked "for comparison only")
    notes = verdicts.split("At the operating point (load")[1].split("For comparison only")[0]
    assert "never schedules them" not in notes and "chunk_long_prompts=False" not in notes


def test_every_section_states_the_reference_capacity(report):
    lam = f"{report['lam']:.3f}"
    for word in ("Reference", "Capacity", "verdict", "Simulated", "region", "Latency"):
        assert lam in _section(report, word), word
    assert f"load {report['load']:.3f}" in _section(report, "Reference")  # the offered load vs capacity
    # the latency section's loads are fractions of that same lambda*, and it names its KV-limited capacity
    lat = _section(report, "Latency")
    found = re.findall(r"\*\*Load ([0-9.]+)\*\* of the reference lambda\* \(([0-9.]+) req/s;", lat)
    assert len(found) >= 2 and "KV-cache limit" in lat
    for ld, rate in found:
        assert float(rate) == pytest.approx(float(ld) * report["lam"], abs=1e-3)


def test_simulations_show_loads_below_and_above_capacity(report):
    sim = next(s["data"] for s in report["res"]["sections"] if "Simulated" in s["title"])
    loads = [w["load"] for w in sim["windows"].values()]
    assert any(0.5 <= x < 1 for x in loads) and any(1 < x <= 1.5 for x in loads)
    figs = [f for f in report["res"]["figures"] if "sim_trajectories" in f]
    assert len(figs) >= 2  # drawn: one below, one above capacity


def test_tables_show_a_dash_not_nan(report):
    rows = [line for line in report["md"].splitlines() if line.startswith("|")]
    assert rows and not [r for r in rows if re.search(r"\bnan\b", r, re.IGNORECASE)]
    if any("–" in r for r in rows):
        assert "no request finished" in report["md"]
