"""The measured side of ``fluidq validate``: the numbers read from a run (:class:`fluidq.validate.runs.ServingRun`)
that a prediction is scored against -- capacity per regime and the binding limit, the saturated throughput,
the queue growth, the arrival test, the latency metrics.  Measured inputs only: the run's own columns, its
requests and the KV cache as the run recorded it; nothing here imports the prediction
(:mod:`fluidq.validate.predict`, ``deployment``, ``replay``) or a case file's expected answer
(:mod:`fluidq.validate.cases`), and an import-linter contract (pyproject.toml, ``measured-side``) holds it.
The intervals are in :mod:`fluidq.validate.measured_intervals`.

Measured quantities
-------------------
TTFT = ``first_token_ts - queued_ts``; latency = ``last_token_ts - queued_ts``; TPOT =
``(last_token_ts - first_token_ts)/(output_toks - 1)`` -- the definitions under which the peer
simulator's summary (``peer_sim_vs_vllm_summary.txt``) is reproduced from these files.
The *served throughput* of an overloaded run is read over its saturated interval (ticks with
``waiting > 0``), not as tokens over the makespan (ramp-up and drain would understate it).

Capacity per regime (:func:`capacity_regimes`): a tick is *saturated* when it lies in a stretch of consecutive ticks
with ``waiting > 0`` spanning at least 3 s with the engine at ``max_num_seqs`` or a full cache, or 10 s whatever it
shows (:func:`saturated_ticks`: a queue held over many samples was held back by a limit, one seen once was a burst
admitted at the next iterations); a run with no such stretch never
saturated and has no capacity nor binding limit to score.  The *start-up ramp* is the ticks with requests waiting
before the engine's
state first reaches its saturated level (``running`` and, where known, the KV use at >= 95 % of their medians over
the saturated ticks; the batches are then prompt-heavy: few residents decode yet); the *steady state* is every
saturated tick after it, and its capacity is the mean over all of them -- no tick is kept or dropped by how busy
it was.  The binding limit is a diagnosis of that same window: ``kv_cache`` when the run preempts there or its KV
use sits at >= 90 % in at least half of its ticks, ``k_max`` when ``running`` sits at ``max_num_seqs`` (times the
data-parallel size: the run's ``running`` counts every replica) in at least half of them, else ``token_budget``.
Each regime's mean tokens/s comes with a 95 % interval from batch means (per-tick throughput is autocorrelated):
blocks of ``ceil(sqrt(n))`` consecutive ticks, or of :func:`batch_means`'s data-chosen size where that is larger,
ending at the window's last tick, with the t quantile of ``nb - 1`` degrees of freedom; none with fewer than 3
blocks (:func:`_window_ci`).  The resident count and the queue growth take :func:`batch_means` alone (a size chosen
from the data, none when fewer than 5 batches would be left).
A run whose KV-use column is absent or stayed 0 has its KV use rebuilt from the requests' own
timestamps (:func:`kv_in_use_tokens`); a regime of fewer than 3 ticks has no capacity (a short run says
"no steady state").
"""
from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from ..errors import DataError
from .measured_intervals import _mean_ci, _window_ci, batch_means

if TYPE_CHECKING:
    from .runs import ServingRun

__all__ = ["saturated_throughput", "steady_poisson_arrivals", "check_kv_column", "measured_regimes",
           "kv_in_use_tokens", "saturated_ticks", "capacity_regimes", "mix_adjusted_capacity", "queue_growth",
           "latency_metrics", "ARRIVALS_ALPHA", "SATURATED_STRETCH_S", "SATURATED_STRETCH_UNSEEN_LIMIT_S"]


