"""The roofline engine simulates token memory, and ``capacity --gpu`` says how far its seeded saturation lies from
the basis (user6a, finding 3).

``fluidq.engine.roofline_engine`` keeps ``Memory()`` (blocks of 1) where vLLM pages blocks of ``--block-size``.
Measured before choosing (validation/tools/roofline_memory_basis.py, 16 seeds, 2026-12-07; none a shipped case):
the simulated saturation under vLLM's memory (``fluidq.engine.VLLM``) differs from token memory's by -1.3, -0.2,
+2.9 and -0.9 % and lies no closer to the capacity line (line / saturation 1.016, 1.005, 1.129, 1.024 with token
memory; 1.029, 1.007, 1.098, 1.034 with vLLM's), so the engine keeps token memory and the words say so.  Before,
the region line said "seeded simulations put the stability threshold there" of the KV-rules basis, which on
Gemma-2-9B / A10G at 1000 + 200 (a cache of 3.4 requests) lies 14 % above the simulated saturation.
"""
import math

import numpy as np
import pytest
from scipy import stats

import fluidq
from fluidq import Poisson, Workload
from fluidq.dtmc.kv_basis import kv_capacity
from fluidq.engine import Memory
from fluidq.engine.roofline import roofline_engine

SEEDS = 8


def _saturation(engine, w, rate, iterations=6_000):
    """Served requests/s under overload at ``rate``: each run's second-half arrivals minus its request backlog's
    slope there; mean and 95 % t-interval over SEEDS seeded runs (validation/tools/kv_load_basis.py's measure)."""
    horizon = max(300.0, iterations * float(engine.batch_time.base(engine.b_max)))
    served = []
    for seed in range(SEEDS):
        r = fluidq.simulate(engine, w.with_rate(rate), "sarathi", horizon_s=horizon, rng=1000 + seed)
        served.append(r.offered(0.5)["requests_per_s"] - r.backlog_slope("requests", 0.5))
    m, s = float(np.mean(served)), float(np.std(served, ddof=1))
    h = float(stats.t.ppf(0.975, SEEDS - 1) * s / math.sqrt(SEEDS))
    return m - h, m + h


@pytest.mark.parametrize("model,gpu,p,o", [
    ("Llama-3.1-8B", "A10G", 1000, 300),   # the cache holds 26.9 requests; measured basis / saturation 1.027
    ("Mistral-7B-v0.3", "L4", 1500, 400),  # 25.9; 1.033
    pytest.param("Gemma-2-9B", "A10G", 1000, 200, marks=pytest.mark.xfail(
        strict=True, reason="a cache of 3.4 requests: the KV-rules basis 0.3330 req/s lies 14 % above the "
                            "simulated saturation 0.2924 [0.2901, 0.2947] (16 seeds, 2026-12-07)")),
])
def test_token_memory_saturates_within_5_percent_of_the_kv_basis(model, gpu, p, o):
    e = roofline_engine(model, gpu, context_tokens=p + o / 2)
    assert e.memory == Memory()
    w = Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=p, output_tokens=o)
    basis = kv_capacity(e, w).requests_per_s
    lo, hi = _saturation(e, w, 1.3 * basis)
    assert lo <= basis <= 1.05 * hi, (basis, lo, hi)


def test_the_region_line_states_the_measured_gap(capsys):
    from fluidq.cli import main

    rc = main(["capacity", "--gpu", "A10G", "--model", "Gemma-2-9B", "--prompt", "1000", "--output", "200"])
    out = capsys.readouterr().out
    assert rc == 0
    region = next(ln for ln in out.splitlines() if ln.startswith("region "))
    assert "seeded simulations put the stability threshold there" not in region
    assert "its KV cache in tokens, not blocks of 16 (vLLM's blocks simulated instead moved the saturation" in region
    assert "14 % below it where it held 3.4" in region and region.endswith("here it holds 3.403)"), region
