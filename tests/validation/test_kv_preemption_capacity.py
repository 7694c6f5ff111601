"""The flow-balance capacity (``predict_capacity``) where the KV cache binds, against seeded stationary simulations
of engines that are not the shipped runs: ``fluidq.simulate`` of vLLM's engine (``vllm_engine``: paged blocks,
whole-prompt admission check, recompute preemption of the most recently admitted request) under a Poisson overload,
the served useful tokens per second over the middle half of each replication's iterations, 5 seeded replications
of 2000 requests, 95 % Student-t interval.  Random KV sizes (6-40 residents of mean context), budgets,
``max_num_seqs`` and lognormal prompt/output lengths, on the RTX 4090 Llama-3.1-8B iteration model.  The arrival
rate (2 x a decode-only bound) does not read the formula, so the simulated side is the same before and after.

Measured 2026-12-06 (validation/RESULTS.md): before the preemption and slack terms the formula sat above every one
of the 14 KV-bound engines, +4.4 to +13.9 % (mean +9.1 %); after, -1.2 to +4.3 % (mean +1.6 %, mean |error| 1.95 %);
in whole blocks (h-fix16) -1.2 to +4.1 % (mean +1.6 %, mean |error| 1.93 %).  Six further engines with prompts far
shorter than the outputs (mean prompt 5-67 tokens, outputs 514-2237, p/m_d 0.003-0.06; seeded 77 and 770+, apart
from the scored 14): -12.0 to +2.5 % before the block count and the recompute cap, -9.9 to +3.6 % after (two xfail).
With the victims re-admitted with the finish that frees their room (h-short16, 2026-12-06: the recompute prefills
arrive in the iteration after a finish, not as separate Poisson arrivals, and a victim recomputes whole blocks):
the 14 at -0.4 to +3.2 % (mean +0.96 %, mean |error| 1.08 %), the six short-prompt engines +0.1 to +6.1 %, all
inside their intervals.  With vLLM's rule that an iteration that preempted admits no waiting request (h-noadmit,
2026-12-06; the formula untouched, the simulated side moved): the 14 at -0.45 to +3.20 % (mean +0.85 %, mean |error|
0.99 %; simulated tokens/s -0.46 to +0.06 %, preemptions per request up to 2.46 -> 2.73 on engine 3), the six
short-prompt engines -0.02 to +5.9 % (each 0.1-0.4 points lower), all inside their intervals.  With vLLM's token from
each recomputation that catches up (2fc8e60, 2026-12-07; the formula untouched, measured h-kvtoken16, same seeds): the
simulated tokens/s moved -0.10 to +0.52 % (mean +0.22 %), the 14 at -0.71 to +2.34 % (mean +0.63 %, mean |error|
0.80 %), the six short-prompt engines -0.22 to +5.85 % (mean |error| 2.20 %).  Counting that token in the formula
(``m_d - 1 - r`` decode iterations, ``r`` fewer block-iterations at the victims' context; predict._kv_victims) gave
the 14 +0.72 % / 0.86 % and the six 2.75 %, and the edges' improvement came from a preemption count 6-10 x the
simulated one: it is left out (validation/RESULTS.md, 2026-12-07)."""
import numpy as np
import pytest
from scipy import stats

import fluidq.validate.predict as P
from fluidq.sim.core import simulate
from fluidq.validate import validation_dir
from fluidq.validate.deployment import deployment_engine
from fluidq.validate.replay import vllm_engine

FOLDER = validation_dir() / "data" / "llmservingsim" / "RTX4090_Llama-3.1-8B"