def saturated_throughput(run: ServingRun) -> dict:
    """Served tokens per second (prompt + generated) over the ticks with ``waiting > 0``.

    Returns ``tokens_per_s``, ``seconds`` (ticks counted), ``running_max``, ``running_mean``,
    ``kv_pct_mean`` over those ticks, and ``tokens_per_s_ci`` (a 95 % interval from a batch-means
    estimate over blocks of 5 ticks; per-tick throughput is strongly autocorrelated).
    """
    ts = run.timeseries
    m = ts["waiting"] > 0
    if m.sum() < 3:
        return {"tokens_per_s": float("nan"), "seconds": int(m.sum()), "running_max": float("nan"),
                "running_mean": float("nan"), "kv_pct_mean": float("nan"), "tokens_per_s_ci": (float("nan"),) * 2,
                "window_s": (float("nan"),) * 2, "running_mean_ci": (float("nan"),) * 2,
                "note": "fewer than 3 ticks with waiting > 0: the run never saturated"}
    tok = (ts["prompt_throughput"] + ts["gen_throughput"])[m]
    k = 5
    nb = len(tok) // k
    if nb >= 3:
        bm = tok[: nb * k].reshape(nb, k).mean(axis=1)
        half = 1.96 * bm.std(ddof=1) / np.sqrt(nb)
    else:
        half = 1.96 * tok.std(ddof=1) / np.sqrt(len(tok))
    kv = ts.get("kv_cache_pct")
    t = np.asarray(ts["t"], dtype=float)[m]
    return {"tokens_per_s": float(tok.mean()), "seconds": int(m.sum()), "window_s": (float(t[0]), float(t[-1])),
            "running_mean_ci": _mean_ci(np.asarray(ts["running"], dtype=float)[m])[1],
            "running_max": float(ts["running"][m].max()), "running_mean": float(ts["running"][m].mean()),
            "kv_pct_mean": float(kv[m].mean()) if kv is not None else float("nan"),
            "tokens_per_s_ci": (float(tok.mean() - half), float(tok.mean() + half))}


#: the significance at which :func:`steady_poisson_arrivals` says a run's arrivals are not Poisson at a steady rate
ARRIVALS_ALPHA = 1e-3


def steady_poisson_arrivals(arrival_s, *, windows: int = 10, alpha: float = ARRIVALS_ALPHA) -> dict:
    """Whether a run's arrival times look like a Poisson process at one steady rate, by two tests:

    * **steady rate**: the arrivals counted in ``windows`` equal windows of their span; under a homogeneous Poisson
      process the counts are independent Poisson variables of one mean, and the index of dispersion
      ``sum (c - mean)^2 / mean`` follows chi-square with ``windows - 1`` degrees of freedom;
    * **Poisson-like gaps**: the gaps between consecutive arrivals over their mean, against the unit exponential by
      Kolmogorov-Smirnov (the mean estimated from the same gaps makes the test conservative).

    A p-value under ``alpha`` (0.001) in either says no.  A benchmark that ramps its rate (a reviewer's run from 6 to
    180 req/s: counts 32 ... 912 per window) or sends at fixed intervals fails; seeded Poisson runs of 300 arrivals
    fail in about 0.2 % of seeds (tests/validation/test_arrival_test.py), and the three shipped LLMServingSim runs pass
    (p 0.77-0.82 and 0.70-0.79).  Fewer than ``2 x windows`` arrivals are not tested (``steady`` True, ``note``
    says so).  Returns ``steady`` (bool), ``p_rate``, ``p_gaps``, ``counts`` and ``note`` (the reason in words)."""
    from scipy import stats

    a = np.sort(np.asarray(arrival_s, dtype=float))
    out = {"steady": True, "p_rate": float("nan"), "p_gaps": float("nan"), "counts": [], "note": ""}
    if a.size < 2 * windows or not a[-1] > a[0]:
        out["note"] = f"{a.size} arrivals: too few to test the arrival process"
        return out
    c, _ = np.histogram(a, bins=windows, range=(a[0], a[-1]))
    m = float(c.mean())
    p_rate = float(stats.chi2.sf(float(((c - m) ** 2).sum()) / m, windows - 1))
    g = np.diff(a)
    p_gaps = float(stats.kstest(g / g.mean(), "expon").pvalue) if g.mean() > 0 else 0.0
    out.update(p_rate=p_rate, p_gaps=p_gaps, counts=c.tolist())
    bad = []
    if p_rate < alpha:
        bad.append(f"not one steady rate: arrivals per tenth of the span {', '.join(map(str, c))} (dispersion test "
                   f"p = {p_rate:.2g} < {alpha:g})")
    if p_gaps < alpha:
        bad.append(f"gaps not exponential (Kolmogorov-Smirnov p = {p_gaps:.2g} < {alpha:g})")
    out["steady"] = not bad
    out["note"] = "; ".join(bad) if bad else (f"Poisson-like at a steady rate (dispersion p = {p_rate:.2g}, gaps "
                                              f"p = {p_gaps:.2g})")
    return out


