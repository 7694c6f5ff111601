"""Stations with a context-aware batch time (or a KV cache): their load at the mix of hops they serve, on the basis
``fluidq capacity`` takes for one engine (fluidq.capacity.network.mix_capacity / mix_loads).  A review's fork-join
case (planner = splitwise-llama2-70b-h100-tp8, 2048/256 + 3000/300 hops) printed only the upper bound's load
0.45 while `fluidq capacity` at the mean lengths says 4,804 tokens/s (load 1.17 at 1 req/s)."""
import json

import numpy as np
import pytest

from fluidq import Engine, Poisson, Workload
from fluidq.batchtime import Affine, ContextAware, Staircase
from fluidq.capacity import full_batch_rate, mean_resident_context
from fluidq.capacity.network import mix_capacity, mix_loads
from fluidq.network import Hop
from fluidq.network.toml import network_from_dict
from fluidq.testing.cli import run_cli
from fluidq.workload import Empirical, Geometric
from fluidq.workload.traces import Trace

PROFILE = "splitwise-llama2-70b-h100-tp8"
CASE = {"name": "fj", "engines": {"planner": {"profile": PROFILE}, "worker": {"profile": PROFILE}},
        "classes": [{"name": "agent", "rate_per_s": 1.0, "route": [
            {"engine": "planner", "prompt": 2048, "output": 256, "name": "plan"},
            {"fork": "f", "branches": [[{"engine": "worker", "prompt": 1024, "output": 128, "name": "w"}],
                                       [{"engine": "planner", "prompt": 3000, "output": 300, "name": "p2"}]]},
            {"join": "f"}]}]}


def _trace_workload(rows):
    """A workload whose (prompt, output) pairs are ``rows`` (each once): capacity's own reading of a paired mix."""
    p = np.array([r[0] for r in rows], dtype=np.int64)
    o = np.array([r[1] for r in rows], dtype=np.int64)
    tr = Trace(arrival_s=np.arange(len(rows), dtype=float), prompt_tokens=p, output_tokens=o, source="rows")
    return Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=Empirical(values=tuple(p)),
                    output_tokens=Empirical(values=tuple(o)), trace=tr)


def _random_engine(rng):
    base = (Staircase(c=rng.uniform(0.002, 0.02), a=rng.uniform(0.005, 0.05), b0=int(rng.choice([64, 128, 344])))
            if rng.random() < 0.5 else Affine(c=rng.uniform(0.002, 0.02), a=rng.uniform(1e-6, 5e-5)))
    return Engine(batch_time=ContextAware(base=base, kv_s_per_token=rng.uniform(1e-8, 1e-6)),
                  b_max=int(rng.choice([512, 2048, 8192])), k_max=None if rng.random() < 0.5 else int(rng.integers(8, 512)),
                  kv_capacity_tokens=None if rng.random() < 0.3 else int(rng.integers(20_000, 2_000_000)),
                  prefill_emits_token=bool(rng.random() < 0.5))


@pytest.mark.parametrize("seed", range(12))
def test_mix_of_hops_equals_capacity_on_the_paired_workload(seed):
    """On random context-aware engines (KV caches, k_max, prefill_emits_token drawn), a mix of fixed-length hops at
    integer rate ratios equals fluidq.capacity.full_batch_rate on the workload whose trace holds the pairs in those
    ratios: the same basis, the pairs' joint reading of the context included."""
    rng = np.random.default_rng(seed)
    eng = _random_engine(rng)
    hops = [(int(rng.integers(1, 4)), (int(rng.integers(16, 4000)), int(rng.integers(1, 600))))
            for _ in range(int(rng.integers(1, 4)))]
    mix = [(float(k), Hop(engine="E", prompt_tokens=p, output_tokens=o)) for k, (p, o) in hops]
    rows = [pair for k, pair in hops for _ in range(k)]
    w = _trace_workload(rows)
    rate, b, _ = full_batch_rate(eng, w)
    got = mix_capacity(eng, mix)
    assert got["tokens_per_s"] == pytest.approx(rate, rel=1e-9) and got["batch_tokens"] == b
    assert got["context_tokens"] == pytest.approx(mean_resident_context(w), rel=1e-12)


def test_one_hop_with_random_lengths_is_capacity_of_that_workload():
    eng = Engine(batch_time=ContextAware(base=Staircase(c=0.0028, a=0.027, b0=344), kv_s_per_token=4.8e-7),
                 b_max=2048, kv_capacity_tokens=400_000)
    w = Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=Geometric(mean_tokens=900),
                 output_tokens=Geometric(mean_tokens=150))
    got = mix_capacity(eng, [(0.7, Hop(engine="E", prompt_tokens=w.prompt_tokens, output_tokens=w.output_tokens))])
    assert got["tokens_per_s"] == pytest.approx(full_batch_rate(eng, w)[0], rel=1e-12)


