"""The capacity through the switch from the KV cache to max_num_seqs (issue 16 / 20, h-kvjump).

The flow balance (fluidq.validate.predict.predict_capacity: ``fluidq capacity --gpu`` / ``--profile-dir``, the KV
rules' load basis) jumped +8 to +26 % at one step of 1.5 % in the KV cache where the mean context of max_num_seqs'
residents came to fit it (the random engines below, main 222e481), while the simulated engine still preempts until
they fit at full context.  Now the cache binds for the share of their decode life in which they outgrow it
(predict._cache_binding_share): continuous, monotone, and within a band of seeded simulation through the switch.
"""
import numpy as np
import pytest

import fluidq
from fluidq.dtmc.kv_basis import _BatchTimeIterations, kv_capacity
from fluidq.engine.roofline import roofline_engine
from fluidq.validate.predict import predict_capacity
from fluidq.validate.roofline import predict_roofline_deployment
from fluidq.workload import Poisson, Workload

MODELS = ["Llama-3.1-8B", "Qwen2.5-7B", "Mistral-7B-v0.3", "Llama-3.2-3B", "Qwen2.5-14B"]
GPUS = ["H100-SXM5-80GB", "A100-SXM4-80GB", "L40S", "L4"]

#: the capacity's relative rise over one step of the cache at most this many times the cache's relative rise (an
#: elasticity: where the cache binds the residents grow with it, and the preemptions that the cache-binding share
#: takes away add to it, more where the outputs are short against the prompts: the ramp is narrower).  Measured
#: 2026-12-07 on these engines: at most 1.24 (+2.4 % over a step of 1.9 %); on main 222e481 2.7-13.5 on four of the
#: six (+3.8 to +18.6 %, where the binding limit switched), and +11 to +58 % over one step of 0.01 in
#: gpu_memory_utilization
MAX_ELASTICITY = 2.5
#: continuity proper: the sweep's largest step, cut in 8, has no sub-step above this share of it (a jump keeps all of
#: it in one sub-step at any resolution), beyond the Monte Carlo noise MC_NOISE
MAX_SUBSTEP_SHARE = 0.5
#: the largest fall over one grid step: the fixed-seed Monte Carlo of the admitted prompts per iteration
#: (predict._admitted_iteration_s, 4,000 iterations, its Poisson finishes redrawn as the residents change) moves the
#: capacity between neighbouring caches: falls of at most 0.14 % on the random engines and 0.55 % on the
#: gpu_memory_utilization sweeps (Llama-3.1-8B A100 at 0.74, deep in the KV-bound regime), 2026-12-07; up to 0.5 % on
#: main: noise of the fixed-seed recursion, not a fall of the formula
MC_NOISE = 0.01


def _steps(caps, kvs):
    """The capacity's relative steps along a sweep of caches, and each over the cache's relative step."""
    rel = np.diff(caps) / caps[:-1]
    return rel, rel / (np.diff(kvs) / kvs[:-1])


def _random_engine(seed):
    rng = np.random.default_rng(seed)
    m, g = MODELS[rng.integers(len(MODELS))], GPUS[rng.integers(len(GPUS))]
    k, p0, o0 = int(rng.integers(16, 257)), int(rng.integers(100, 2001)), int(rng.integers(50, 1001))
    sig = [0.0, 0.5][rng.integers(2)]
    # max_num_seqs below what the token budget (2048) lets decode, so the sweep crosses from the cache to k_max
    k = max(8, min(k, int(0.7 * 2048 * (o0 - 1) / (p0 + o0 - 1))))
    if sig:
        p = np.maximum(1, np.round(rng.lognormal(np.log(p0) - sig * sig / 2, sig, 512)))
        o = np.maximum(2, np.round(rng.lognormal(np.log(o0) - sig * sig / 2, sig, 512)))
    else:
        p, o = np.array([float(p0)]), np.array([float(o0)])
    return m, g, k, p, o, sig