def check_kv_column(run: ServingRun) -> None:
    """Refuse a KV-use column that reads as a fraction under a percentage's name: its maximum over the ticks
    with requests waiting lies in [0.9, 1] while ``running`` stayed below ``max_num_seqs``.  Only then can the
    reading mislead -- a fraction near 1 (a full cache, the KV limit binding) read as a percentage says the
    cache is nearly empty and would call a KV-bound run token-budget bound.  A genuinely low percentage (a run
    whose KV use stays under 1 % of a large cache) is read as it is."""
    ts = run.timeseries
    kv = ts.get("kv_cache_pct")
    sat = np.asarray(ts["waiting"], dtype=float) > 0
    if kv is not None and sat.any():
        kv = np.asarray(kv, dtype=float)[sat]
        top = float(np.nanmax(kv)) if np.any(np.isfinite(kv)) else 0.0
        k_total = run.max_num_seqs * run.data_parallel_size
        if 0.9 <= top <= 1.0 and not np.any(np.asarray(ts["running"], dtype=float)[sat] >= k_total):
            raise DataError(f"{run.files.get('timeseries', run.path)}: the KV-use column (kv_cache_pct, a percentage) "
                            f"tops at {top:g} while requests waited and running stayed below max_num_seqs "
                            f"({k_total}): a cache that full as a fraction (1 = full) would be nearly empty as a "
                            "percentage, so the column cannot be read either way; name it kv_cache_usage (read as a "
                            "fraction) or write percentages, or drop the column (KV use is then rebuilt from the "
                            "requests' timestamps)")


def measured_regimes(run: ServingRun) -> dict:
    """The run's measured regimes (:func:`capacity_regimes`) from its own columns and requests, and the KV
    cache only as the run recorded it (never the planner's estimate, which is the prediction's): what
    ``fluidq validate --run`` scores against (a KV-use column that is a fraction is refused first:
    :func:`check_kv_column`)."""
    check_kv_column(run)
    return capacity_regimes(run.timeseries, max_num_seqs=run.max_num_seqs, data_parallel_size=run.data_parallel_size,
                            kv_in_use_tokens=lambda: kv_in_use_tokens(run),  # rebuilt only where a regime reads it
                            kv_capacity_tokens=run.kv_capacity_tokens, tick_s=run.tick_s)


def kv_in_use_tokens(run: ServingRun) -> np.ndarray:
    """Per timeseries tick, the KV tokens the run's requests held at the tick's end, rebuilt from their own
    timestamps (for a run whose ``kv_cache_pct`` column is absent or stayed 0): a request holds its prompt
    from its admission (``scheduled_ts``, else its first token) and its generated tokens as they come
    (spread evenly from the first token to the last) until its last token.  A preempted request is counted
    as holding its blocks throughout (vLLM stamps only the first admission), so the figure is an upper
    bound while requests are preempted.  Measured inputs only: no KV capacity is read."""
    t = np.asarray(run.timeseries["t"], dtype=float)[:, None]
    start = run.scheduled_s if run.scheduled_s is not None else run.first_token_s
    f, last = run.first_token_s, run.last_token_s
    out = np.zeros(t.shape[0])
    for i in range(0, len(f), 2048):  # blocks of requests: ticks x 2048 at most in memory
        sl = slice(i, i + 2048)
        on = (start[None, sl] <= t) & (t < last[None, sl])
        frac = np.clip((t - f[None, sl]) / np.maximum(last[sl] - f[sl], 1e-9)[None, :], 0.0, 1.0)
        out += ((run.input_tokens[None, sl] + run.output_tokens[None, sl] * frac) * on).sum(axis=1)
    return out


#: seconds that requests must keep waiting, tick after tick, for a stretch of the run to count as saturated when
#: the engine sits at ``max_num_seqs`` or a full KV cache in it, and when it does not (the token budget, or a KV
#: use the run does not record)
SATURATED_STRETCH_S = 3.0
SATURATED_STRETCH_UNSEEN_LIMIT_S = 10.0