def _engines(n, seed=16, residents=(6, 40), prompt=(80, 1500), output=(40, 700), k_choices=(32, 64, 128, 256)):
    """``n`` random vLLM engines ``(prompts, outputs, b_max, k_max, kv)``: log-normal lengths around means drawn
    from ``prompt`` / ``output``, a cache of ``residents`` mean contexts."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        mp, md = float(rng.uniform(*prompt)), float(rng.uniform(*output))
        p = np.maximum(1, rng.lognormal(np.log(mp), 0.6, 200)).astype(int)
        o = np.maximum(2, rng.lognormal(np.log(md), 0.6, 200)).astype(int)
        kv = int(rng.uniform(*residents) * (mp + md / 2))
        b, k = int(rng.choice([512, 1024, 2048, 4096])), int(rng.choice(list(k_choices)))
        out.append((p, o, b, k, kv))
    return out


KV_ENGINES = _engines(14)


def _short_prompt_engines(n, seed=77):
    """KV-bound engines whose prompts are far shorter than their outputs (p << m_d)."""
    return _engines(n, seed, residents=(20, 120), prompt=(1, 60), output=(200, 2000), k_choices=(128, 256, 512))


SHORT_PROMPT_ENGINES = _short_prompt_engines(6)
# measured 2026-12-06 (h-fix16): engines 2 and 3 were xfails at -9.9 % (28-token prompts, 2237-token outputs; -12.0 %
# before) and -8.1 % (7 / 1871; -10.5 % before); with the victims' recompute arriving with the finishes (h-short16)
# +2.1 % and +4.4 %
OTHER_ENGINES = _engines(4, seed=61, residents=(400, 800))  # caches far above max_num_seqs' residents


@pytest.fixture(scope="module")
def model():
    if not FOLDER.is_dir():
        pytest.skip(f"{FOLDER} is not shipped here")
    return deployment_engine(FOLDER, kv_capacity_tokens=40000)[0].batch_time.model


def stationary_run(model, p, o, b, k, kv, seed, *, block=16, reps=5, n=2000, n0_floor=False):
    """Mean and 95 % half-width of the served useful tokens/s over the middle half of each of ``reps`` seeded
    replications of ``n`` requests (arrivals at twice a rate above any capacity), and the preemptions per
    finished request.  ``n0_floor`` keeps the rate's resident count at >= 1 (engines whose cache holds less
    than one mean context; test_kv_capacity_edges.py)."""
    kv_bar = float((o * (p + o / 2.0)).sum() / o.sum())
    n0 = min(kv / kv_bar, float(k))
    if n0_floor:
        n0 = max(1.0, n0)
    rate = 2.0 * n0 / (max(o.mean() - 1.0, 1.0) * float(model.decode_only(n0, kv_bar)))  # above any capacity
    eng = vllm_engine(model, b_max=b, k_max=k, kv_capacity_tokens=kv, block_size=block)
    out, pre = [], []
    for g in np.random.SeedSequence(seed).spawn(reps):
        rng = np.random.default_rng(g)
        arr = np.cumsum(rng.exponential(1.0 / rate, n))
        idx = rng.integers(0, p.size, n)
        sim = simulate(eng, {"arrival_s": arr - arr[0], "prompt_tokens": p[idx], "output_tokens": o[idx]},
                       "vllm-chunked", n_requests=n, record_iterations=True)
        it = sim.iterations
        mid = slice(len(it["t_s"]) // 4, 3 * len(it["t_s"]) // 4)
        out.append(float(np.asarray(it["useful_tokens"])[mid].sum() / np.asarray(it["batch_s"])[mid].sum()))
        pre.append(sim.preemptions / max(1, int(np.isfinite(sim.requests["finish_s"]).sum())))
    out = np.asarray(out)
    return (float(out.mean()), float(stats.t.ppf(0.975, reps - 1) * out.std(ddof=1) / np.sqrt(reps)),
            float(np.mean(pre)))


def _stationary(model, p, o, b, k, kv, seed, reps=5, n=2000):
    """:func:`stationary_run`'s mean and half-width."""
    return stationary_run(model, p, o, b, k, kv, seed, reps=reps, n=n)[:2]