def _capacity(m, g, k, p, o, kv):
    eng = roofline_engine(m, g, 1, k_max=k, kv_capacity_tokens=int(kv))
    return predict_capacity(_BatchTimeIterations(eng.batch_time), p, o, b_max=2048, k_max=k,
                            kv_capacity_tokens=int(kv), block_size=16)


@pytest.mark.parametrize("seed", range(6))
def test_capacity_continuous_and_monotone_in_kv_cache(seed):
    m, g, k, p, o, sig = _random_engine(seed)
    base = k * (p.mean() + o.mean() / 2)  # where max_num_seqs' residents fit at their mean context (about)
    kvs = np.unique((base * np.linspace(0.7, 1.9, 81)).astype(int))
    preds = [_capacity(m, g, k, p, o, kv) for kv in kvs]
    caps = np.array([x.tokens_per_s for x in preds])
    rel, el = _steps(caps, kvs)
    assert el.max() <= MAX_ELASTICITY, (m, g, k, float(el.max()), float(rel.max()), int(kvs[el.argmax() + 1]))
    assert rel.min() >= -MC_NOISE, (m, g, k, float(rel.min()), int(kvs[rel.argmin() + 1]))
    i = int(rel.argmax())  # the largest step, resolved finer: a continuous capacity spreads it over the sub-steps
    sub = np.array([_capacity(m, g, k, p, o, kv).tokens_per_s for kv in np.linspace(kvs[i], kvs[i + 1], 9)])
    big = caps[i + 1] - caps[i]
    assert np.diff(sub).max() <= max(MAX_SUBSTEP_SHARE * big, MC_NOISE * caps[i]), (m, g, k, list(sub), big)
    # the sweep crosses the switch: both the KV-bound and the max_num_seqs-bound ends are in it
    assert preds[0].binding == "kv_cache" and preds[-1].binding == "k_max", [x.binding for x in preds[::10]]


@pytest.mark.parametrize("model,gpu,k,p,o", [("Llama-3.1-8B", "A100-SXM4-80GB", 128, 3000, 1000),
                                             ("Mistral-7B-v0.3", "A100-SXM4-80GB", 96, 3000, 1500),
                                             ("Qwen2.5-7B", "L4", 32, 2000, 500)])
def test_capacity_monotone_in_gpu_memory_utilization(model, gpu, k, p, o):
    # `fluidq capacity --gpu`'s answer (vLLM's memory planner, blocks of 16) from 0.7 to 1.0 of the GPU's memory,
    # across the switch: the cache binds at 0.7, max_num_seqs alone at 1.0 (before: +11 to +58 % at one step of 0.01)
    us = np.round(np.arange(0.70, 1.0001, 0.01), 3)
    res = [predict_roofline_deployment(model, gpu, input_tokens=p, output_tokens=o, max_num_seqs=k,
                                       gpu_memory_utilization=float(u)) for u in us]
    caps = np.array([r.tokens_per_s for r in res])
    rel, el = _steps(caps, np.array([r.inputs["kv_capacity_tokens"] for r in res], dtype=float))
    assert res[0].binding == "kv_cache" and res[-1].binding == "k_max", [r.binding for r in res]
    assert rel.min() >= -MC_NOISE and el.max() <= MAX_ELASTICITY, (list(us), list(caps))
    assert caps[-1] > caps[0]