def saturated_ticks(waiting, at_limit=None, *, tick_s: float = 1.0, min_stretch_s: float = SATURATED_STRETCH_S,
                    unseen_limit_s: float = SATURATED_STRETCH_UNSEEN_LIMIT_S) -> np.ndarray:
    """Which ticks hold the engine saturated: those of a *stretch* of consecutive ticks with ``waiting > 0`` that

    * spans at least ``min_stretch_s`` seconds with the engine at a limit it records (``at_limit``: per tick,
      ``running`` at ``max_num_seqs``, a full KV cache or a preemption) in at least half of its ticks, or
    * spans at least ``unseen_limit_s`` seconds whatever ``running`` and the KV use show (the token budget binds
      with neither at its limit, and a run may record no KV use).

    The reason: vLLM admits a waiting request at its next iteration (tens of milliseconds) unless a limit holds it
    back, so a queue seen at one tick's sample and gone at the next was a burst of arrivals admitted in turn,
    and the tick's throughput is the load offered, not a capacity.  A run under its capacity has such bursts: a
    reviewer's run at 20 req/s had 11 ticks of 79 with a queue, never 3 in a row, ``running`` at most 17 of
    ``max_num_seqs`` 64 (its "capacity" read 272 % off the prediction).  On seeded runs of fluidq's vLLM engine
    model (Llama-3.1-8B profiles, ``max_num_seqs`` 64, token budget 2048, 1,500 requests,
    tests/validation/test_saturated_stretch.py) the longest queue at 12-14 req/s (about 0.6-0.7 of its
    capacity) held 3-6 s with ``running`` at most 48; a limit-free queue of 10 s did not occur below 16 req/s,
    and the saturated runs hold one long stretch (the shipped LLMServingSim runs: 14 to 160 ticks, at
    ``max_num_seqs`` or a full cache).  ``min_stretch_s = unseen_limit_s = 0`` takes every tick with a queue (the
    rule before 2026-12-07, which :func:`fluidq.validate.predict.simulate_capacity` keeps for its simulated logs)."""
    w = np.asarray(waiting, dtype=float) > 0
    lim = np.zeros(w.shape, dtype=bool) if at_limit is None else np.asarray(at_limit, dtype=bool)
    tick_s = float(tick_s)
    need = max(1, int(math.ceil(float(min_stretch_s) / tick_s - 1e-9)))  # 0 s: every tick with a queue
    need_unseen = max(need, int(math.ceil(float(unseen_limit_s) / tick_s - 1e-9)))
    out = np.zeros(w.shape, dtype=bool)
    d = np.diff(np.concatenate([[0], w.astype(np.int8), [0]]))  # the stretches: where the runs of True start, end
    for a, b in zip(np.flatnonzero(d == 1), np.flatnonzero(d == -1)):
        if b - a >= need_unseen or (b - a >= need and 2 * int(lim[a:b].sum()) >= b - a):
            out[a:b] = True
    return out