@pytest.fixture(scope="module")
def scored(model):
    out = []
    for i, (p, o, b, k, kv) in enumerate(KV_ENGINES):
        fluid = P.predict_capacity(model, p, o, b_max=b, k_max=k, kv_capacity_tokens=kv)
        out.append((fluid, *_stationary(model, p, o, b, k, kv, 16 + i)))
    return out


@pytest.mark.parametrize("i", range(len(KV_ENGINES)))
def test_kv_bound_formula_within_the_simulated_interval(scored, i):
    fluid, mean, half = scored[i]
    assert fluid.binding == "kv_cache"
    # measured 2026-12-06: within 3 % of the interval for 13 of 14 (engine 3, 227-token prompts and 771-token
    # outputs, 2.5 preemptions per request: +4.3 % of a +-0.7 % interval, +4.1 % in whole blocks, +3.2 % with the
    # recompute arriving with the finishes, h-short16); before, 10 of 14 were over 1.05 x its top
    assert 0.95 * (mean - half) <= fluid.tokens_per_s <= 1.05 * (mean + half), (i, fluid.tokens_per_s, mean, half,
                                                                                 fluid.reason)


def test_kv_bound_formula_mean_error_under_3_pct(scored):
    err = np.array([100 * (f.tokens_per_s / mean - 1) for f, mean, _ in scored])
    # measured 2026-12-06: mean +9.1 % (every engine above) before; mean +1.6 %, mean |error| 1.95 % after; with the
    # recompute arriving with the finishes (h-short16) mean +0.96 %, mean |error| 1.08 %
    assert np.mean(np.abs(err)) < 3.0, err.round(1)
    assert abs(np.mean(err)) < 2.5, err.round(1)


@pytest.mark.parametrize("i", range(len(SHORT_PROMPT_ENGINES)))
def test_short_prompts_long_outputs_within_the_simulated_interval(model, i):
    p, o, b, k, kv = SHORT_PROMPT_ENGINES[i]
    fluid = P.predict_capacity(model, p, o, b_max=b, k_max=k, kv_capacity_tokens=kv)
    mean, half = _stationary(model, p, o, b, k, kv, 770 + i)
    assert fluid.binding == "kv_cache"
    # measured 2026-12-06 (h-short16): +6.1, +1.8, +2.1, +4.4, +0.1, +0.9 % (half-widths 2.7, 4.8, 0.7, 2.4, 3.5,
    # 2.6 %); before, +3.6, +1.1, -9.9, -8.1, -3.6, +0.5 %
    assert 0.95 * (mean - half) <= fluid.tokens_per_s <= 1.05 * (mean + half), (i, fluid.tokens_per_s, mean, half,
                                                                                 fluid.reason)


@pytest.mark.parametrize("i", range(len(OTHER_ENGINES)))
def test_other_limits_unchanged(model, i):
    """Where the KV cache does not bind the prediction is the one with no cache at all (no term of it is used)."""
    p, o, b, k, kv = OTHER_ENGINES[i]
    pr = P.predict_capacity(model, p, o, b_max=b, k_max=k, kv_capacity_tokens=kv)
    bare = P.predict_capacity(model, p, o, b_max=b, k_max=k, kv_capacity_tokens=None)
    assert pr.binding != "kv_cache" and pr.tokens_per_s == bare.tokens_per_s


def test_the_preemption_rate_follows_the_renewal_argument():
    # fixed prompts p = 800 and g = m_d - 1 = 400 growth tokens between finishes, N = 20 residents (a = g / N = 20):
    # q = g (1 - e^{-p/g}) / p, a further victim with probability e^{-(p + a)/g}
    r, a = P._kv_victims([800.0], 400.0, 20.0)[:2]
    q = 0.5 * (1 - np.exp(-2.0))
    assert a == pytest.approx(20.0) and r == pytest.approx(q / (1 - np.exp(-820.0 / 400.0)), rel=1e-12)


class _Counts:
    """A stand-in iteration model whose "time" is what the test reads off the iteration recursion."""

    def __init__(self, what):
        self.what = what

    def time_shape(self, C, kv_eff, n, kv, n_emit=None):
        C = np.asarray(C, dtype=float)
        return (C > 0).astype(float) if self.what == "busy" else C


