"""A disaggregated tandem as a topology: the case file and its API against disaggregated_capacity, the
fluid verdict against seeded replications (95 % intervals) at 0.9 and 1.1 of the bottleneck, and
``fluidq network`` on a disaggregated case."""
import json

import pytest

from fluidq import Engine, Poisson, Workload
from fluidq.batchtime import Affine, ContextAware
from fluidq.batchtime.comm import Link
from fluidq.capacity.disaggregated import disaggregated_capacity
from fluidq.capacity.disaggregated_case import (CASES_DIR, DisaggregatedTopology, case_names, check_disaggregated,
                                                load_topology, topology_from_dict)
from fluidq.errors import DataError, ParameterError
from fluidq.testing.cli import assert_one_line, run_cli

KVB = 131072
LINK = Link(bandwidth_gbps=10.0, latency_us=5.0)
PRE = Engine(batch_time=Affine(c=0.01, a=1e-4), b_max=2000)
DEC = Engine(batch_time=ContextAware(base=Affine(c=0.02, a=1e-12), kv_s_per_token=1e-6), b_max=2048, k_max=50)


def wl(rate=1.0):
    return Workload(arrival=Poisson(rate_per_s=rate), prompt_tokens=1000, output_tokens=101)


def topo(n_p, n_d, rate=1.0, link=LINK):
    return DisaggregatedTopology(prefill=PRE, decode=DEC, n_prefill=n_p, n_decode=n_d, link=link,
                                 kv_bytes_per_token=KVB, workload=wl(rate))


def test_shipped_case_is_the_hand_tandem():
    t = load_topology("pd_tandem")
    by_hand = disaggregated_capacity(PRE, DEC, wl(), n_prefill=3, n_decode=2, link=LINK, kv_bytes_per_token=KVB)
    cap = t.capacity()
    assert cap.stages == pytest.approx(by_hand.stages, rel=1e-12) and cap.bottleneck == "decode"
    assert t.rate_per_s == pytest.approx(0.9 * by_hand.requests_per_s)  # bottleneck_load = 0.9
    assert cap.verdict == "stable" and cap.load == pytest.approx(0.9)
    assert t.at_load(1.1).capacity().verdict == "unstable"
    assert sorted(case_names()) == sorted(p.stem for p in CASES_DIR.glob("*.toml"))


def test_roofline_case_builds_vllm_engines():
    from fluidq.batchtime.roofline import roofline
    from fluidq.models import kv_capacity_estimate, load_gpu, load_model

    t = load_topology("pd_llama8b_h100")
    kv = kv_capacity_estimate(load_model("Llama-3.1-8B"), gpu_memory_gib=load_gpu("H100").memory_gib, max_num_seqs=256).tokens
    assert t.decode.kv_capacity_tokens == kv and t.decode.k_max == 256 and t.prefill.b_max == 2048
    assert t.prefill.batch_time == roofline("Llama-3.1-8B", "H100")
    assert t.kv_bytes_per_token == load_model("Llama-3.1-8B").kv_bytes_per_token()
    assert t.link.bandwidth_gbps == 450 and t.capacity().load == pytest.approx(0.9) and t.links == 1
    d = {"disaggregated": {"prefill_engines": 1, "decode_engines": 1, "model": "Llama-3.1-70B", "gpu": "H100",
                           "tensor_parallel_size": 4}, "workload": {"prompt": 1000, "output": 100}}
    t4 = topology_from_dict(d)
    assert t4.links == 4 and t4.gpus_per_engine == 4 and t4.capacity().gpus == 8  # one link per TP rank
    assert topology_from_dict({**d, "disaggregated": {**d["disaggregated"], "links": 1}}).links == 1


@pytest.mark.parametrize("n_p,n_d,want", [(3, 2, "decode"), (2, 3, "prefill")])
def test_fluid_verdict_agrees_with_replications(n_p, n_d, want):
    """At 0.9 and 1.1 of the bottleneck: the 95 % interval of the simulated backlog growth share lies below
    5 % (stable) or above 1 % (unstable), and at 1.1 it covers the fluid growth 1 - 1/1.1 = 0.091."""
    base = topo(n_p, n_d)
    assert base.capacity().bottleneck == want
    for f, verdict in ((0.9, "stable"), (1.1, "unstable")):
        v = check_disaggregated(base.at_load(f), simulate=True, replications=3, horizon_s=150.0, seed=1)
        assert v.status == verdict and v.simulated == verdict and v.agree is True, v.reason
        lo, hi = v.simulation.growth_share_ci
        if f > 1:
            assert lo < 1 - 1 / 1.1 < hi, (lo, hi)
            # served rate: never above the bottleneck's capacity (Theorem 2 per pool); below it by the ramp of a
            # run that starts empty (measured 2026-12-06: 4.5 % and 4.4 % below over 3 x 150 s, the CI's upper
            # end 3.1 % and 3.6 % below), so the 8 % allows about twice the measured ramp
            cap = base.capacity().requests_per_s
            assert v.simulation.throughput_ci[0] <= cap
            assert v.simulation.throughput_per_s == pytest.approx(cap, rel=0.08)