def capacity_regimes(timeseries: dict, *, max_num_seqs: int, data_parallel_size: int = 1,
                     kv_full_pct: float = 90.0, plateau: float = 0.95, full_share: float = 0.5,
                     kv_in_use_tokens=None, kv_capacity_tokens: int | None = None, tick_s: float = 1.0,
                     min_ticks: int = 3, min_stretch_s: float = SATURATED_STRETCH_S,
                     unseen_limit_s: float = SATURATED_STRETCH_UNSEEN_LIMIT_S) -> dict:
    """Served tokens/s of an overloaded run in its steady state and its start-up ramp, and the limit that binds.

    Saturated ticks are those of a stretch of consecutive ticks with requests waiting that spans at least
    ``min_stretch_s`` seconds at a limit the run records, or ``unseen_limit_s`` seconds (:func:`saturated_ticks`,
    which says why); a run with none never saturated
    (``binding`` "none (the run never saturated)", no steady capacity, ``note`` saying how many ticks had a
    queue and why they do not count).
    The steady state is **every** saturated tick after the ramp, and its capacity is the mean served
    tokens/s over all of them: under saturation the queue never empties, so each such tick is the engine serving
    at its limit, whatever the tick's batch happened to hold.  No tick is kept or dropped by how busy it was
    (keeping only the ticks at ``max_num_seqs`` or at a full cache selects on the outcome: on runs of fluidq's own
    engine where the KV cache binds near ``max_num_seqs``, the ticks at >= 95 % of ``max_num_seqs`` served 24 %
    more than the long-run capacity).

    * **Ramp**: the saturated ticks before the first one where the engine's state has reached its saturated
      level -- ``running`` at >= ``plateau`` x its median over the saturated ticks and, where the KV use is
      known, the KV use at >= ``plateau`` x its median there too (a KV-bound engine admits its residents first
      and fills its cache as they decode).  Only the start is read from these levels; after it no tick is
      dropped but those with nobody waiting.
    * **Binding limit**, diagnosed on the steady ticks (it selects none of them), in this order:
      ``kv_cache`` if the run's ``preempted`` column counts preemptions there (vLLM preempts only when a block
      cannot be allocated), or if the KV use is at the cache's full level (>= ``kv_full_pct``) in at least
      ``full_share`` of them; else ``k_max`` if ``running`` is at ``max_num_seqs`` x DP (>= ``plateau`` of it, or one request
      less: a tick samples ``running`` once and completions are replaced with a lag) in at least ``full_share``
      of them; else ``token_budget`` when the KV use is known (neither the cache nor the residents bind), and
      otherwise "not resolved" (below).
    * **Interval**: batch means over blocks of ``ceil(sqrt(n))`` consecutive ticks, or of the data-chosen size of
      :func:`batch_means` where larger (:func:`_window_ci`): the ticks are autocorrelated (a tick's batch is
      mostly the previous tick's residents), so a per-tick t interval is far too narrow.  It is the interval of *this run's* steady mean;
      a short benchmark's steady window is the cohort admitted at the end of the ramp, and what that leaves
      out of the long-run capacity is measured in tests/validation/test_capacity_coverage.py.

    Parameters
    ----------
    timeseries : dict of array
        ``t, prompt_throughput, gen_throughput, running, waiting`` and optionally ``kv_cache_pct`` and
        ``preempted`` (a :class:`ServingRun`'s ``timeseries``).
    max_num_seqs, data_parallel_size : int
        The engine's ``max_num_seqs`` per replica and the number of replicas ``running`` counts.
    kv_full_pct, plateau, full_share : float
        The KV use (%) that counts as a full cache, the share of ``max_num_seqs`` (and of the saturated medians,
        for the end of the ramp) that counts as reached, and the share of the steady ticks a limit must hold in
        to be named.
    kv_in_use_tokens : array or callable, optional
        Per tick, the KV tokens the requests held (:func:`kv_in_use_tokens`), or a function of no argument
        that returns them, called only when they are read: when the ``kv_cache_pct`` column is absent or all 0
        (a stat logger that never filled it).  Over ``kv_capacity_tokens`` (one replica's KV cache *as the run
        recorded it*) it stands in for the KV use; with no recorded capacity only its level marks the end of the
        ramp and the binding limit is reported as not resolved (``"kv_cache or token_budget ..."``) unless the
        run's ``preempted`` column shows preemptions in the steady ticks.
    tick_s : float
        Seconds per tick (``seconds`` below are ticks x ``tick_s``).
    min_ticks : int
        A regime of fewer ticks has no capacity: its ``tokens_per_s`` is NaN and ``note`` says why.
    min_stretch_s, unseen_limit_s : float
        The shortest stretch of ticks with requests waiting, in seconds, that counts as saturated with the engine
        at ``max_num_seqs``, a full cache or preempting in half of its ticks, and without (:func:`saturated_ticks`).

    Returns
    -------
    dict
        ``binding`` (measured), ``binding_source`` (what said so, with the shares read), ``steady`` and
        ``ramp``: each ``tokens_per_s``, ``ci`` (95 %), ``ticks``, ``seconds``, ``window_s`` (first, last tick
        stamp), ``note`` (empty, or why there is no number), ``index`` (the regime's tick positions in
        ``timeseries``, for :func:`mix_adjusted_capacity`; ``()`` when the regime has no capacity);
        ``saturated_seconds``; ``shares`` (the steady ticks' shares at a full cache, at ``max_num_seqs``, and their
        preemptions; NaN where not recorded).
    """
    ts = timeseries
    t = np.asarray(ts["t"], dtype=float)
    tok = np.asarray(ts["prompt_throughput"], dtype=float) + np.asarray(ts["gen_throughput"], dtype=float)
    run_ = np.asarray(ts["running"], dtype=float)
    queued = np.asarray(ts["waiting"], dtype=float) > 0
    kv = ts.get("kv_cache_pct")
    kv = np.asarray(kv, dtype=float) if kv is not None else np.full(t.shape, np.nan)
    pre = ts.get("preempted")
    pre = np.asarray(pre, dtype=float) if pre is not None else None
    k_total = int(max_num_seqs) * int(data_parallel_size)
    tick_s = float(tick_s)
    # a tick samples ``running`` once, often between a completion and its replacement: "at max_num_seqs" is within
    # 1 - plateau of it, or one request
    at_k = min(plateau * k_total, k_total - 1.0)
    at_limit = (run_ >= at_k) | (np.nan_to_num(kv) >= kv_full_pct)
    if pre is not None:
        at_limit |= np.nan_to_num(pre) > 0
    sat = saturated_ticks(ts["waiting"], at_limit, tick_s=tick_s, min_stretch_s=min_stretch_s,
                          unseen_limit_s=unseen_limit_s)
    nan_regime = {"tokens_per_s": float("nan"), "ci": (float("nan"), float("nan")), "ticks": 0, "seconds": 0,
                  "window_s": (float("nan"), float("nan")), "note": "", "index": ()}
    nan_shares = {"kv_full": float("nan"), "k_max": float("nan"), "preemptions": float("nan")}
    if sat.sum() == 0:
        note = ("the run never saturated: no tick with requests waiting" if not queued.any() else
                f"the run never saturated: {int(queued.sum())} tick(s) with requests waiting, none in a stretch of "
                f">= {min_stretch_s:g} s at max_num_seqs or a full KV cache, nor of >= {unseen_limit_s:g} s: "
                "queues of bursts admitted within seconds, not held by a limit (the engine below its capacity)")
        return {"binding": "none (the run never saturated)", "binding_source": note,
                "steady": {**nan_regime, "note": note}, "ramp": dict(nan_regime), "saturated_seconds": 0,
                "shares": nan_shares}
    kv_recorded = bool(np.any(np.isfinite(kv[sat])) and np.nanmax(kv[sat]) > 0)
    source = "the kv_cache_pct column"
    level = kv if kv_recorded else None  # the KV use whose level marks the end of the ramp
    if not kv_recorded and kv_in_use_tokens is not None:
        use = np.asarray(kv_in_use_tokens() if callable(kv_in_use_tokens) else kv_in_use_tokens, dtype=float)
        level = use
        if kv_capacity_tokens:
            kv = 100.0 * use / (float(kv_capacity_tokens) * int(data_parallel_size))
            kv_recorded = True
            source = ("the KV use rebuilt from the requests' timestamps over the recorded KV cache (the run's "
                      "kv_cache_pct " + ("stayed 0)" if "kv_cache_pct" in ts else "is not recorded)"))
    idx = np.arange(t.size)
    reached = sat & (run_ >= plateau * float(np.median(run_[sat])))
    if level is not None:
        reached &= level >= plateau * float(np.median(level[sat]))
    start = int(np.flatnonzero(reached)[0]) if reached.any() else t.size
    steady = sat & (idx >= start)
    # the ramp: every tick with requests waiting before the steady state begins (a queue that builds up to the
    # saturated stretch), as before the stretch rule; it has no capacity row to score
    ramp = queued & (idx < start)
    n_st = int(steady.sum())
    # the binding limit: a diagnosis of the steady ticks, which it selects none of
    k_share = float(np.mean(run_[steady] >= at_k)) if n_st else float("nan")
    kv_share = float(np.mean(kv[steady] >= kv_full_pct)) if n_st and kv_recorded else float("nan")
    n_pre = float(np.nansum(pre[steady])) if n_st and pre is not None else float("nan")
    shares = {"kv_full": kv_share, "k_max": k_share, "preemptions": n_pre}
    kv_words = (f"{100 * kv_share:.0f} % of the steady ticks at a KV use >= {kv_full_pct:g} % ({source})"
                if np.isfinite(kv_share) else "KV use against the cache unknown (no KV-use column and no recorded KV "
                "cache)")
    said = (f"{kv_words}, {100 * k_share:.0f} % with running >= {at_k:g} (max_num_seqs x DP = "
            f"{k_total}), " + ("preemptions not recorded" if pre is None else f"{n_pre:g} preemptions")
            + f" (a limit is named where it holds in >= {100 * full_share:g} % of them)") if n_st else ""
    if not n_st:
        binding, why = "unknown (no steady state)", "no tick after the ramp with requests waiting"
    elif n_pre > 0:
        binding, why = "kv_cache", "preemptions while requests waited (the preempted column)"
    elif kv_share >= full_share:
        binding, why = "kv_cache", "the KV use at the cache's full level"
    elif k_share >= full_share:
        binding, why = "k_max", "running at max_num_seqs with no preemption recorded" if pre is not None \
            else "running at max_num_seqs"
    elif kv_recorded or n_pre == 0:
        binding, why = "token_budget", "neither the KV cache nor max_num_seqs holds"
    elif level is not None:
        binding = "kv_cache or token_budget (the run records neither its KV use nor its KV cache)"
        why = "running below max_num_seqs; the KV use rebuilt from the requests' timestamps has no cache to fill"
    else:
        binding, why = "unknown (the run records no KV use)", "running below max_num_seqs"
    source = f"{why}: {said}" if said else why

    def regime(mask, what):
        n = int(mask.sum())
        if not mask.any():
            return {**nan_regime, "note": f"no {what}"}
        win = (float(t[mask][0]), float(t[mask][-1]))
        if n < min_ticks:
            return {**nan_regime, "ticks": n, "seconds": n * tick_s, "window_s": win,
                    "note": f"{n} tick(s) of {tick_s:g} s ({win[0]:g}-{win[1]:g} s): fewer than {min_ticks}, "
                            "too few for a capacity"}
        m, ci = _window_ci(tok[mask])
        return {"tokens_per_s": m, "ci": ci, "ticks": n, "seconds": n * tick_s, "window_s": win, "note": "",
                "index": tuple(int(i) for i in np.flatnonzero(mask))}

    st = regime(steady, "tick with requests waiting after the ramp")
    if not np.isfinite(st["tokens_per_s"]):
        st["note"] = ("no steady state: " + st["note"] + f"; {int(sat.sum())} tick(s) with requests waiting in all")
    return {"binding": binding, "binding_source": source, "steady": st,
            "ramp": regime(ramp, "tick with requests waiting before it"),
            "saturated_seconds": int((sat | ramp).sum()) * tick_s,
            "shares": shares}