#: held-out engine for the simulation band: Qwen2.5-14B on an A100, max_num_seqs 64, fixed 800 + 250 tokens, caches at
#: 0.95, 1.0, 1.05 and 1.1 times k_max (p + o/2), through the switch (the KV cache still binds at all four in the
#: formula; the simulated engine preempts 0.11, 0.09, 0.02 and 0 times a request).  Measured 2026-12-07 (the two seeds
#: below, 1,500 requests each): the formula -0.3, -2.0, -3.5 and +0.4 % of the simulation's mean.  Main 222e481's
#: formula (fluidq.dtmc.kv_basis.kv_capacity at that commit) against the same simulations: -3.3 and -8.2 % at 0.95 and
#: 1.0 (4,207 and 4,192 tokens/s against 4,351 and 4,567), outside the band at 1.0, and at 1.05 and 1.1 no KV-rules
#: capacity at all (the cache counted as not binding; max_throughput 5,741 tokens/s, +20 %); this test's body run on
#: the 222e481 tree, its own simulator included: -7.0 and -9.3 %, then that missing capacity.  (On the engine it
#: replaced, 1200 + 400 tokens at 0.95, 1.05 and 1.1 x, 222e481 was inside the band wherever it gave a KV-rules
#: capacity, -4.9 % at 0.95 x and -3.0 % at 1.0 x: only its missing capacity above 1.0 x failed there, not the band.)
SIM_ENGINE = ("Qwen2.5-14B", "A100-SXM4-80GB", 64, 800, 250)
#: the formula over the mean of two seeded simulations (the tokens of the requests completing in the middle of a
#: 1,500-request run at 1.5 x overload, 0.3-0.9 of its arrivals; one seed spreads +-2.5 %)
SIM_BAND = (0.95, 1.05)


def _simulated(eng, p0, o0, rate, seed, n=1500):
    rng = np.random.default_rng(seed)
    a = np.concatenate([[0.0], np.cumsum(rng.exponential(1 / rate, n - 1))])
    r = fluidq.simulate(eng, {"arrival_s": a, "prompt_tokens": np.full(n, p0), "output_tokens": np.full(n, o0)},
                        "vllm-chunked", n_requests=n)
    fin = np.asarray(r.requests["finish_s"])
    t0, t1 = 0.3 * a[-1], 0.9 * a[-1]
    return float(np.sum((fin > t0) & (fin <= t1)) * (p0 + o0) / (t1 - t0))  # completions over the middle


def _ratio(m, g, k, p0, o0, factor):
    kv = int(factor * k * (p0 + o0 / 2))
    eng = roofline_engine(m, g, 1, k_max=k, kv_capacity_tokens=kv)
    pred = kv_capacity(eng, Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=p0, output_tokens=o0))
    assert pred is not None and pred.binding == "kv_cache"  # the cache still preempts in the formula
    served = np.mean([_simulated(eng, p0, o0, 1.5 * pred.requests_per_s, seed) for seed in (1, 2)])
    return pred.tokens_per_s / served, pred.tokens_per_s, served


@pytest.mark.parametrize("factor", [0.95, 1.0, 1.05, 1.1])
def test_kv_rules_capacity_tracks_simulation_through_the_switch(factor):
    ratio, pred, served = _ratio(*SIM_ENGINE, factor)
    assert SIM_BAND[0] <= ratio <= SIM_BAND[1], (factor, pred, served, ratio)


@pytest.mark.xfail(strict=True, reason=(
    "measured 2026-12-07 (h-kvjump; rerun h-fixe): Llama-3.2-1B on an L4, max_num_seqs 24, fixed 300 + 150 tokens, "
    "cache 9,000 tokens (1.0 x k_max (p + o/2)): formula 4,943 tokens/s against 4,530 simulated (the 2 seeds of "
    "_ratio), +9.1 % (main 222e481's formula 4,864, +7.4 %); the formula is +6.1 % already at 0.8 x, deep in the "
    "KV-bound regime (a cache of 19-24 requests: "
    "the small-cache miss of validation/RESULTS.md), and the simulated preemptions stop at 1.1 x, before the cohort "
    "ramp's 1.33 x (fixed lengths on token memory: the residents' phases spread more than one cohort's)"))
def test_small_cache_through_the_switch():
    ratio, pred, served = _ratio("Llama-3.2-1B", "L4", 24, 300, 150, 1.0)
    assert SIM_BAND[0] <= ratio <= SIM_BAND[1], (pred, served, ratio)
