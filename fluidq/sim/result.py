"""The result of one simulation run: per-request records, backlog series, metrics."""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import ParameterError
from ..results import Result, line_slope, plain

__all__ = ["METRIC_NAMES", "SimResult", "SimSummary"]

METRIC_NAMES = ("ttft_s", "ttlt_s", "tpot_s", "latency_per_token_s", "queueing_s")
#: what the first token of TTFT is: the first decode token (the paper's model) or the end of the prefill
#: (vLLM's first token comes with it)
TTFT_DEFINITIONS = ("first_decode", "end_of_prefill")
#: the metrics and statistics :meth:`SimResult.summary` lists (as ``ttft_s_p99``...)
_SUMMARY_METRICS = ("ttft_s", "ttlt_s", "tpot_s", "latency_per_token_s")
_SUMMARY_STATS = ("mean", "p50", "p90", "p99")


def _ro(a):
    a = np.asarray(a)
    a.setflags(write=False)
    return a


def _stats(x: np.ndarray) -> dict:
    x = x[np.isfinite(x)]
    if x.size == 0:
        return {"n": 0, "mean": math.nan, "p50": math.nan, "p90": math.nan, "p99": math.nan, "max": math.nan}
    q = np.percentile(x, [50, 90, 99])
    return {"n": int(x.size), "mean": float(x.mean()), "p50": float(q[0]), "p90": float(q[1]),
            "p99": float(q[2]), "max": float(x.max())}


def latency_columns(r: dict, ttft: str = "first_decode") -> dict:
    """The latency columns of :meth:`SimResult.latencies` from request columns ``r`` (``arrival_s``,
    ``first_scheduled_s``, ``prefill_done_s``, ``first_token_s``, ``finish_s``, ``output_tokens``): one
    formula for a full result and for a summary run's finished chunks."""
    a = r["arrival_s"]
    out = r["output_tokens"].astype(float)
    ttlt = r["finish_s"] - a
    with np.errstate(invalid="ignore", divide="ignore"):
        tpot = np.where(out > 1, (r["finish_s"] - r["first_token_s"]) / np.maximum(out - 1, 1), np.nan)
    first = r["first_token_s"] if ttft == "first_decode" else r["prefill_done_s"]
    return {"ttft_s": first - a, "ttlt_s": ttlt, "tpot_s": tpot,
            "latency_per_token_s": ttlt / out, "queueing_s": r["first_scheduled_s"] - a}


def _per_s(count, end_s: float) -> float:
    """``count`` divided by the simulated time ``end_s`` (NaN for an empty run)."""
    return count / end_s if end_s > 0 else math.nan


def summary_values(*, policy: str, method: str, requests: int, finished: int, end_s: float, iterations: int,
                   tokens_served: int, busy_fraction: float, mixed_batch_fraction: float,
                   final_requests_in_system: int, final_token_backlog: int, mean_requests_in_system: float,
                   token_backlog_slope_per_s: float, metrics: dict, preemptions: int = 0, wasted_tokens: int = 0,
                   swap_tokens: int = 0, rejected: int = 0, peak_kv_tokens: int = 0, blocked: int = 0) -> dict:
    """The figures of :meth:`SimResult.summary`, keys in its order, from a run's counts and backlog figures and
    its :attr:`SimResult.metrics`: one list of keys and one set of formulas for a full result and for a summary
    streamed in bounded memory (:func:`fluidq.simulate`, ``record="summary"``)."""
    return {"policy": policy, "method": method, "requests": requests, "finished": finished, "end_s": end_s,
            "iterations": iterations, "throughput_requests_per_s": _per_s(finished, end_s),
            "throughput_tokens_per_s": _per_s(tokens_served, end_s), "busy_fraction": busy_fraction,
            "mixed_batch_fraction": mixed_batch_fraction, "final_requests_in_system": final_requests_in_system,
            "final_token_backlog": final_token_backlog, "mean_requests_in_system": mean_requests_in_system,
            "token_backlog_slope_per_s": token_backlog_slope_per_s, "preemptions": preemptions,
            "wasted_tokens": wasted_tokens, "swap_tokens": swap_tokens, "rejected": rejected,
            "peak_kv_tokens": peak_kv_tokens, "blocked": blocked,
            **{f"{k}_{s}": metrics[k][s] for k in _SUMMARY_METRICS for s in _SUMMARY_STATS}}