def test_review_fork_join_case():
    net = network_from_dict(CASE)
    loads = mix_loads(net)
    planner = loads["planner"]
    assert planner["upper_bound_load"] == pytest.approx(0.4524, abs=1e-4)
    # the mix (2048/256 and 3000/300, equal rates): the paired context 2,701.5, not 2,663 of the mean lengths
    assert planner["context_tokens"] == pytest.approx((256 * (2048 + 128) + 300 * (3000 + 150)) / 556, rel=1e-12)
    assert planner["load"] > 1.15  # 1 req/s overloads it at its mix; the upper bound said 0.45
    assert planner["load"] == pytest.approx(planner["offered_tokens_per_s"] / planner["capacity_tokens_per_s"])
    assert 0 < loads["worker"]["load"] < planner["load"]


def test_network_command_prints_the_mix_basis(capsys, tmp_path):
    case = tmp_path / "fj.toml"
    case.write_text(f'''name = "fj"
[engines.planner]
profile = "{PROFILE}"
[engines.worker]
profile = "{PROFILE}"
[[classes]]
name = "agent"
rate_per_s = 1.0
route = [
  {{ engine = "planner", prompt = 2048, output = 256, name = "plan" }},
  {{ fork = "f", branches = [[{{ engine = "worker", prompt = 1024, output = 128, name = "w" }}],
                             [{{ engine = "planner", prompt = 3000, output = 300, name = "p2" }}]] }},
  {{ join = "f" }},
]
''')
    rc, out, _ = run_cli(["network", str(case)], capsys)
    assert rc in (0, None) and "at each station's mix" in out and "planner load 1.177" in out
    assert "at the mean footprints 4,762 tokens/s, load 1.177" in out  # (no KV cache: max_throughput agrees)
    assert "rates x0.8497 put it at 1" in out
    rc, out, _ = run_cli(["network", str(case), "--json"], capsys)
    d = json.loads(out)["mix_basis"]
    assert d["bottleneck"][0] == "planner" and d["rate_scale_at_load_1"] == pytest.approx(1 / d["bottleneck"][1])


@pytest.mark.parametrize("prefill_emits", [False, True])
def test_one_limit_logic_for_a_workload_and_a_mix(prefill_emits):
    """fluidq.capacity._batch_limit_at is the one limit logic behind full_batch_rate (one workload) and mix_capacity
    (a station's hops): a fixed 1000/200 request on a 100,000-token KV cache, worked by hand -- residents
    100,000 / (1000 + 200/2) = 90.9, the batch int(90.9 x w / w_d) tokens, b/t(b) there -- and a cache smaller than the
    request's 1,200 tokens gives 0 on both faces."""
    eng = Engine(batch_time=Affine(c=0.01, a=1e-5), b_max=8192, kv_capacity_tokens=100_000,
                 prefill_emits_token=prefill_emits)
    w = Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=1000, output_tokens=200)
    wd = 199 if prefill_emits else 200
    n = 100_000 / 1100
    b = int(n * (1000 + wd) / wd)
    assert b < 8192  # the KV cache binds
    rate, b_w, note = full_batch_rate(eng, w)
    m = mix_capacity(eng, [(0.3, Hop(engine="E", prompt_tokens=1000, output_tokens=200))])
    assert b_w == m["batch_tokens"] == b and m["binding"] == "kv_cache" and m["residents"] == pytest.approx(n)
    assert rate == m["tokens_per_s"] == pytest.approx(b / (0.01 + 1e-5 * b), rel=1e-12)
    assert "KV cache (100,000 tokens) binds" in note and "KV cache (100,000 tokens) binds" in m["reason"]
    small = Engine(batch_time=Affine(c=0.01, a=1e-5), b_max=8192, kv_capacity_tokens=1199,
                   prefill_emits_token=prefill_emits)
    assert full_batch_rate(small, w)[:2] == (0.0, 0)
    m0 = mix_capacity(small, [(0.3, Hop(engine="E", prompt_tokens=1000, output_tokens=200))])
    assert (m0["tokens_per_s"], m0["batch_tokens"]) == (0.0, 0) and "1200 tokens" in m0["reason"]


def test_the_smallest_hop_of_a_mix_is_min_footprint_tokens():
    """mix_capacity's smallest request is fluidq.capacity.min_footprint_tokens of each hop (one rule with one
    workload's): the least over the hops whose lengths have a finite support -- 1,000 + 200 and the empirical
    300..900 + 100..400 give 400 -- a random hop without one (geometric) leaving it unchanged."""
    from fluidq.capacity import min_footprint_tokens

    hops = [Hop(engine="E", prompt_tokens=1000, output_tokens=200),
            Hop(engine="E", prompt_tokens=Empirical(values=(300, 900)),
                output_tokens=Empirical(values=(100, 400))),
            Hop(engine="E", prompt_tokens=Geometric(mean_tokens=50), output_tokens=Geometric(mean_tokens=20))]
    assert [min_footprint_tokens(h) for h in hops] == [1200, 400, None]
    small = Engine(batch_time=Affine(c=0.01, a=1e-5), b_max=8192, kv_capacity_tokens=399)
    m = mix_capacity(small, [(0.3, h) for h in hops])
    assert m["tokens_per_s"] == 0.0 and "the smallest holds 400 tokens" in m["reason"]
    fits = Engine(batch_time=Affine(c=0.01, a=1e-5), b_max=8192, kv_capacity_tokens=400)
    assert mix_capacity(fits, [(0.3, h) for h in hops])["tokens_per_s"] > 0