#: (finishes an iteration, victims per finish, generated tokens a victim recomputes, share of finishes bringing one)
VICTIM_SETS = [(0.1, 5.0, 30.0, 0.9), (0.4, 1.5, 200.0, 0.6)]


@pytest.mark.parametrize("lam, redo, redo_tokens, first", VICTIM_SETS)
def test_the_victims_come_back_with_a_finish(lam, redo, redo_tokens, first):
    # lam finishes an iteration (Poisson), each bringing its new 50-token prompt and, with probability `first`, one
    # victim and a geometric number more (mean `redo` in all), room far above the prompts: the iterations with
    # prompt work are those after a finish, 1 - exp(-lam), not 1 - exp(-lam (1 + redo)) as when every victim was a
    # Poisson arrival of its own (h-short16: +375 % at the first set); the prompt tokens an iteration are a new
    # prompt and `redo` victims of 50 + redo_tokens tokens per finish; without preemptions the recursion is
    # max_num_seqs' (Poisson finishes, one prompt each).  The recursion is a seeded simulation: each seed's error
    # is noise (measured 2026-12-07 over seeds 0-29, 40,000 iterations: sd 2.2 / 2.5 / 2.2 % at the first set,
    # 0.9 / 1.2 / 0.9 % at the second, single seeds up to -5.9 %; seed 0 alone -1.16 / +1.59 / -1.16 %), so the
    # check is the 95 % Student-t interval of the mean error over 10 seeded replications, which holds 0 at both
    # sets (means +0.6 +- 1.0, +1.1 +- 1.4, +0.6 +- 1.0 % and -0.0 +- 0.6, +0.1 +- 1.0, -0.0 +- 0.6 %)
    expected = {"busy": 1 - np.exp(-lam), "tokens": lam * (50.0 + redo * (50.0 + redo_tokens)),
                "none": 1 - np.exp(-lam)}
    errs = {k: [] for k in expected}
    for seed in range(10):
        kw = dict(iterations=40000, seed=seed)
        victims = dict(redo=redo, redo_tokens=redo_tokens, redo_first=first)
        got = {"busy": P._admitted_iteration_s(_Counts("busy"), [50.0], 10.0, 100.0, lam, 5000.0, **kw, **victims),
               "tokens": P._admitted_iteration_s(_Counts("tokens"), [50.0], 10.0, 100.0, lam, 5000.0, **kw, **victims),
               "none": P._admitted_iteration_s(_Counts("busy"), [50.0], 10.0, 100.0, lam, 5000.0, **kw)}
        for k, v in got.items():
            errs[k].append(100.0 * (v / expected[k] - 1.0))
    for k, e in errs.items():
        e = np.asarray(e)
        half = float(stats.t.ppf(0.975, e.size - 1) * e.std(ddof=1) / np.sqrt(e.size))
        assert half < 2.0, (k, half)  # the interval resolves a 2 % bias (the Poisson victims were +375 %)
        assert abs(e.mean()) <= half, (k, e.mean(), half, e.round(2))


def test_a_victim_recomputes_whole_blocks():
    # prompt 20, output 300, block 16, N = 169: the newest resident carries g / N = 1.8 generated tokens, in 2
    # blocks; the formula charges those 2 blocks with the last at its mean fill ((B - 1) / 2 = 7.5 short):
    # 32 - 7.5 - 20 tokens recomputed, not the 1.8 of the token argument
    r, a = P._kv_victims(np.full(20, 20.0), 299.0, 169.0, block_size=16, outputs=np.full(20, 300.0))[:2]
    assert a == pytest.approx(2 * 16 - 7.5 - 20)
    # block 1 keeps the token argument (a = g / N)
    assert P._kv_victims(np.full(20, 20.0), 299.0, 169.0, block_size=1)[1] == pytest.approx(299.0 / 169.0)