@dataclass(frozen=True, eq=False)
class SimResult(Result):
    """One simulated run of an engine under a scheduler.

    Attributes
    ----------
    requests : dict of str -> numpy.ndarray
        One entry per arrival (read-only arrays): ``arrival_s``, ``first_scheduled_s`` (start of the
        first iteration that serves its prefill), ``prefill_done_s`` (end of the iteration that
        completes its prefill), ``first_token_s`` (end of the iteration that gives its *first
        decode token*, or its prefill's with ``engine.prefill_emits_token``), ``finish_s`` (end of the iteration that gives its last decode token),
        ``prompt_tokens``, ``output_tokens``, ``preemptions``.  Times are NaN when the event did
        not happen before the run ended.
    backlog : dict of str -> numpy.ndarray
        ``t_s``, ``requests`` (requests in the system) and ``tokens`` (remaining prefill + decode
        tokens of the requests in the system), sampled at iteration boundaries where the batch
        changes and at arrivals while idle; both are right-continuous step functions of time.
    iterations : dict of str -> numpy.ndarray or None
        With ``record_iterations=True``: one row per iteration, ``t_s`` (start), ``prefill_tokens``,
        ``decode_tokens``, ``requests``, ``batch_s``, ``demand`` (``sum_i p_i + 1{p_i = 0}`` at its
        start), ``kv_tokens`` (contexts read by decode attention) and ``kv_used`` (with memory);
        with a paged memory model (any :class:`~fluidq.engine.Memory` but the default token rules)
        also ``resident`` (requests holding KV blocks), ``waiting`` (requests in the system holding
        none) at the iteration's end, and ``useful_tokens`` (prompt tokens computed for the first
        time plus output tokens emitted).
    throughput_requests_per_s, throughput_tokens_per_s : float
        Finished requests (served tokens) divided by the simulated time ``end_s``.
    busy_fraction : float
        Share of ``[0, end_s]`` during which a batch was running.
    mixed_batch_fraction : float
        Share of iterations that held prefill and decode tokens.
    preemptions, wasted_tokens, swap_tokens, rejected, peak_kv_tokens : int
        KV-cache memory figures (zero without a capacity): preemptions, KV tokens discarded by
        recompute preemptions and computed again (work redone; blocks a prefix cache gives back
        are not counted), tokens moved by swaps (out and in), requests larger
        than the whole cache (rejected at arrival), the most KV tokens held at once.
    blocked : int
        Requests the policy reported it can never schedule (a prompt longer than ``b_max`` under a
        non-chunking scheduler); they stay in the system, which is then unstable by construction.
    method : str
        ``"fast"`` (a compiled loop: the FCFS kernels, or the ``select()`` loop on the kernel's arrays,
        :mod:`fluidq.kernel.select`) or ``"generic"`` (the Python reference ``EngineRun``, ``policy.select`` per
        iteration).
    examined : int
        Generic path: the requests shown to the policy, summed over its ``select`` calls (the
        kernel's cost; 0 on the fast path).  A built-in FCFS scheduler is shown only the requests it
        could touch, so this grows linearly with the run even when the queue grows without bound.

    Notes
    -----
    **TTFT.** In the model of Li, Dai, Peng (arXiv:2504.07347) a request has ``v_p`` prefill tokens and
    ``v_d`` *separate* decode tokens, so the first output token is the first decode token:
    ``ttft_s = first_token_s - arrival_s``.  Engines that emit a token at the end of prefill
    correspond to ``prefill_done_s - arrival_s`` (column ``prefill_done_s``); an engine built with
    ``prefill_emits_token=True`` (vLLM) *is* such an engine: its first token comes with the prefill,
    ``first_token_s == prefill_done_s`` and ``output_tokens - 1`` decode iterations follow (one fewer
    per preemption: the iteration completing a recomputation gives the next token, as vLLM v1's does).  ``ttlt_s = finish_s -
    arrival_s``; ``tpot_s = (finish_s - first_token_s)/(output_tokens - 1)`` (the mean time between
    tokens of a request, NaN for one-token outputs); ``latency_per_token_s = ttlt_s/output_tokens``
    (the PARS paper's metric, arXiv:2510.03243); ``queueing_s = first_scheduled_s - arrival_s``.
    """

    requests: dict
    backlog: dict
    policy: str
    method: str
    end_s: float
    horizon_s: float | None
    n_iterations: int
    busy_fraction: float
    mixed_batch_fraction: float
    tokens_served: int
    preemptions: int = 0
    wasted_tokens: int = 0
    swap_tokens: int = 0
    rejected: int = 0
    peak_kv_tokens: int = 0
    blocked: int = 0
    iterations: dict | None = None
    batches: tuple | None = field(default=None, repr=False)
    warmup_s: float = 0.0
    examined: int = 0
    inputs: dict = field(default_factory=dict, repr=False)

    # ----------------------------------------------------------------- derived
    @property
    def n_requests(self) -> int:
        return int(self.requests["arrival_s"].size)

    @property
    def n_finished(self) -> int:
        return int(np.isfinite(self.requests["finish_s"]).sum())

    @property
    def throughput_requests_per_s(self) -> float:
        return _per_s(self.n_finished, self.end_s)

    @property
    def throughput_tokens_per_s(self) -> float:
        return _per_s(self.tokens_served, self.end_s)

    def latencies(self, ttft: str = "first_decode") -> dict:
        """Per-request latency columns (seconds, NaN where undefined), over all arrivals.

        ``ttft`` chooses the first token: ``"first_decode"`` (default, the paper's model: the end of the
        iteration that gives the first decode token) or ``"end_of_prefill"`` (what vLLM reports: its
        first token comes with the prefill); TPOT and the other columns are the same either way.
        """
        if ttft not in TTFT_DEFINITIONS:
            raise ParameterError("ttft", ttft, " or ".join(repr(t) for t in TTFT_DEFINITIONS))
        return latency_columns(self.requests, ttft)

    @property
    def metrics(self) -> dict:
        """``{metric: {n, mean, p50, p90, p99, max}}`` over requests arriving after ``warmup_s``.

        Each metric is over the requests where it is defined: TTFT over those that got a first token,
        TTLT/TPOT/latency per token over finished ones (so an overloaded run's figures describe
        the requests that got through; see ``n``)."""
        lat = self.latencies()
        keep = self.requests["arrival_s"] >= self.warmup_s
        return {k: _stats(v[keep]) for k, v in lat.items()}

    def time_average(self, key: str = "requests", start_s: float | None = None) -> float:
        """Time average of ``backlog[key]`` over ``[start_s, end_s]`` (``start_s`` defaults to warm-up)."""
        t = self.backlog["t_s"]
        y = self.backlog[key].astype(float)
        s = self.warmup_s if start_s is None else float(start_s)
        if t.size < 1 or self.end_s <= s:  # no time to average over
            return math.nan
        edges = np.clip(np.append(t, self.end_s), s, self.end_s)
        return float(np.sum(y * np.diff(edges)) / (self.end_s - s))

    def backlog_at(self, times, key: str = "tokens") -> np.ndarray:
        """The backlog step function evaluated at ``times``."""
        t = self.backlog["t_s"]
        idx = np.searchsorted(t, np.asarray(times, dtype=float), side="right") - 1
        return self.backlog[key][np.clip(idx, 0, len(t) - 1)].astype(float)

    def backlog_slope(self, key: str = "tokens", start_frac: float = 0.5, points: int = 200) -> float:
        """Least-squares slope (per second) of ``backlog[key]`` over the last ``1 - start_frac`` of the run."""
        g = np.linspace(start_frac * self.end_s, self.end_s, points)
        return line_slope(g, self.backlog_at(g, key))

    def offered(self, start_frac: float = 0.0) -> dict:
        """What the run's own arrivals offered over ``[start_frac * end_s, end_s]``.

        Returns ``{"window_s", "arrivals", "requests_per_s", "tokens_per_s"}`` (tokens = prompt +
        output).  For a replayed trace this is the *effective* rate of the replayed window, which
        can differ a lot from the trace's mean rate (a trace that starts sparse).
        """
        t0, t1 = float(start_frac) * self.end_s, self.end_s
        a = self.requests["arrival_s"]
        sel = (a >= t0) & (a <= t1)
        tok = float(np.sum(self.requests["prompt_tokens"][sel]) + np.sum(self.requests["output_tokens"][sel]))
        w = t1 - t0
        return {"window_s": w, "arrivals": int(sel.sum()),
                "requests_per_s": sel.sum() / w if w > 0 else math.nan, "tokens_per_s": tok / w if w > 0 else math.nan}

    def fluid_backlog(self, capacity_tokens_per_s: float, times) -> np.ndarray:
        """Token backlog of the fluid model driven by this run's own arrivals, at ``times``.

        Each arrival brings its prompt + output tokens at once and the backlog drains at
        ``capacity_tokens_per_s`` while positive (the reflected path ``x(t) = Y(t) - min(0,
        inf_{s<=t} Y(s))`` with ``Y(t) = A(t) - c t``, ``A`` the cumulative tokens arrived).  This is
        the work-conserving fluid prediction of Li, Dai, Peng (arXiv:2504.07347, Theorem 2) for the
        arrivals actually simulated, so it applies to a bursty replayed trace as well.
        """
        from .._validate import real

        c = real("capacity_tokens_per_s", capacity_tokens_per_s, positive=True)
        a = np.maximum(self.requests["arrival_s"].astype(float), 0.0)
        tok = (self.requests["prompt_tokens"] + self.requests["output_tokens"]).astype(float)
        g = np.asarray(times, dtype=float)
        if a.size == 0:
            return np.zeros_like(g)
        cum = np.cumsum(tok)
        before = (cum - tok) - c * a                       # Y just before each arrival
        low = np.minimum.accumulate(np.minimum(before, 0.0))  # inf of Y up to each arrival
        k = np.searchsorted(a, g, side="right")           # arrivals at or before each time
        j = np.maximum(k - 1, 0)
        y = np.where(k > 0, cum[j], 0.0) - c * g
        m = np.minimum(np.where(k > 0, low[j], 0.0), y)   # Y decreases between arrivals
        return y - np.minimum(m, 0.0)

    def fluid_backlog_slope(self, capacity_tokens_per_s: float, start_frac: float = 0.5,
                            points: int = 200) -> float:
        """Slope of :meth:`fluid_backlog`, fitted exactly as :meth:`backlog_slope` fits the simulated one."""
        g = np.linspace(start_frac * self.end_s, self.end_s, points)
        return line_slope(g, self.fluid_backlog(capacity_tokens_per_s, g))

    # ----------------------------------------------------------------- faces
    def summary(self) -> dict:
        return summary_values(policy=self.policy, method=self.method, requests=self.n_requests,
                              finished=self.n_finished, end_s=self.end_s, iterations=self.n_iterations,
                              tokens_served=self.tokens_served, busy_fraction=self.busy_fraction,
                              mixed_batch_fraction=self.mixed_batch_fraction,
                              final_requests_in_system=int(self.backlog["requests"][-1]),
                              final_token_backlog=int(self.backlog["tokens"][-1]),
                              mean_requests_in_system=self.time_average("requests"),
                              token_backlog_slope_per_s=self.backlog_slope("tokens"), metrics=self.metrics,
                              preemptions=self.preemptions, wasted_tokens=self.wasted_tokens,
                              swap_tokens=self.swap_tokens, rejected=self.rejected,
                              peak_kv_tokens=self.peak_kv_tokens, blocked=self.blocked)

    @property
    def ttft_definition(self) -> str:
        """Which first token the ``ttft_s`` of :attr:`metrics` and :meth:`to_dict` measures:
        ``"end_of_prefill"`` when the engine emits its first token with the prefill
        (``prefill_emits_token``, vLLM's TTFT), else ``"first_decode"`` (the paper's model: the end of the
        iteration giving the first decode token).  :meth:`latencies` takes either by name."""
        return ttft_definition(self.inputs)

    def to_dict(self, *, columns: bool = False) -> dict:
        """JSON-ready summary and metrics (``ttft_definition`` says which TTFT they hold); ``columns=True``
        adds the per-request and backlog arrays."""
        d = {"summary": self.summary(), "metrics": self.metrics, "ttft_definition": self.ttft_definition,
             "inputs": self.inputs}
        if columns:
            d["requests"] = {k: v for k, v in self.requests.items()}
            d["backlog"] = {k: v for k, v in self.backlog.items()}
        return plain(d)

    def to_frame(self, which: str = "requests"):
        """A pandas DataFrame of ``requests`` (with latency columns), ``backlog`` or ``iterations``.

        pandas is optional: without it this raises ImportError with an install hint.
        """
        try:
            import pandas as pd
        except ImportError as exc:  # pragma: no cover - depends on the environment
            raise ImportError("to_frame() needs pandas: pip install pandas") from exc
        if which == "requests":
            return pd.DataFrame({**self.requests, **self.latencies()})
        if which == "backlog":
            return pd.DataFrame(self.backlog)
        if which == "iterations":
            if self.iterations is None:
                from ..errors import ParameterError

                raise ParameterError("which", which, "'requests' or 'backlog' (run with record_iterations=True "
                                     "for iterations)")
            return pd.DataFrame(self.iterations)
        from ..errors import ParameterError

        raise ParameterError("which", which, "'requests', 'backlog' or 'iterations'")

    def plot(self, ax=None, kind: str = "backlog", **kw):
        """Queue trajectory (``kind="backlog"``, ``"tokens"``) or latency CDFs (``kind="latency"``)."""
        from ..plotting.sim import plot_latency_cdf, plot_trajectories

        if kind == "latency":
            return plot_latency_cdf({self.policy: self}, ax=ax, **kw)
        key = "tokens" if kind == "tokens" else "requests"
        return plot_trajectories({self.policy: self}, key=key, ax=ax, **kw)