def test_too_short_a_simulation_is_inconclusive_not_a_disagreement():
    v = check_disaggregated(topo(2, 3).at_load(1.1), simulate=True, replications=2, horizon_s=5.0, seed=0)
    assert v.simulated == "inconclusive" and v.agree is None and "inconclusive" in v.reason


def _case(**dis):
    d = {"name": "t", "disaggregated": {"prefill_engines": 1, "decode_engines": 1,
                                        "prefill": {"batch_time": {"kind": "affine", "c": 0.01, "a": 1e-4},
                                                    "b_max": 2000},
                                        "decode": {"batch_time": {"kind": "affine", "c": 0.02, "a": 1e-6},
                                                   "b_max": 2048, "k_max": 50},
                                        "kv_bytes_per_token": KVB,
                                        "link": {"bandwidth_gbps": 10.0, "latency_us": 5.0}},
         "workload": {"rate_per_s": 2.0, "prompt": 1000, "output": {"dist": "geometric", "mean": 100}}}
    d["disaggregated"].update(dis)
    return d


def test_case_from_dict_with_a_length_table():
    t = topology_from_dict(_case())
    assert t.workload.mean_output_tokens == pytest.approx(100) and t.rate_per_s == 2.0
    assert t.to_dict()["kind"] == "disaggregated"


@pytest.mark.parametrize("change,needle", [
    (dict(prefill_engines=0), "prefill_engines"),
    (dict(colour="red"), "unknown key 'colour'"),
    (dict(model="Llama-3.1-8B", gpu="H100"), "'prefill' describes an engine"),
    (dict(kv_bytes_per_token=-1), "kv_bytes_per_token"),
    (dict(link={"bandwidth_gbps": 10.0}), "latency_us"),
    (dict(max_num_seqs=8), "max_num_seqs is read only with model and gpu"),
])
def test_bad_case_names_the_key(change, needle):
    with pytest.raises(DataError, match=needle):
        topology_from_dict(_case(**change), source="case.toml")


def test_bad_roofline_case_names_the_key():
    d = {"disaggregated": {"prefill_engines": 1, "decode_engines": 1, "model": "Llama-3.1-8B", "gpu": "H10"},
         "workload": {"prompt": 100, "output": 10}}
    with pytest.raises(DataError, match="gpu"):
        topology_from_dict(d, source="case.toml")
    with pytest.raises(ParameterError, match="n_prefill"):
        DisaggregatedTopology(prefill=PRE, decode=DEC, n_prefill=0, n_decode=1, link=LINK, kv_bytes_per_token=KVB,
                              workload=wl())


def test_network_command_takes_a_disaggregated_case(capsys, tmp_path):
    rc, out, _ = run_cli(["network", "pd_tandem", "--json"], capsys)
    d = json.loads(out)
    t = load_topology("pd_tandem")
    assert rc == 0 and d["status"] == "stable" and d["bottleneck"] == "decode"
    assert d["fluid"]["requests_per_s"] == pytest.approx(t.capacity().requests_per_s, rel=1e-12)
    assert d["region"]["decode_tokens_per_s"] == pytest.approx(100 * t.capacity().stages["decode"])
    rc, out, _ = run_cli(["network", "pd_tandem", "--load", "1.1", "--simulate", "--replications", "3",
                          "--horizon", "150", "--seed", "1"], capsys)
    assert rc == 0 and "verdict: unstable (decided by the fluid model; the simulation agrees)" in out
    p = tmp_path / "mine.toml"
    p.write_text((CASES_DIR / "pd_tandem.toml").read_text().replace("decode_engines = 2", "decode_engines = 5"))
    rc, out, _ = run_cli(["network", str(p), "--json"], capsys)
    assert rc == 0 and json.loads(out)["bottleneck"] == "prefill"
    assert_one_line(["network", "pd_tandem", "--plot", str(tmp_path / "a.png")], capsys, "--plot")
    assert_one_line(["network", "pd_tandem", "--load", "0"], capsys, "--load")
    assert_one_line(["network", "pd_tandem", "--simulate", "--horizon", "1e9"], capsys, "--horizon")
    p.write_text((CASES_DIR / "pd_tandem.toml").read_text().replace("links", "lynx").replace(
        "prefill_engines = 3", "prefill_engines = 3\nlynx = 2"))
    assert_one_line(["network", str(p)], capsys, "unknown key 'lynx'")


def test_workload_and_load_mistakes_name_the_file_s_key():
    """Review 2026-12-06: `prompt = 0` was reported as `prompt_tokens=0` (not a key of the file), and a
    `bottleneck_load` whose rate leaves the range as `rate_per_s=...` with no file or key."""
    d = _case()
    d["workload"]["prompt"] = 0
    with pytest.raises(DataError, match=r"case\.toml \[workload\]: prompt = 0") as ei:
        topology_from_dict(d, source="case.toml")
    assert "prompt_tokens" not in str(ei.value)
    d = _case()
    d["bottleneck_load"] = 1e300
    with pytest.raises(DataError, match=r"case\.toml: bottleneck_load = 1e\+300"):
        topology_from_dict(d, source="case.toml")
    d = _case()
    d["disaggregated"]["decode"].pop("k_max")
    assert "no KV cache limit" in topology_from_dict(d).describe()
