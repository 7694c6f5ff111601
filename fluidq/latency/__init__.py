"""Latency of orderings: simulate several schedulers on one workload and compare their latencies.

``compare_orderings(engine, workload, policies, loads=...)`` runs every policy on the *same*
sampled requests (common random numbers) at each load, over seeded replications, and returns a
:class:`LatencyComparison`: per policy and load the mean latency per token (the PARS paper's
metric), P90/P99 of the time to last token (TTLT), mean/P99 time to first token (TTFT),
preemptions, throughput and the backlog slope, each as a mean over replications with a Student-t
half-width.

``standard_policies(engine, workload)`` gives the comparison of issue 7: FCFS, PARS (with a
stand-in predictor of a chosen Kendall tau), oracle SJF and SRPT, gamma-Boost on Sarathi, and
UNIBOOST (unified priority + MEMGUARD) with its ablations.  ``reasoning_workload`` is a
heavy-tailed reasoning-like workload.

References
----------
Tao et al., "PARS", arXiv:2510.03243; Li et al., "UNIBOOST", arXiv:2606.18431;
Li, Dai, Peng, arXiv:2504.07347 (Theorem 2: any ordering on a work-conserving former is
throughput-optimal).
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field

import numpy as np

from .._validate import integer, load_rate, real
from ..engine import Engine
from ..errors import ParameterError
from ..workload import Empirical, LogNormal, Poisson, Workload
from ..results import Result

__all__ = [
    "METRICS",
    "POLICY_KEYS",
    "LatencyComparison",
    "burst_comparison",
    "compare_orderings",
    "reasoning_workload",
    "standard_policies",
]

#: metric key -> (label, unit)
METRICS = {
    "latency_per_token_mean_s": ("mean latency per token", "s/token"),
    "latency_per_token_p90_s": ("P90 latency per token", "s/token"),
    "ttlt_mean_s": ("mean TTLT", "s"),
    "ttlt_p90_s": ("P90 TTLT", "s"),
    "ttlt_p99_s": ("P99 TTLT", "s"),
    "ttft_mean_s": ("mean TTFT", "s"),
    "ttft_p99_s": ("P99 TTFT", "s"),
    "preemptions_per_request": ("preemptions per request", ""),
    "max_preemptions": ("most preemptions of one request", ""),
    "finished_fraction": ("finished fraction of arrivals", ""),
    "throughput_tokens_per_s": ("throughput", "tokens/s"),
    "backlog_slope_tokens_per_s": ("token backlog slope", "tokens/s"),
    "latency_per_token_p99_s": ("P99 latency per token", "s/token"),
    "slo_attainment_per_token": ("fraction meeting the per-token SLO", ""),
    "slo_attainment_ttlt": ("fraction meeting the TTLT SLO", ""),
    "slo_per_token_90_s": ("tightest per-token SLO met by 90%", "s/token"),
    "slo_per_token_99_s": ("tightest per-token SLO met by 99%", "s/token"),
    "slo_ttlt_90_s": ("tightest TTLT SLO met by 90%", "s"),
    "slo_ttlt_99_s": ("tightest TTLT SLO met by 99%", "s"),
    # the bounds where requests unfinished at the horizon leave a value undecided (fluidq.latency.slo)
    "slo_attainment_per_token_low": ("fraction meeting the per-token SLO, unfinished undecided as misses", ""),
    "slo_attainment_per_token_high": ("fraction meeting the per-token SLO, unfinished undecided as met", ""),
    "slo_attainment_ttlt_low": ("fraction meeting the TTLT SLO, unfinished undecided as misses", ""),
    "slo_attainment_ttlt_high": ("fraction meeting the TTLT SLO, unfinished undecided as met", ""),
    "slo_per_token_90_low_s": ("least the tightest per-token SLO met by 90% can be", "s/token"),
    "slo_per_token_99_low_s": ("least the tightest per-token SLO met by 99% can be", "s/token"),
    "slo_ttlt_90_low_s": ("least the tightest TTLT SLO met by 90% can be", "s"),
    "slo_ttlt_99_low_s": ("least the tightest TTLT SLO met by 99% can be", "s"),
    "makespan_s": ("time to serve every request", "s"),
}

POLICY_KEYS = ("fcfs", "pars", "sjf", "srpt", "gamma-boost", "uniboost", "uniboost-nomemguard", "uniboost-ada",
               "las", "distboost")


#: the prompt cap of :func:`reasoning_workload` (its outputs are capped at ``max_output``)
REASONING_MAX_PROMPT = 8192


def reasoning_workload(rate_per_s: float = 1.0, *, mean_prompt: float = 300.0, mean_output: float = 600.0,
                       sigma: float = 1.2, max_output: int = 8192, seed: int = 0) -> Workload:
    """A heavy-tailed reasoning-like workload: short prompts, log-normal outputs capped at ``max_output``.

    Lengths are an :class:`~fluidq.Empirical` table of 20,000 draws (prompt log-normal with
    sigma 0.6, capped at :data:`REASONING_MAX_PROMPT` tokens; output log-normal with ``sigma``, capped at
    ``max_output``), so the distribution is fixed by ``seed`` (an integer >= 0).  ``mean_prompt`` and
    ``mean_output`` are the means before the caps, at least one token and at most the cap (a larger
    mean would be a table of the cap alone).
    """
    rate_per_s = real("rate_per_s", rate_per_s, positive=True)
    max_output = integer("max_output", max_output, minimum=1)
    seed = integer("seed", seed, minimum=0)
    for name, mean, cap in (("mean_prompt", mean_prompt, REASONING_MAX_PROMPT), ("mean_output", mean_output, max_output)):
        m = real(name, mean)
        if not 1 <= m <= cap:
            raise ParameterError(name, mean, f"a mean of 1..{cap} tokens",
                                 f"the lengths are capped at {cap} tokens" + (" (max_output)" if name == "mean_output" else ""))
    g = np.random.default_rng(seed)
    p = np.clip(np.round(LogNormal.from_mean(mean_prompt, 0.6).sample(g, 20000)), 1, REASONING_MAX_PROMPT)
    d = np.clip(np.round(LogNormal.from_mean(mean_output, sigma).sample(g, 20000)), 1, max_output)
    return Workload(arrival=Poisson(rate_per_s=rate_per_s), prompt_tokens=Empirical(values=tuple(p)),
                    output_tokens=Empirical(values=tuple(d)),
                    name=f"reasoning-like (log-normal outputs, mean {mean_output:g}, sigma {sigma:g}, cap {max_output})")


def _tau(name: str, tau) -> float:
    """Kendall tau of PARS's stand-in predictor: in (0, 1] (1: a perfect ranking; noise added to a
    perfect predictor lowers tau towards 0 but cannot make it negative)."""
    t = real(name, tau)
    if not 0 < t <= 1:
        raise ParameterError(name, tau, "a Kendall tau in (0, 1] (1 = the oracle's ranking)")
    return t


def standard_policies(engine: Engine, workload: Workload | None = None, *, keys=None, tau: float = 0.6,
                      gamma_per_s: float | None = None, threshold_s: float = 120.0, k_tokens: int = 32,
                      update_every: int = 50, seed: int = 0) -> dict:
    """``{key: policy}`` for the comparison (keys from :data:`POLICY_KEYS`).

    PARS uses :class:`fluidq.predict.NoisyOracle` with noise chosen for Kendall tau ``tau``
    against ``workload``'s output lengths (the traces have no prompt text); gamma defaults to the
    M/G/1 value at 70 % load, ``solve_gamma`` with the service time ``(v_p + v_d) / capacity``,
    clamped to [1, 200] 1/s.  ``k_tokens`` is MEMGUARD's first level and ``update_every`` gamma-Ada's
    cadence (observations between gamma updates): both are fluidq's choices (32 and 50), the
    papers' values could not be read.  ``distboost`` is fluidq's reconstruction of the UNIBOOST
    paper's distribution-aware strawman (:mod:`fluidq.policies.distboost`).
    """
    k_tokens = integer("k_tokens", k_tokens, minimum=1)
    update_every = integer("update_every", update_every, minimum=1)
    from ..capacity import max_throughput
    from ..policies import Sarathi
    from ..policies.latency import LAS, PARS, SJF, SRPT, GammaBoost, solve_gamma
    from ..policies.unified import UniBoost
    from ..predict import NoisyOracle, sigma_for_tau

    tau = _tau("tau", tau)
    seed = integer("seed", seed, minimum=0)  # numpy's default_rng rejects negative seeds with a bare ValueError
    keys = POLICY_KEYS[:6] if keys is None else tuple(keys)
    bad = [k for k in keys if k not in POLICY_KEYS]
    if bad:
        from ..errors import UnknownNameError

        raise UnknownNameError("policy key", bad[0], POLICY_KEYS)
    cap = max_throughput(engine).tokens_per_s
    cost = 1.0 / cap
    if gamma_per_s is None:
        if workload is not None:
            g = np.random.default_rng(seed)
            s = (workload.prompt_tokens.sample(g, 20000) + workload.output_tokens.sample(g, 20000)) * cost
            lam = 0.7 / float(s.mean())
            try:
                gamma_per_s = min(max(solve_gamma(lam, s), 1.0), 200.0)
            except Exception:  # pragma: no cover - heavy tails without a root in range
                gamma_per_s = 10.0
        else:
            gamma_per_s = 10.0
    out = {}
    for k in keys:
        if k == "fcfs":
            out[k] = Sarathi()
        elif k == "pars":
            if workload is None:
                raise ParameterError("workload", None, "a workload (PARS's stand-in predictor is calibrated on it)")
            L = workload.output_tokens.sample(np.random.default_rng(seed), 4000)
            sig = sigma_for_tau(L, tau) if tau < 1 else 0.0
            out[k] = Sarathi(order=PARS(threshold_s=threshold_s, predictor=NoisyOracle(sig, seed=seed)))
        elif k == "sjf":
            out[k] = Sarathi(order=SJF())
        elif k == "srpt":
            out[k] = Sarathi(order=SRPT())
        elif k == "las":
            out[k] = Sarathi(order=LAS())
        elif k == "distboost":
            if workload is None:
                raise ParameterError("workload", None, "a workload (DISTBOOST reads its output-length distribution)")
            from ..policies.distboost import DistBoost

            L = workload.output_tokens.sample(np.random.default_rng(seed), 4000)
            out[k] = Sarathi(order=DistBoost(output_lengths=tuple(np.maximum(L, 1))))
        elif k == "gamma-boost":
            out[k] = Sarathi(order=GammaBoost(gamma_per_s=gamma_per_s, token_cost_s=cost))
        elif k == "uniboost":
            out[k] = UniBoost(gamma_per_s=gamma_per_s, engine=engine, k_tokens=k_tokens)
        elif k == "uniboost-nomemguard":
            out[k] = UniBoost(gamma_per_s=gamma_per_s, engine=engine, memguard=False)
        elif k == "uniboost-ada":
            out[k] = UniBoost(adaptive=True, engine=engine, k_tokens=k_tokens, update_every=update_every)
    return out


def _draw(workload: Workload, rng, horizon_s: float):
    """Requests up to ``horizon_s``; a trace is replayed from a random offset (circularly)."""
    tr = workload.trace
    if tr is None:
        return workload.sample(rng, horizon_s=horizon_s)
    t = workload.arrival.times(None)
    n = len(t)
    o = int(rng.integers(0, n))
    idx = np.r_[np.arange(o, n), np.arange(0, o)]
    tt = np.r_[t[o:] - t[o], t[:o] + (t[-1] - t[o]) + (t[-1] / max(n - 1, 1))]
    keep = tt <= horizon_s
    return tt[keep], np.asarray(tr.prompt_tokens)[idx][keep], np.asarray(tr.output_tokens)[idx][keep]


def _confidence(confidence) -> float:
    """A confidence level in (0, 1), refused naming ``confidence`` (1.5 gave NaN half-widths silently)."""
    from numbers import Real

    if isinstance(confidence, bool) or not isinstance(confidence, Real) or not 0 < confidence < 1:
        raise ParameterError("confidence", confidence, "a level in (0, 1), such as 0.95")
    return float(confidence)


def _tci(x, confidence=0.95):
    from scipy import stats

    x = np.asarray([v for v in x if v == v], float)
    if x.size == 0:
        return math.nan, math.nan
    if x.size == 1:
        return float(x[0]), math.nan
    if np.isinf(x).any():  # e.g. a tightest SLO no run met: the mean is infinite, the interval undefined
        return float(x.mean()), math.nan
    h = stats.t.ppf(0.5 + confidence / 2, x.size - 1) * x.std(ddof=1) / math.sqrt(x.size)
    return float(x.mean()), float(h)


def _run_metrics(res, warmup_s: float, slo_per_token_s: float | None = None,
                 slo_ttlt_s: float | None = None) -> dict:
    from .slo import slo_attainment_bounds, tightest_slo, tightest_slo_lower

    m = res.metrics
    keep = res.requests["arrival_s"] >= warmup_s
    pre = res.requests["preemptions"][keep]
    fin = np.isfinite(res.requests["finish_s"][keep])
    lat = res.latencies()
    lpt, ttlt = lat["latency_per_token_s"][keep], lat["ttlt_s"][keep]
    fs = res.requests["finish_s"]
    # an unfinished request is censored at the end of the run: its latency exceeds what it waited so far
    waited = np.maximum(0.0, res.end_s - res.requests["arrival_s"][keep])
    lb_ttlt = np.where(fin, 0.0, waited)
    lb_lpt = lb_ttlt / np.maximum(1, res.requests["output_tokens"][keep])
    slo = {"latency_per_token_p99_s": m["latency_per_token_s"]["p99"],
           "makespan_s": float(np.nanmax(fs)) if fin.size and fin.all() else math.nan}
    # an unfinished request misses an SLO its wait already exceeds; one that may still meet it is undecided: the
    # attainment is a number only when none is (else NaN, with its bounds), the tightest SLO an upper bound (the
    # unfinished at inf) with the least its waits allow beside it
    for kind, x, lb, target in (("per_token", lpt, lb_lpt, slo_per_token_s), ("ttlt", ttlt, lb_ttlt, slo_ttlt_s)):
        low, high = slo_attainment_bounds(x, target, lb) if target else (math.nan, math.nan)
        slo[f"slo_attainment_{kind}"] = low if low == high else math.nan
        slo[f"slo_attainment_{kind}_low"], slo[f"slo_attainment_{kind}_high"] = low, high
        for q in (90, 99):
            slo[f"slo_{kind}_{q}_s"] = tightest_slo(x, q / 100)
            slo[f"slo_{kind}_{q}_low_s"] = tightest_slo_lower(x, q / 100, lb)
    return {**slo, "latency_per_token_mean_s": m["latency_per_token_s"]["mean"],
            "latency_per_token_p90_s": m["latency_per_token_s"]["p90"],
            "ttlt_mean_s": m["ttlt_s"]["mean"], "ttlt_p90_s": m["ttlt_s"]["p90"], "ttlt_p99_s": m["ttlt_s"]["p99"],
            "ttft_mean_s": m["ttft_s"]["mean"], "ttft_p99_s": m["ttft_s"]["p99"],
            "preemptions_per_request": float(pre.mean()) if pre.size else math.nan,
            "max_preemptions": float(pre.max()) if pre.size else math.nan,
            "finished_fraction": float(fin.mean()) if fin.size else math.nan,
            "throughput_tokens_per_s": res.throughput_tokens_per_s,
            "backlog_slope_tokens_per_s": res.backlog_slope("tokens")}


def _bounds_cell(values: dict, metric: str, i: int) -> str | None:
    """A table cell giving bounds where unfinished requests leave ``metric`` undecided (means over the
    replications of each bound): ``"0.58 to 1"`` for an attainment, ``"0.12 to 0.17"`` or ``">= 0.12"`` (no
    upper bound: fewer than that share finished) for a tightest SLO; ``None`` when the value is decided."""
    from ..results import fmt_value, is_defined

    if metric in ("slo_attainment_per_token", "slo_attainment_ttlt"):
        lo_key, hi_key = metric + "_low", metric + "_high"
    elif metric.startswith("slo_") and metric.endswith(("_90_s", "_99_s")):
        lo_key, hi_key = metric[:-2] + "_low_s", metric
    else:
        return None
    if lo_key not in values or hi_key not in values:  # (a result read back from before the bounds)
        return None
    lo, hi = values[lo_key][i][0], values[hi_key][i][0]
    if not is_defined(lo) or lo == hi:
        return None
    return f"{fmt_value(lo)} to {fmt_value(hi)}" if is_defined(hi) else f">= {fmt_value(lo)}"


@dataclass(frozen=True)
class LatencyComparison(Result):
    """Latency of several policies at several loads (see :func:`compare_orderings`).

    Attributes
    ----------
    policies : tuple of str
    loads : tuple of float
        Offered load as a fraction of the load basis lambda* (:func:`fluidq.dtmc.load_basis.load_basis`;
        ``inputs["load_basis"]`` names it, ``inputs["capacity_requests_per_s"]`` is it).
    rates_per_s : tuple of float
        The matching arrival rates.
    values : dict
        ``values[policy][metric]`` -> list over loads of ``(mean, half_width)``.
    n_replications : int
    inputs : dict
    """

    policies: tuple
    loads: tuple
    rates_per_s: tuple
    values: dict
    n_replications: int
    inputs: dict = field(default_factory=dict)
    seconds: float = 0.0
    samples: dict = field(default_factory=dict, repr=False)

    def ratio_interval(self, metric: str, policy: str, baseline: str = "fcfs", load_index: int = -1,
                       confidence: float = 0.95) -> tuple:
        """``(mean, half_width)`` of the paired per-replication ratio ``baseline / policy`` (> 1: better).

        Replications run every policy on the same requests, so the ratio is taken within each one and
        its mean gets a Student-t interval (NaN without :attr:`samples`, e.g. a result read back).
        """
        confidence = _confidence(confidence)
        if not self.samples:
            return math.nan, math.nan
        a = np.asarray(self.samples[baseline][metric][load_index], float)
        b = np.asarray(self.samples[policy][metric][load_index], float)
        with np.errstate(divide="ignore", invalid="ignore"):
            r = a / b
        return _tci(r[np.isfinite(r)], confidence)

    def value(self, policy: str, metric: str, load_index: int = -1) -> float:
        return self.values[policy][metric][load_index][0]

    def ratio(self, metric: str, policy: str, baseline: str = "fcfs", load_index: int = -1) -> float:
        """``baseline / policy`` for ``metric`` (> 1: ``policy`` is better)."""
        return self.value(baseline, metric, load_index) / self.value(policy, metric, load_index)

    def table(self, load_index: int = -1, metrics=("latency_per_token_mean_s", "ttlt_p90_s", "ttlt_p99_s",
                                                   "ttft_mean_s", "preemptions_per_request", "finished_fraction"),
              heading: bool = True, min_finished: float = 0.9, horizon_name: str = "horizon_s") -> str:
        """A Markdown table at one load (``heading``: a first line naming the load and its rate).

        Latencies are those of the requests that finished within the horizon; when fewer than
        ``min_finished`` of the arrivals did (for some policy), a note under the table says that the
        tails are underestimated (the longest requests are the ones missing).  ``horizon_name`` is what
        the notes call the horizon (the command line passes ``"--horizon"``).  A table with a TTFT
        column says which first token it counts.
        """
        from ..results import fmt_value, is_defined

        i = range(len(self.loads))[load_index]
        title = (f"burst of {self.inputs['burst']:,} requests at t = 0, drained" if self.inputs.get("burst")
                 else f"load {self.loads[i]:g} ({self.rates_per_s[i]:.4g} req/s)")
        lines = [title, ""] if heading else []
        head = "| policy | " + " | ".join(METRICS[m][0] + (f" [{METRICS[m][1]}]" if METRICS[m][1] else "")
                                         for m in metrics) + " |"
        rows = [head, "|" + "---|" * (len(metrics) + 1)]
        for p in self.policies:
            cells = []
            for m in metrics:
                v, h = self.values[p][m][i]
                cells.append(_bounds_cell(self.values[p], m, i)
                             or fmt_value(v) + (f" ± {fmt_value(h, '.2g')}" if is_defined(v) and is_defined(h) else ""))
            rows.append(f"| {p} | " + " | ".join(cells) + " |")
        lines += rows
        if any(m.startswith("ttft") for m in metrics):
            lines += ["", "TTFT: arrival to the end of the iteration that gives the first *decode* token (the "
                          "paper's definition); vLLM's TTFT ends with the prefill, one iteration earlier"]
        done = {p: self.values[p]["finished_fraction"][i][0] for p in self.policies}
        empty = [p for p, f in done.items() if f != f]
        if empty:
            h, wf = self.inputs.get("horizon_s"), self.inputs.get("warmup_frac", 0.0)
            expect = (f" (about {self.rates_per_s[i] * h * (1 - wf):.3g} expected at {self.rates_per_s[i]:.3g} "
                      f"req/s over the {h * (1 - wf):g} s after the warm-up)") if h else ""
            lines += ["", f"note: no request arrived after the warm-up within the horizon under {', '.join(empty)}"
                          f"{expect}: the latencies are undefined (–); raise the load or lengthen {horizon_name}"]
        low = {p: f for p, f in done.items() if f == f and f < min_finished}
        if low:
            worst = min(low, key=low.get)
            if low[worst] == 0:
                lines += ["", f"note: no request finished within the horizon under {worst} ({len(low)} of {len(done)} "
                              "policies below " f"{min_finished:.0%}): the latencies are undefined (–); lengthen {horizon_name} "
                              "or lower the load"]
                return "\n".join(lines)
            lines += ["", f"note: only a fraction {low[worst]:.4g} of the arrivals finished within the horizon under {worst} "
                          f"({len(low)} of {len(done)} policies below {min_finished:.0%}); the latencies above are "
                          f"those of the finished requests, so tails are underestimated -- lengthen {horizon_name}"]
        return "\n".join(lines)

    def to_dict(self) -> dict:
        from ..results import plain

        return plain({"policies": list(self.policies), "loads": list(self.loads), "rates_per_s": list(self.rates_per_s),
                      "n_replications": self.n_replications, "metrics": {m: {"label": METRICS[m][0], "unit": METRICS[m][1]}
                                                                         for m in METRICS},
                      "values": {p: {m: [list(x) for x in v] for m, v in d.items()} for p, d in self.values.items()},
                      "inputs": self.inputs, "seconds": self.seconds})

    def to_frame(self):
        import pandas as pd

        rows = []
        for p in self.policies:
            for i, ld in enumerate(self.loads):
                row = {"policy": p, "load": ld, "rate_per_s": self.rates_per_s[i]}
                for m in METRICS:
                    row[m], row[m + "_ci"] = self.values[p][m][i]
                rows.append(row)
        return pd.DataFrame(rows)

    @staticmethod
    def metric_label(metric: str) -> tuple:
        """``(label, unit)`` of a metric key (``"ttft_mean_s"`` -> ``("mean TTFT", "s")``), for axes."""
        if metric not in METRICS:
            raise ParameterError("metric", metric, f"one of {', '.join(METRICS)}")
        return METRICS[metric]

    def plot(self, ax=None, metric: str = "latency_per_token_mean_s", path=None):
        from ..plotting.latency import plot_latency_vs_load

        return plot_latency_vs_load(self, metric=metric, ax=ax, path=path)


#: Most requests an ordering may be shown over one run, summed over its iterations (an estimate):
#: these orderings read the whole queue every iteration, so an overloaded run costs
#: iterations x queue length (about 0.3 microseconds per request read).
MAX_EXAMINED = 5_000_000_000


def _load_rates(engine, workload, loads, preemption="recompute"):
    """``(capacity tokens/s, capacity requests/s, arrival rate per load)``, the capacity being the load basis
    (:func:`fluidq.dtmc.load_basis.load_basis`, ``inputs["load_basis"]`` names it): the one lambda* that ``fluidq
    check --load``, ``fluidq simulate --load`` and a sweep's ``load`` read, so that load 0.9 is one arrival rate
    on every face -- where the KV cache binds, the capacity under its rules (before, loads here were fractions of
    b_max/t(b_max) without the cache, and load 0.9 of an engine whose cache binds was an overload); the tokens
    are batch work (:func:`fluidq.capacity.tokens_per_request` per request)."""
    return _load_rates_basis(engine, workload, loads, preemption)[:3]


def _load_rates_basis(engine, workload, loads, preemption="recompute"):
    """:func:`_load_rates` and the :class:`~fluidq.dtmc.load_basis.LoadBasis` it read."""
    from ..dtmc.load_basis import load_basis

    lb = load_basis(engine, workload, preemption=preemption)
    return lb.tokens_per_s, lb.requests_per_s, tuple(ld * lb.requests_per_s for ld in loads), lb


def _check_comparison_size(engine, workload, horizon_s, load, n_replications, per_replication=1, names=None,
                           drain=False):
    """Refuse a comparison too large to run (see :func:`fluidq.sim.core.check_size`), before any work.

    ``workload`` is at the highest rate, ``load`` the highest load; ``per_replication`` runs (policies x
    loads) are made per replication.  ``names`` maps ``"horizon_s"`` and ``"n_replications"`` to the
    caller's names (CLI flags).

    Besides the per-run and total limits of the simulator, an overloaded run (``load > 1``) is
    estimated at ``(horizon / t(b_max)) x (1 - 1/load) x arrivals / 2`` requests read by the ordering
    (full batches, a queue growing linearly) and refused above :data:`MAX_EXAMINED`.  A drained run
    (``drain=True``) then serves the ``(1 - 1/load) x arrivals`` left at the horizon: ``load - 1`` times
    the arrival window's iterations again, over a queue shrinking from there to zero, so its estimate
    is ``load`` times the window's.  This, not a cap on the load, bounds an overloaded comparison's
    cost (loads above 2 were refused outright until 2026-12-07; the size check came a day after that
    cap and makes it redundant).
    """
    from ..sim.core import MAX_RUNS, MAX_TOTAL_ARRIVALS, _n, check_size

    nm = {"horizon_s": "horizon_s", "n_replications": "n_replications", **(names or {})}
    size = check_size(engine, workload, horizon_s, None, names=nm)
    runs = n_replications * per_replication
    if runs > MAX_RUNS or not runs * size["arrivals"] <= MAX_TOTAL_ARRIVALS:
        raise ParameterError(nm["n_replications"], n_replications,
                             f"at most {MAX_RUNS:,} runs and {MAX_TOTAL_ARRIVALS:,} arrivals over all of them",
                             f"{n_replications:,} x {per_replication} policies and loads = {runs:,} runs of up to "
                             f"{_n(size['arrivals'])} arrivals would have {_n(runs * size['arrivals'])}")
    if load > 1:
        bt = engine.batch_time.base if hasattr(engine.batch_time, "base") else engine.batch_time
        t_full = float(np.asarray(bt(np.array([float(engine.b_max)])), dtype=float)[0])
        reads = (horizon_s / t_full) * (1 - 1 / load) * size["arrivals"] / 2 if t_full > 0 else math.inf
        if drain:   # the backlog left at the horizon is served too: load x the arrival window's reads
            reads *= load
        if not reads <= MAX_EXAMINED:
            raise ParameterError(nm["horizon_s"], horizon_s, f"a run whose orderings read at most {MAX_EXAMINED:.3g} "
                                 "queued requests", f"at load {load:g} the queue grows without bound and each "
                                 f"run would read about {_n(reads)} (every iteration reads the whole queue"
                                 + ("; drained, the backlog left at the horizon is read until it is served" if drain
                                    else "") + "); shorten the horizon or keep the loads <= 1")
    return size


def _simulate_one(engine, reqs, pol, g, horizon_s, preemption, swap_s_per_token, warm):
    """One run of ``pol`` on the columns ``reqs`` (stateful orderings are reset first)."""
    from ..sim import simulate

    for o in (getattr(pol, "order", None), getattr(getattr(pol, "order", None), "base", None)):
        if hasattr(o, "reset"):
            o.reset()
    n = None if horizon_s is not None else len(reqs["arrival_s"])  # no horizon: run until all have finished
    return simulate(engine, reqs, pol, horizon_s=horizon_s, n_requests=n, rng=g, preemption=preemption,
                    swap_s_per_token=swap_s_per_token, warmup_s=warm)


def _slos(slo_per_token_s, slo_ttlt_s):
    a = None if slo_per_token_s is None else real("slo_per_token_s", slo_per_token_s, positive=True)
    b = None if slo_ttlt_s is None else real("slo_ttlt_s", slo_ttlt_s, positive=True)
    return a, b


def compare_orderings(engine: Engine, workload: Workload, policies=None, *, loads=(0.5, 0.7, 0.9),
                      horizon_s: float = 300.0, n_replications: int = 2, warmup_frac: float = 0.1, rng=None,
                      preemption: str = "recompute", swap_s_per_token: float | None = None, tau: float = 0.6,
                      confidence: float = 0.95, progress=None, slo_per_token_s: float | None = None,
                      slo_ttlt_s: float | None = None, drain: bool = False) -> LatencyComparison:
    """Simulate each policy at each load on common random requests and compare latencies.

    Parameters
    ----------
    engine : Engine
        With ``kv_capacity_tokens`` for memory and preemptions.
    workload : Workload
        Its length distributions (or trace rows) are used; the rate is set by ``loads``.
    policies : dict, sequence of keys, or None
        ``{name: policy}``, keys of :data:`POLICY_KEYS`, or ``None`` for the first six.
    loads : sequence of float
        Finite loads > 0, fractions of the load basis lambda* (:func:`fluidq.dtmc.load_basis.load_basis`, the one
        ``fluidq check --load`` reads; ``inputs["load_basis"]`` names it): vLLM's flow balance for an engine whose
        batch time reads the batch composition, the capacity under the KV cache's rules where the cache binds,
        else :func:`fluidq.max_throughput` (sup b/t(b)).  Above 1 the run is an overload; how far above is
        bounded by the size of the run (see Notes), not by a cap on the load (until 2026-12-07 loads were
        refused above 2).  Each load's arrival rate must be within [1e-9, 1e9] req/s.
    horizon_s : float
        Simulated seconds per run (arrivals stop there; requests still in the system are
        unfinished and excluded from the latency statistics -- see ``finished_fraction``).
    n_replications : int
        Independent request samples per load (a trace is replayed from random offsets).
    warmup_frac : float
        Requests arriving in the first ``warmup_frac * horizon_s`` are left out of the statistics.
    rng : int, SeedSequence or None
    preemption, swap_s_per_token : see :func:`fluidq.simulate`.
    tau : float
        Kendall tau of PARS's stand-in predictor when ``policies`` are keys (``inputs["tau"]`` records it
        then; with policy objects it is ``None``: the policies carry their own predictors).
    slo_per_token_s, slo_ttlt_s : float, optional
        SLOs whose attainment is reported (``slo_attainment_*``; NaN when not given).  The tightest
        SLOs met by 90 % and 99 % of the requests are reported either way (see :mod:`.slo`).
    drain : bool
        ``True``: arrivals stop at ``horizon_s`` but each run continues until every request has
        finished, so no latency is left out (the tails and SLO attainment count every arrival);
        ``False`` (default): the run stops at the horizon (see ``finished_fraction``).

    Returns
    -------
    LatencyComparison

    Notes
    -----
    A comparison too large to run is refused before any work (a ParameterError saying the size it
    would have): at most :data:`fluidq.sim.core.MAX_ARRIVALS` arrivals per run at the highest
    load, :data:`fluidq.sim.core.MAX_TOTAL_ARRIVALS` over all runs, and for an overloaded load an
    estimate of the queue reads below :data:`MAX_EXAMINED` (with ``drain=True`` counting the
    drain of the backlog left at the horizon).
    """
    from ..sim import simulate

    if not isinstance(engine, Engine):
        raise ParameterError("engine", engine, "a fluidq.Engine")
    if not isinstance(workload, Workload):
        raise ParameterError("workload", workload, "a fluidq.Workload")
    from numbers import Real

    if isinstance(loads, (Real, str)):  # a bare number is no sequence: say so, not "'float' is not iterable"
        raise ParameterError("loads", loads, "a sequence of loads > 0 (fractions of the load basis)",
                             f"for one load write loads=({loads!r},)")
    loads = tuple(real("loads", x, positive=True) for x in loads)
    confidence = _confidence(confidence)
    if not loads:
        raise ParameterError("loads", loads, "one or more finite loads > 0 (fractions of the load basis)")
    horizon_s = real("horizon_s", horizon_s, positive=True)
    n_replications = integer("n_replications", n_replications, minimum=1)
    warmup_frac = real("warmup_frac", warmup_frac, nonnegative=True)
    if warmup_frac >= 1:
        raise ParameterError("warmup_frac", warmup_frac, "a fraction in [0, 1)")
    tau = _tau("tau", tau)
    slo_per_token_s, slo_ttlt_s = _slos(slo_per_token_s, slo_ttlt_s)
    from_keys = policies is None or not isinstance(policies, dict)
    if from_keys:
        policies = standard_policies(engine, workload, keys=policies, tau=tau)
    names = tuple(policies)
    tok, cap_req, rates, lb = _load_rates_basis(engine, workload, loads, preemption)
    for ld in loads:    # each a representable arrival rate, refused naming loads
        load_rate("loads", ld, cap_req)
    _check_comparison_size(engine, workload.with_rate(max(rates)), horizon_s, max(loads), n_replications,
                           len(policies) * len(loads), drain=drain)
    if not (rng is None or isinstance(rng, np.random.SeedSequence)):
        rng = integer("rng", rng, minimum=0)  # a seed: numpy rejects negative ones with a bare ValueError
    ss = rng if isinstance(rng, np.random.SeedSequence) else np.random.SeedSequence(rng)
    seeds = ss.spawn(len(loads) * n_replications)
    runs = {p: {m: [[] for _ in loads] for m in METRICS} for p in names}
    t0 = time.perf_counter()
    warm = warmup_frac * horizon_s
    for i, rate in enumerate(rates):
        w = workload.with_rate(rate)
        for j in range(n_replications):
            g = np.random.default_rng(seeds[i * n_replications + j])
            a, p, d = _draw(w, g, horizon_s)
            if a.size == 0:
                continue
            reqs = {"arrival_s": a, "prompt_tokens": p, "output_tokens": d}
            for name in names:
                res = _simulate_one(engine, reqs, policies[name], g, None if drain else horizon_s, preemption,
                                    swap_s_per_token, warm)
                for m, v in _run_metrics(res, warm, slo_per_token_s, slo_ttlt_s).items():
                    runs[name][m][i].append(v)
                if progress is not None:
                    progress(name, loads[i], j)
    values = {p: {m: [_tci(runs[p][m][i], confidence) for i in range(len(loads))] for m in METRICS} for p in names}
    inputs = {"engine": engine.to_dict(), "workload": workload.name, "horizon_s": horizon_s,
              "warmup_frac": warmup_frac, "preemption": preemption, "tau": tau if from_keys else None,
              "slo_per_token_s": slo_per_token_s, "slo_ttlt_s": slo_ttlt_s, "drain": bool(drain),
              "capacity_tokens_per_s": tok, "capacity_requests_per_s": cap_req, **lb.to_dict(),
              "policies": {p: (pol.describe() if hasattr(pol, "describe") else repr(pol)) for p, pol in policies.items()},
              "seed": None if rng is None else (int(rng) if isinstance(rng, (int, np.integer)) else repr(rng))}
    return LatencyComparison(policies=names, loads=loads, rates_per_s=rates, values=values,
                             n_replications=n_replications, inputs=inputs, seconds=time.perf_counter() - t0,
                             samples=runs)


def burst_comparison(engine: Engine, workload: Workload, policies=None, *, n_requests: int = 2000,
                     n_replications: int = 5, rng=None, preemption: str = "recompute",
                     swap_s_per_token: float | None = None, tau: float = 0.6, confidence: float = 0.95,
                     slo_per_token_s: float | None = None, slo_ttlt_s: float | None = None,
                     progress=None) -> LatencyComparison:
    """The PARS paper's burst experiment: ``n_requests`` arrive at once on an empty engine, then drain.

    Every policy serves the same ``n_requests`` lengths (drawn from ``workload``, or rows of its
    trace from a random offset) all arriving at ``t = 0``; each run continues until every request
    has finished (no horizon), so nothing is left out of the statistics and ``makespan_s`` is the
    drain time.  Returns a :class:`LatencyComparison` with one "load" (``loads == (nan,)``; the
    burst size is ``inputs["burst"]``) and ``n_replications`` seeded samples of the lengths.
    """
    if not isinstance(engine, Engine):
        raise ParameterError("engine", engine, "a fluidq.Engine")
    if not isinstance(workload, Workload):
        raise ParameterError("workload", workload, "a fluidq.Workload")
    from ..sim.core import MAX_ARRIVALS, MAX_TOTAL_ARRIVALS

    n_requests = integer("n_requests", n_requests, minimum=1, maximum=MAX_ARRIVALS)
    n_replications = integer("n_replications", n_replications, minimum=1)
    confidence = _confidence(confidence)
    tau = _tau("tau", tau)
    slo_per_token_s, slo_ttlt_s = _slos(slo_per_token_s, slo_ttlt_s)
    from_keys = policies is None or not isinstance(policies, dict)
    if from_keys:
        policies = standard_policies(engine, workload, keys=policies, tau=tau)
    names = tuple(policies)
    if n_requests * n_replications * len(names) > MAX_TOTAL_ARRIVALS:
        raise ParameterError("n_replications", n_replications, f"at most {MAX_TOTAL_ARRIVALS:,} arrivals over all runs",
                             f"{n_replications} x {len(names)} policies x {n_requests:,} requests")
    if not (rng is None or isinstance(rng, np.random.SeedSequence)):
        rng = integer("rng", rng, minimum=0)
    ss = rng if isinstance(rng, np.random.SeedSequence) else np.random.SeedSequence(rng)
    seeds = ss.spawn(n_replications)
    runs = {p: {m: [[]] for m in METRICS} for p in names}
    t0 = time.perf_counter()
    tr = workload.trace
    for j in range(n_replications):
        g = np.random.default_rng(seeds[j])
        if tr is None:
            p = np.asarray(workload.prompt_tokens.sample(g, n_requests)).astype(np.int64)
            d = np.asarray(workload.output_tokens.sample(g, n_requests)).astype(np.int64)
        else:
            n = len(tr.prompt_tokens)
            idx = (int(g.integers(0, n)) + np.arange(n_requests)) % n
            p, d = np.asarray(tr.prompt_tokens)[idx], np.asarray(tr.output_tokens)[idx]
        reqs = {"arrival_s": np.zeros(n_requests), "prompt_tokens": p, "output_tokens": d}
        for name in names:
            res = _simulate_one(engine, reqs, policies[name], g, None, preemption, swap_s_per_token, 0.0)
            for m, v in _run_metrics(res, 0.0, slo_per_token_s, slo_ttlt_s).items():
                runs[name][m][0].append(v)
            if progress is not None:
                progress(name, n_requests, j)
    values = {p: {m: [_tci(runs[p][m][0], confidence)] for m in METRICS} for p in names}
    tok, cap_req, _, lb = _load_rates_basis(engine, workload, (), preemption)
    inputs = {"engine": engine.to_dict(), "workload": workload.name, "burst": n_requests, "preemption": preemption,
              "capacity_tokens_per_s": tok, "capacity_requests_per_s": cap_req, **lb.to_dict(),
              "tau": tau if from_keys else None, "slo_per_token_s": slo_per_token_s, "slo_ttlt_s": slo_ttlt_s,
              "policies": {p: (pol.describe() if hasattr(pol, "describe") else repr(pol)) for p, pol in policies.items()},
              "seed": None if rng is None else (int(rng) if isinstance(rng, (int, np.integer)) else repr(rng))}
    return LatencyComparison(policies=names, loads=(math.nan,), rates_per_s=(math.nan,), values=values,
                             n_replications=n_replications, inputs=inputs, seconds=time.perf_counter() - t0,
                             samples=runs)
