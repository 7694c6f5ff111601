"""The roofline engine simulates token memory, and ``capacity --gpu`` says how far its seeded saturation lies from
the basis (user6a, finding 3).

``fluidq.engine.roofline_engine`` keeps ``Memory()`` (blocks of 1) where vLLM pages blocks of ``--block-size``.
Measured before choosing (validation/tools/roofline_memory_basis.py, 16 seeds, 2026-12-07; none a shipped case):
the simulated saturation under vLLM's memory (``fluidq.engine.VLLM``) differs from token memory's by -1.3, -0.2,
+2.9 and -0.9 % and lies closer to the capacity line in 1 case of 4 (line / saturation 1.016, 1.005, 1.129, 1.024 with token
memory; 1.029, 1.007, 1.098, 1.034 with vLLM's), so the engine keeps token memory and the words say so.  Before,
the region line said "seeded simulations put the stability threshold there" of the KV-rules basis, which on
Gemma-2-9B / A10G at 1000 + 200 (a cache of 3.4 requests) lies 14 % above the simulated saturation.
"""

import pytest

from saturation import overload_served  # tests/stability/saturation.py
from fluidq import Poisson, Workload
from fluidq.dtmc.kv_basis import kv_capacity
from fluidq.engine import Memory
from fluidq.engine.roofline import roofline_engine
from fluidq.stability.measured import SATURATION_PER_BASIS

SEEDS = 8


def _saturation(engine, w, rate, iterations=6_000):
    """The 95 % t-interval of the served requests/s under overload at ``rate`` over SEEDS seeded runs of
    ``iterations`` full batches (tests/stability/saturation.py; validation/tools/kv_load_basis.py's measure)."""
    horizon = max(300.0, iterations * float(engine.batch_time.base(engine.b_max)))
    _, m, h = overload_served(engine, w, rate, seeds=SEEDS, horizon_s=horizon)
    return m - h, m + h


@pytest.mark.parametrize("model,gpu,p,o", [
    ("Llama-3.1-8B", "A10G", 1000, 300),   # the cache holds 26.9 requests; measured basis / saturation 1.027
    ("Mistral-7B-v0.3", "L4", 1500, 400),  # 25.9; 1.033
    pytest.param("Gemma-2-9B", "A10G", 1000, 200, marks=pytest.mark.xfail(
        strict=True, reason="a cache of 3.4 requests: the KV-rules basis 0.3330 req/s lies 14 % above the "
                            "simulated saturation 0.2924 [0.2901, 0.2947] (16 seeds, 2026-12-07)")),
    # validation/RESULTS.md, "small KV caches against the load basis" (h-user6c; 4 seeds, 8,000 iterations)
    pytest.param("Gemma-2-9B", "A10G", 100, 100, marks=pytest.mark.xfail(
        strict=True, reason="a cache of 4,272 tokens: the KV-rules basis 5.23 req/s lies 16 % above the simulated "
                            "saturation 4.507 [4.483, 4.531] (2026-12-07)")),
    pytest.param("Gemma-2-9B", "L4", 100, 100, marks=pytest.mark.xfail(
        strict=True, reason="a cache of 4,272 tokens: the KV-rules basis 2.795 req/s lies 15 % above the simulated "
                            "saturation 2.433 [2.401, 2.464] (2026-12-07)")),
    pytest.param("Gemma-2-9B", "A10G", 500, 200, marks=pytest.mark.xfail(
        strict=True, reason="a cache of 4,272 tokens: the KV-rules basis 0.6402 req/s lies 28 % above the simulated "
                            "saturation 0.5011 [0.4896, 0.5127] (2026-12-07)")),
])
def test_token_memory_saturates_within_5_percent_of_the_kv_basis(model, gpu, p, o):
    e = roofline_engine(model, gpu, context_tokens=p + o / 2)
    assert e.memory == Memory()
    w = Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=p, output_tokens=o)
    basis = kv_capacity(e, w).requests_per_s
    lo, hi = _saturation(e, w, 1.3 * basis)
    # 5 %: the two passing rows measured basis / saturation 1.016 and 1.024 (16 seeds, module docstring's table), the
    # 13 h-kvbasis engines at most 1.040; tighter than the band the region line quotes (SATURATION_PER_BASIS,
    # basis / sim up to 1.277), which the small caches below widen and this test holds as their measured misses
    assert lo <= basis <= 1.05 * hi, (basis, lo, hi)


def test_the_region_line_states_the_measured_gap(capsys):
    from fluidq.cli import main

    rc = main(["capacity", "--gpu", "A10G", "--model", "Gemma-2-9B", "--prompt", "1000", "--output", "200"])
    out = capsys.readouterr().out
    assert rc == 0
    region = next(ln for ln in out.splitlines() if ln.startswith("region "))
    assert "seeded simulations put the stability threshold there" not in region
    assert "its KV cache in tokens, not blocks of 16 (vLLM's blocks simulated instead moved the saturation" in region
    band = SATURATION_PER_BASIS["kv_rules"]
    # the measured band of the 17 KV-bound engines, not the old "within 3 % ... 10-76 requests, 14 % below it ... 3.4"
    # (which read the Gemma ratio backwards: its basis lies 14 % above the saturation)
    assert "seeded simulations of 17 KV-bound engines saturate at 0.78-1.21 times it" in region, region
    assert band.saturate_words() in region and band.source in region, region
    assert "14 % below" not in region and "10-76" not in region and "no closer" not in region, region
    assert region.endswith("here the cache holds 3.403 requests)"), region