@dataclass(frozen=True, eq=False)
class SimSummary(Result):
    """What ``fluidq.simulate(..., record="summary")`` keeps of a run: the figures of
    :meth:`SimResult.summary`, :attr:`SimResult.metrics` and inputs, and no array (a sweep of many runs holds
    a few hundred numbers per run).

    ``streamed`` is None when the run was a full one, summarised (``to_dict()`` then equals the full
    result's); else the run was streamed in bounded memory (see :func:`fluidq.simulate`, ``record``) and
    ``streamed`` says how its figures differ from a full run's: ``sampling``, ``percentile_rel_error`` (the
    percentiles' bound, relative to numpy's exact ones) and ``backlog_slope_grid_s`` (the spacing of the
    grid the token backlog slope is fitted on); ``to_dict()`` then has it under ``"streamed"``."""

    values: dict  # SimResult.summary()
    metrics: dict
    inputs: dict = field(default_factory=dict, repr=False)
    streamed: dict | None = None

    @classmethod
    def of(cls, res: "SimResult") -> "SimSummary":
        return cls(values=res.summary(), metrics=res.metrics, inputs=res.inputs)

    def summary(self) -> dict:
        """The full run's :meth:`SimResult.summary`."""
        return dict(self.values)

    @property
    def policy(self) -> str:
        return self.values["policy"]

    @property
    def n_requests(self) -> int:
        return int(self.values["requests"])

    @property
    def n_finished(self) -> int:
        return int(self.values["finished"])

    @property
    def throughput_requests_per_s(self) -> float:
        return float(self.values["throughput_requests_per_s"])

    @property
    def throughput_tokens_per_s(self) -> float:
        return float(self.values["throughput_tokens_per_s"])

    @property
    def ttft_definition(self) -> str:
        """As :attr:`SimResult.ttft_definition`."""
        return ttft_definition(self.inputs)

    def to_dict(self) -> dict:
        d = {"summary": self.values, "metrics": self.metrics, "ttft_definition": self.ttft_definition,
             "inputs": self.inputs}
        if self.streamed is not None:
            d["streamed"] = self.streamed
        return plain(d)


def ttft_definition(inputs: dict) -> str:
    """``"end_of_prefill"`` if the run's engine (``inputs["engine"]``) emits its first token with the
    prefill, else ``"first_decode"`` -- the TTFT a result's metrics hold."""
    eng = (inputs or {}).get("engine") or {}
    return "end_of_prefill" if isinstance(eng, dict) and eng.get("prefill_emits_token") else "first_decode"