def mix_adjusted_capacity(timeseries: dict, index, *, mean_prompt_tokens: float, mean_output_tokens: float,
                          resamples: int = 2000, seed: int = 0, block: int = 3) -> dict:
    """The steady window's served tokens/s moved to the workload's stationary mix of prompt and generated tokens.

    A finite benchmark's only steady window follows its ramp: the running requests are then a young cohort,
    admitted together, which finishes (and so lets new prompts in) more slowly than a stationary population
    of the same size, so the window serves fewer prompt tokens per generated token than the workload brings
    (``m_p / m_d``).  Under a fixed limit every tick of the window costs ``1 s = a P + b G`` (``P`` prompt,
    ``G`` generated tokens served in the tick: ``b`` is the decode iteration over its residents per token, ``a``
    what a prompt token adds -- the flow balance of :func:`fluidq.validate.predict.predict_capacity`); ``a`` and
    ``b`` are read by least squares from the window's ticks (``index``, a regime's ``index``) and the capacity
    at the stationary mix is ``(m_p + m_d) / (a m_p + b m_d)``.  Measured inputs only: the run's ticks and its
    requests' mean lengths; nothing predicted is read.  The interval is a seeded bootstrap over blocks of
    ``block`` consecutive ticks (the ticks are autocorrelated).  It assumes the per-token costs do not depend
    on the mix, which holds when ``max_num_seqs`` fixes the residents (``k_max`` binding); under a KV limit the
    residents themselves depend on the contexts, and the number is then an approximation.

    Returns ``tokens_per_s`` (NaN when the window cannot separate the two costs: fewer than 4 ticks, no tick
    with prompt tokens, or a cost that is not positive), ``ci``, ``prompt_us_per_token`` (``a``),
    ``generated_us_per_token`` (``b``), ``window_prompt_share`` (``P / G`` over the window), ``workload_prompt_share``
    (``m_p / m_d``) and ``note``."""
    idx = np.asarray(index, dtype=int)
    P = np.asarray(timeseries["prompt_throughput"], dtype=float)[idx]
    G = np.asarray(timeseries["gen_throughput"], dtype=float)[idx]
    mp, md = float(mean_prompt_tokens), float(mean_output_tokens)
    out = {"tokens_per_s": float("nan"), "ci": (float("nan"), float("nan")), "prompt_us_per_token": float("nan"),
           "generated_us_per_token": float("nan"), "window_prompt_share": float("nan"),
           "workload_prompt_share": mp / md if md > 0 else float("nan"), "ticks": int(idx.size), "note": ""}

    def fit(p, g):
        if p.size < 4 or not np.any(p > 0) or not np.any(g > 0):
            return None
        (a, b), *_ = np.linalg.lstsq(np.c_[p, g], np.ones(p.size), rcond=None)
        return (a, b) if a > 0 and b > 0 else None

    ab = fit(P, G)
    if ab is None:
        out["note"] = ("the window cannot separate a prompt token's cost from a generated token's (fewer than 4 "
                       "ticks, no prompt tokens, or a cost fitted <= 0)")
        return out
    a, b = ab
    cap = (mp + md) / (a * mp + b * md)
    rng = np.random.default_rng(seed)
    nb = int(math.ceil(idx.size / block))
    starts = np.arange(0, max(1, idx.size - block + 1))
    caps = []
    for _ in range(int(resamples)):
        sel = np.concatenate([np.arange(s0, s0 + block) for s0 in rng.choice(starts, nb)])[: idx.size]
        r = fit(P[sel], G[sel])
        if r is not None:
            caps.append((mp + md) / (r[0] * mp + r[1] * md))
    ci = (float(np.percentile(caps, 2.5)), float(np.percentile(caps, 97.5))) if len(caps) > 0.9 * resamples \
        else (float("nan"), float("nan"))
    out.update(tokens_per_s=float(cap), ci=ci, prompt_us_per_token=float(a * 1e6), generated_us_per_token=float(b * 1e6),
               window_prompt_share=float(P.sum() / G.sum()) if G.sum() > 0 else float("nan"))
    if not np.isfinite(ci[0]):
        out["note"] = "no interval: more than 10 % of the bootstrap resamples could not separate the two costs"
    return out


def queue_growth(run: ServingRun) -> dict:
    """How fast the run's backlog grows while requests still arrive.

    The window: the ticks from the first with ``waiting > 0`` to the last arrival (one tick past it), and it
    opens one tick (``run.tick_s``) before its first stamp, where the backlog was last seen empty.
    ``waiting_per_s``: the mean per-tick increment of ``waiting`` over the window's ticks, per second.
    ``backlog_tokens_per_s``: the same of the token backlog (tokens offered so far minus tokens served so far);
    the fluid model says it equals ``offered - capacity`` (Theorem 2 of arXiv:2504.07347).  A backlog is a
    random walk with drift, so the growth is read from its increments (nearly uncorrelated), not as a fitted
    line through its levels (whose residuals are the walk itself); the 95 % intervals are batch means of the
    increments with a data-chosen batch size (:func:`batch_means`).  ``offered_tokens_per_s``: tokens of the
    requests that arrived in the window per second.
    """
    ts = run.timeseries
    t = np.asarray(ts["t"], dtype=float)
    dt_tick = run.tick_s
    # each row's throughputs are rates over the interval since the row before (the first: one tick), so the
    # tokens served so far sum rate x interval -- the same as x tick_s on a regular grid, and right where a
    # tick is missing or late
    span = np.diff(t, prepend=t[0] - dt_tick) if len(t) else t
    served_cum = np.cumsum((ts["prompt_throughput"] + ts["gen_throughput"]) * span)
    tot = run.input_tokens + run.output_tokens
    last_arrival = float(run.arrival_s[-1])
    on = np.flatnonzero(ts["waiting"] > 0)
    nan2 = (float("nan"), float("nan"))
    if on.size == 0:
        return {"waiting_per_s": 0.0, "backlog_tokens_per_s": float("nan"), "offered_tokens_per_s": float("nan"),
                "window_s": nan2, "ticks": 0, "waiting_per_s_ci": nan2, "backlog_tokens_per_s_ci": nan2,
                "note": "no tick with requests waiting"}
    t_start = float(t[on[0]]) - dt_tick
    sel = (t >= t_start) & (t <= last_arrival + dt_tick)
    if sel.sum() < 3:
        sel = np.zeros_like(t, dtype=bool)
        sel[on[0]: on[0] + 3] = True
    tt = t[sel]
    offered_cum = np.array([tot[run.arrival_s <= x].sum() for x in tt], dtype=float)
    backlog = offered_cum - served_cum[sel]
    wt = np.asarray(ts["waiting"][sel], dtype=float)
    dt = np.diff(tt)
    win = (float(tt[0] - dt_tick), float(tt[-1]))
    arrived = (run.arrival_s > win[0]) & (run.arrival_s <= win[1])
    offered = float(tot[arrived].sum() / (win[1] - win[0]))
    out = {"window_s": win, "ticks": int(tt.size), "offered_tokens_per_s": offered, "note": ""}
    for key, y in (("waiting_per_s", wt), ("backlog_tokens_per_s", backlog)):
        if dt.size == 0:
            out[key], out[key + "_ci"] = float("nan"), nan2
            continue
        bm = batch_means(np.diff(y) / dt)
        out[key], out[key + "_ci"] = bm["mean"], bm["ci"]
        if bm["note"]:
            out["note"] += f"{key}: {bm['note']}; "
    return out



def latency_metrics(ttft_s, latency_s, tpot_s) -> dict:
    """Mean, median, P90, P95, P99 of TTFT, TPOT and latency in milliseconds (peer summary's keys); NaN values
    (the TPOT of a one-token output, :attr:`ServingRun.tpot_s`) are left out, and a metric with no value is 0, as
    vLLM's ``benchmark_serving`` reports it."""
    out = {}
    for name, arr in (("TTFT", ttft_s), ("TPOT", tpot_s), ("Latency", latency_s)):
        a = np.asarray(arr, dtype=float) * 1e3
        a = a[np.isfinite(a)]  # TPOT of one-token outputs: left out, as vLLM's benchmark does
        if a.size == 0:  # no request with a TPOT: vLLM's benchmark reports 0
            a = np.zeros(1)
        out[f"{name} Mean"] = float(a.mean())
        for lab, q in (("Median", 50), ("P90", 90), ("P95", 95), ("P99", 99)):
            out[f"{name} {lab}"] = float(np.percentile(a, q))
    return out
