"""Latency-aware orderings: SJF, SRPT, LAS, PARS, gamma-Boost, MEMGUARD and gamma-Ada.

Each is an :class:`~fluidq.policies.orderings.Ordering` and plugs into any batch former:
``fluidq.Sarathi(order=PARS())``, ``fluidq.policies.Unified(order=GammaBoost(...))``.  Orderings
change *who* is served first, not how full a batch is, so on a work-conserving former every one of
them keeps the throughput guarantee of Theorem 2 of Li, Dai, Peng (arXiv:2504.07347); none but FCFS
is K-FCFS (``overtaking_bound`` is ``None``).

=============  ==========================================  ======  =====================================
ordering       key (smaller first)                         static  needs
=============  ==========================================  ======  =====================================
SJF            true output length (oracle)                 yes     ``output_tokens``
SRPT           remaining prefill + decode tokens (oracle)  no      ``output_tokens``
LAS            attained tokens                             no      --
PARS           predictor score; aged requests first        no*     ``RequestState.score``
GammaBoost     ``a_i - b_gamma(w_i)``                      no      a per-token cost in seconds
MemGuard       base ordering on geometric work levels      no      ``may_evict`` for the simulator
GammaAda       gamma-Boost with gamma from the tail        no      observed response times
=============  ==========================================  ======  =====================================

(*) PARS without aging is static.  Stateful orderings (PARS with ``idle_steps``, MemGuard, GammaAda)
keep per-run memory; it resets itself when the clock goes backwards (a new run) and by ``reset()``.

References
----------
Tao et al., "PARS: Low-Latency LLM Serving via Pairwise Learning-to-Rank", arXiv:2510.03243.
Yu & Scully, "Strongly Tail-Optimal Scheduling in the Light-Tailed M/G/1" (gamma-Boost), arXiv:2404.08826.
Li et al., "UNIBOOST: prediction-free tail-aware scheduling for LLM serving", arXiv:2606.18431.
"""
from __future__ import annotations

import math
import operator
from collections import deque
from dataclasses import dataclass, field
from typing import Callable, Sequence

import numpy as np

from .._validate import MAX_REQUEST_TOKENS, integer, real
from ..errors import ParameterError
from .base import RequestState
from .orderings import FCFS, KeyOrdering, Ordering

__all__ = ["SJF", "SRPT", "LAS", "PARS", "GammaBoost", "MemGuard", "GammaAda", "b_gamma", "solve_gamma",
           "PAPER_TOKEN_COST_S", "ORDERING_NAMES", "resolve_ordering"]

def _peak_rate(engine) -> float:
    """``sup_{1 <= b <= b_max} b/t(b)`` tokens/s of ``engine`` (Theorem 2 of arXiv:2504.07347 without a
    workload; tests/policies hold it equal to ``fluidq.max_throughput``)."""
    from ..engine import Engine

    if not isinstance(engine, Engine):
        raise ParameterError("engine", engine, "a fluidq.Engine")
    return engine.batch_time.best_rate(engine.b_max)[0]


#: Seconds per token at capacity for the paper's CodeLlama-34B/A100 fit: t(512)/512 = 153.16 ms/512.
PAPER_TOKEN_COST_S = 0.15316 / 512


_SJF_KEY = operator.attrgetter("output_tokens", "arrival_s", "rid")


def _started(r: RequestState) -> bool:
    return r.attained_tokens > 0


# --------------------------------------------------------------------------- oracles and LAS
@dataclass(frozen=True)
class SJF(KeyOrdering):
    """Shortest job first by the true output length (an oracle: it reads ``output_tokens``)."""

    name = "sjf"
    static = True

    def key(self, r, now_s):
        return r.output_tokens

    def order(self, requests, now_s):
        return sorted(requests, key=_SJF_KEY)


@dataclass(frozen=True)
class SRPT(KeyOrdering):
    """Shortest remaining processing time by oracle: remaining prefill plus decode tokens."""

    name = "srpt"

    def key(self, r, now_s):
        return (r.prompt_tokens - r.prefilled) + (r.output_tokens - r.decoded)

    def order(self, requests, now_s):
        return sorted(requests, key=lambda r: (r.prompt_tokens - r.prefilled + r.output_tokens - r.decoded,
                                               r.arrival_s, r.rid))


@dataclass(frozen=True)
class LAS(KeyOrdering):
    """Least attained service: fewest tokens processed so far (prediction-free)."""

    name = "las"

    def key(self, r, now_s):
        return r.attained_tokens

    def order(self, requests, now_s):
        return sorted(requests, key=lambda r: (r.prefilled + r.decoded, r.arrival_s, r.rid))


# --------------------------------------------------------------------------- PARS
@dataclass(frozen=True, kw_only=True)
class PARS(Ordering):
    """Serve the lowest predictor score first, with starvation prevention.

    Parameters
    ----------
    threshold_s : float or None
        A request that has waited (since arrival) at least this long gets top priority; aged
        requests are served among themselves in arrival order (paper: 2 minutes).  ``None`` turns
        the wait rule off.
    idle_steps : int or None
        Optional rule: a request that received no token for this many consecutive scheduling
        steps (calls of :meth:`order` at distinct times) gets top priority too.
    missing_score : {"error", "last"}
        A request without a score raises (default), or is served after every scored request.
    scores : sequence of float, optional
        Scores by request id, used when ``RequestState.score`` is ``None``; with
        :func:`fluidq.simulate` the id of a request is its index in arrival order, so
        ``PARS(scores=ranker.score(prompts))`` schedules a trace whose prompts are known.
    predictor : callable, optional
        ``predictor(request) -> score``, used when neither ``RequestState.score`` nor ``scores``
        gives one (e.g. :class:`fluidq.predict.NoisyOracle` for traces without text).

    Notes
    -----
    Scores come from ``RequestState.score`` (higher = longer), e.g. from
    :class:`fluidq.predict.LengthRanker` or :func:`fluidq.predict.scores_with_tau`; a request
    without a score is an error.

    References
    ----------
    Tao et al., "PARS: Low-Latency LLM Serving via Pairwise Learning-to-Rank", arXiv:2510.03243.
    """

    threshold_s: float | None = 120.0
    idle_steps: int | None = None
    missing_score: str = "error"
    scores: tuple | None = field(default=None, repr=False, compare=False)
    predictor: Callable | None = field(default=None, compare=False)
    _idle: dict = field(default_factory=dict, repr=False, compare=False)
    # what equality and hashing see of the two fields above: a digest of the scores and the
    # predictor's identity, so two PARS with different scores never compare equal (caches keyed on
    # policies would otherwise mix their results)
    _scores_key: str | None = field(default=None, init=False, repr=False)
    _predictor_key: int | None = field(default=None, init=False, repr=False)

    name = "pars"

    def __post_init__(self):
        super().__post_init__()
        object.__setattr__(self, "threshold_s", real("threshold_s", self.threshold_s, positive=True, allow_none=True))
        object.__setattr__(self, "idle_steps", integer("idle_steps", self.idle_steps, minimum=1, allow_none=True))
        if self.scores is not None:
            sc = np.asarray(self.scores, dtype=float)
            if sc.ndim != 1 or not np.all(np.isfinite(sc)):
                raise ParameterError("scores", f"<array of shape {sc.shape}>", "a 1-d array of finite scores")
            object.__setattr__(self, "scores", sc)
            import hashlib

            object.__setattr__(self, "_scores_key", hashlib.sha256(np.ascontiguousarray(sc).tobytes()).hexdigest())
        if self.predictor is not None:
            object.__setattr__(self, "_predictor_key", id(self.predictor))  # the object is held: ids stay unique
        if self.missing_score not in ("error", "last"):
            raise ParameterError("missing_score", self.missing_score, "'error' or 'last'")

    @property
    def static(self) -> bool:  # type: ignore[override]
        return self.threshold_s is None and self.idle_steps is None

    def reset(self) -> None:
        self._idle.clear()

    def promotion_s(self, r: RequestState) -> float:
        """The time the wait rule promotes ``r`` (``inf`` without the rule)."""
        return math.inf if self.threshold_s is None else r.arrival_s + self.threshold_s

    def _update_idle(self, requests, now_s):
        """Idle steps per rid.  A step is a call at a later time than the previous call; calls at
        the same time (e.g. a simulator asking for a victim order among a subset) change nothing.
        Request objects are kept by reference and dropped once finished."""
        st = self._idle
        last = st.get("now")
        if last is not None and now_s < last:
            st.clear()
            last = None
        track = st.setdefault("track", {})
        if last is None or now_s > last:
            for rid in list(track):
                ent = track[rid]
                ref = ent[0]
                if ref.decoded >= ref.output_tokens and ref.prefilled >= ref.prompt_tokens:
                    del track[rid]
                    continue
                att = ref.attained_tokens
                if att == ent[1]:
                    ent[2] += 1
                else:
                    ent[1], ent[2] = att, 0
        st["now"] = now_s
        for r in requests:
            if r.rid not in track:
                track[r.rid] = [r, r.attained_tokens, 0]
        return track

    def order(self, requests: Sequence[RequestState], now_s: float) -> list[RequestState]:
        idle = self._update_idle(requests, now_s) if self.idle_steps is not None else None
        thr = self.threshold_s

        table = self.scores
        nt = -1 if table is None else table.size
        pred = self.predictor
        if pred is not None:
            cache = self._idle.setdefault("scores", {})
            if cache.get("__now__", -math.inf) > now_s:   # a new run: request ids are reused
                cache.clear()
            cache["__now__"] = now_s

        def key(r):
            if r.score is None and 0 <= r.rid < nt:
                sc = float(table[r.rid])
            elif r.score is None and pred is not None:
                sc = cache.get(r.rid)
                if sc is None:
                    sc = cache[r.rid] = float(pred(r))
            elif r.score is None and self.missing_score == "last":
                sc = math.inf
            elif r.score is None:
                raise ParameterError("score", None, f"a predictor score on every request (request {r.rid} has none)",
                                     "give the simulator scores, e.g. fluidq.predict.LengthRanker.score(prompts)")
            else:
                sc = float(r.score)
            aged = (thr is not None and now_s - r.arrival_s >= thr) or (
                idle is not None and idle[r.rid][2] >= self.idle_steps)
            return (0, r.arrival_s, 0.0, r.rid) if aged else (1, sc, r.arrival_s, r.rid)

        return sorted(requests, key=key)


# --------------------------------------------------------------------------- gamma-Boost
def b_gamma(w, gamma, *, w_min: float = 1e-6):
    """The gamma-Boost boost ``b_gamma(w) = (1/gamma) ln(1 / (1 - e^{-gamma w}))``.

    Computed as ``-log(-expm1(-gamma w)) / gamma`` for ``gamma w <= ln 2`` and as
    ``-log1p(-exp(-gamma w)) / gamma`` above, so that neither small nor large work loses digits.
    ``b_gamma`` is infinite at ``w = 0``; it is capped at ``b_gamma(w_min)`` for ``w <= w_min``
    (``w_min`` defaults to one microsecond), which keeps zero-work requests in arrival order.

    Parameters
    ----------
    w : float or array_like
        Work in seconds.
    gamma : float
        Boost rate in 1/s, ``> 0``.

    References
    ----------
    Yu & Scully, arXiv:2404.08826 (gamma-Boost); Li et al., arXiv:2606.18431 (UNIBOOST), §3.
    """
    gamma = real("gamma", gamma, positive=True)
    w_min = real("w_min", w_min, positive=True)
    x = gamma * np.maximum(np.asarray(w, dtype=float), w_min)
    with np.errstate(over="ignore", under="ignore"):
        small = x <= math.log(2.0)
        lo = np.log(-np.expm1(-np.where(small, x, 1.0)))
        hi = np.log1p(-np.exp(-np.where(small, 1.0, x)))
        out = -np.where(small, lo, hi) / gamma
    return float(out) if out.ndim == 0 else out


def _b_scalar(w: float, gamma: float, w_min: float) -> float:
    """Scalar :func:`b_gamma` without validation (hot path of the orderings)."""
    x = gamma * (w if w > w_min else w_min)
    if x <= 0.6931471805599453:
        return -math.log(-math.expm1(-x)) / gamma
    if x > 745.0:
        return 0.0
    return -math.log1p(-math.exp(-x)) / gamma


def solve_gamma(arrival_rate_per_s: float, service, *, gamma_hi: float | None = None) -> float:
    """The gamma of an M/G/1: the positive root of ``gamma = lambda (E[e^{gamma S}] - 1)``.

    Parameters
    ----------
    arrival_rate_per_s : float
        Poisson arrival rate ``lambda``.
    service : callable or array_like
        Either the moment generating function ``gamma -> E[e^{gamma S}]`` (``inf`` past its
        abscissa of convergence), or samples of the service time ``S`` in seconds.
    gamma_hi : float, optional
        Upper end of the search (default: found by doubling).

    Returns
    -------
    float
        ``gamma`` in 1/s.  For the M/M/1 this is ``mu - lambda``.

    Raises
    ------
    ParameterError
        When the load ``lambda E[S]`` is not below 1 (no positive root).
    """
    from scipy.optimize import brentq

    lam = real("arrival_rate_per_s", arrival_rate_per_s, positive=True)
    if callable(service):
        mgf: Callable = service
        h = 1e-7
        mean_s = (mgf(h) - mgf(0.0)) / h
    else:
        s = np.asarray(service, dtype=float)
        if s.ndim != 1 or s.size == 0 or not np.all(np.isfinite(s)) or np.any(s < 0):
            raise ParameterError("service", f"<{s.size} values>", "service-time samples >= 0 or an MGF callable")
        smax = float(s.max())

        def mgf(g):
            with np.errstate(over="ignore"):
                return float(np.mean(np.exp(g * (s - smax)))) * math.exp(g * smax) if g * smax < 700 else math.inf

        mean_s = float(s.mean())
    rho = lam * mean_s
    if not rho < 1:
        raise ParameterError("arrival_rate_per_s", arrival_rate_per_s,
                             f"a rate with load lambda E[S] < 1 (got {rho:.4g})", "no positive gamma exists")

    def f(g):
        m = mgf(g)
        return math.inf if not math.isfinite(m) else lam * (m - 1.0) - g

    lo = 1e-9 / max(mean_s, 1e-300)
    while f(lo) >= 0 and lo > 1e-300:  # pragma: no cover - tiny loads
        lo /= 10
    hi = gamma_hi if gamma_hi is not None else lo * 2
    while f(hi) < 0:
        lo, hi = hi, hi * 2
        if hi > 1e300:  # pragma: no cover
            raise ParameterError("service", "<distribution>", "a light-tailed service time (MGF finite near 0)")
    if not math.isfinite(f(hi)):
        # bisect the finite part: move hi down while the MGF is infinite but stays above lo
        a, b = lo, hi
        for _ in range(200):
            m = 0.5 * (a + b)
            v = f(m)
            if not math.isfinite(v) or v > 0:
                b = m
            else:
                a = m
            if math.isfinite(f(b)):
                break
        lo, hi = a, b
    return float(brentq(f, lo, hi, xtol=1e-14, rtol=1e-12, maxiter=500))


@dataclass(frozen=True, kw_only=True)
class GammaBoost(Ordering):
    """gamma-Boost priority ``Phi_i = a_i - b_gamma(w_i)``; the smallest ``Phi`` is served first.

    ``a_i`` is the arrival time and ``w_i`` the effective work in seconds: the per-token cost times
    the larger of the attained tokens and the prompt size (UNIBOOST-BASE's ``w~_i``, which puts
    prefill and decode in one priority space).  ``gamma -> inf`` is FCFS; small ``gamma`` favours
    requests with little work (LAS-like).

    Parameters
    ----------
    gamma_per_s : float
        Boost rate ``gamma`` in 1/s (``> 0``).
    token_cost_s : float
        Seconds of engine time per token (default: the paper's CodeLlama-34B/A100 fit at
        capacity, ``t(512)/512``); use :meth:`for_engine` for another engine.
    margin_s : float
        Hysteresis margin: a request that has started gets ``margin_s`` subtracted from its
        ``Phi``, so a newcomer must beat it by that much (``>= 0``).
    effective_work : bool
        ``True`` (UNIBOOST-BASE) uses ``max(attained, prompt)``; ``False`` the attained tokens only.
    w_min_s : float
        Work at which ``b_gamma`` is capped (see :func:`b_gamma`).

    References
    ----------
    Yu & Scully, arXiv:2404.08826; Li et al., "UNIBOOST", arXiv:2606.18431, §3-4.
    """

    gamma_per_s: float = 10.0
    token_cost_s: float = PAPER_TOKEN_COST_S
    margin_s: float = 0.0
    effective_work: bool = True
    w_min_s: float = 1e-6
    _bcache: dict = field(default_factory=dict, repr=False, compare=False)

    name = "gamma-boost"
    static = False

    def __post_init__(self):
        super().__post_init__()
        g = self.gamma_per_s
        if isinstance(g, (int, float)) and not isinstance(g, bool) and math.isfinite(g) and g <= 0:
            raise ParameterError("gamma_per_s", g, "a boost rate gamma > 0 in 1/s",
                                 "gamma -> inf is FCFS, small gamma is LAS-like")
        object.__setattr__(self, "gamma_per_s", real("gamma_per_s", self.gamma_per_s, positive=True))
        object.__setattr__(self, "token_cost_s", real("token_cost_s", self.token_cost_s, positive=True))
        object.__setattr__(self, "margin_s", real("margin_s", self.margin_s, nonnegative=True))
        object.__setattr__(self, "w_min_s", real("w_min_s", self.w_min_s, positive=True))

    @classmethod
    def for_engine(cls, engine, **kw):
        """A gamma-Boost whose per-token cost is ``1 / capacity`` of ``engine``: ``1 / sup_b b/t(b)`` over
        ``b <= b_max`` (what ``fluidq.max_throughput(engine).tokens_per_s`` reports, read here from the
        batch time so that the policy imports no analysis)."""
        return cls(token_cost_s=1.0 / _peak_rate(engine), **kw)

    @property
    def gamma(self) -> float:
        return self.gamma_per_s

    def work_tokens(self, r: RequestState) -> int:
        att = r.attained_tokens
        return max(att, r.prompt_tokens) if self.effective_work else att

    def phi(self, r: RequestState, now_s: float, work_tokens: float | None = None) -> float:
        """``Phi_i`` in seconds (smaller is served first)."""
        w = self.work_tokens(r) if work_tokens is None else work_tokens
        p = r.arrival_s - _b_scalar(w * self.token_cost_s, self.gamma, self.w_min_s)
        if self.margin_s and _started(r):
            p -= self.margin_s
        return p

    def _boosts(self) -> dict:
        """``{work tokens: b_gamma(work * cost)}`` for the current gamma (memo; integer work repeats)."""
        c = self._bcache
        g = self.gamma
        if c.get("__gamma__") != g:
            c.clear()
            c["__gamma__"] = g
        return c

    def order(self, requests, now_s):
        g, cost, wmin, margin, eff = self.gamma, self.token_cost_s, self.w_min_s, self.margin_s, self.effective_work
        b = _b_scalar
        memo = self._boosts()

        def key(r):
            att = r.prefilled + r.decoded
            w = (att if att > r.prompt_tokens else r.prompt_tokens) if eff else att
            bw = memo.get(w)
            if bw is None:
                bw = memo[w] = b(w * cost, g, wmin)
            p = r.arrival_s - bw
            if margin and att > 0:
                p -= margin
            return (p, r.arrival_s, r.rid)

        return sorted(requests, key=key)


# --------------------------------------------------------------------------- MEMGUARD
#: why MEMGUARD's first level stops at MAX_REQUEST_TOKENS (2**30)
MEMGUARD_K_WHY = ("a first level above the longest request fluidq accepts never lets a request cross it, so "
                  "MEMGUARD would never allow an eviction and reserve more memory than any cache holds")

@dataclass(frozen=True, kw_only=True)
class MemGuard(Ordering):
    """MEMGUARD: geometric work levels and no eviction before the next threshold.

    Attained work is quantized to the thresholds ``k, 2k, 4k, ...`` tokens: the base ordering
    (gamma-Boost, or any ordering with a ``phi(r, now_s, work_tokens)`` method) sees the threshold
    just below the true work, so priorities change only when a threshold is crossed.  For memory
    decisions the simulator asks :meth:`may_evict`: a request may be evicted only after its work has
    crossed a threshold it had not reached at its previous eviction, so a request of ``L`` tokens is
    evicted at most ``floor(log2(L / k)) + 1`` times.

    Parameters
    ----------
    base : Ordering
        The ordering to guard (default ``GammaBoost()``).
    k_tokens : int
        First threshold ``k`` in tokens, in [1, 2**30] (*fluidq's choice*: the paper's value could
        not be read; default 32).
    quantize : bool
        Feed the base ordering the quantized work (default ``True``).

    Notes
    -----
    Evictions are seen through :meth:`on_evict` when the simulator calls it, and otherwise
    inferred in :meth:`order` from a drop in a request's attained tokens (recompute).

    References
    ----------
    Li et al., "UNIBOOST", arXiv:2606.18431, MEMGUARD.
    """

    base: Ordering = field(default_factory=lambda: GammaBoost())
    k_tokens: int = 32
    quantize: bool = True
    _mem: dict = field(default_factory=dict, repr=False, compare=False)

    name = "memguard"
    static = False

    def __post_init__(self):
        super().__post_init__()
        if not isinstance(self.base, Ordering):
            raise ParameterError("base", self.base, "a fluidq Ordering (e.g. GammaBoost())")
        object.__setattr__(self, "k_tokens", integer("k_tokens", self.k_tokens, minimum=1, maximum=MAX_REQUEST_TOKENS,
                                                     why=MEMGUARD_K_WHY))

    def reset(self) -> None:
        self._mem.clear()
        if hasattr(self.base, "reset"):
            self.base.reset()

    def level(self, tokens: float) -> int:
        """Threshold index: ``-1`` below ``k``, else ``floor(log2(tokens / k))``."""
        t = int(tokens)
        return -1 if t < self.k_tokens else (t // self.k_tokens).bit_length() - 1

    def quantized(self, tokens: float) -> float:
        j = self.level(tokens)
        return tokens if j < 0 else float(self.k_tokens << j)

    def next_threshold(self, tokens: float) -> int:
        """The smallest threshold ``k 2^j`` strictly above ``tokens``."""
        return int(self.k_tokens << (self.level(tokens) + 1))

    @staticmethod
    def progress(r: RequestState) -> int:
        """Work that survives a recompute: original-prompt tokens prefilled plus tokens generated.

        (After a recompute preemption the simulator folds the generated tokens into the prompt,
        ``RequestState.recompute_tokens``; counting them twice would let the guard drift.)"""
        base = r.prompt_tokens - getattr(r, "recompute_tokens", 0)
        return min(r.prefilled, base) + r.decoded

    # per-request record: [peak progress, last progress, spent level, evictions]
    def _clock(self, now_s):
        st = self._mem
        last = st.get("__now__")
        if last is not None and now_s < last:
            st.clear()
        st["__now__"] = now_s
        return st

    def _track(self, r: RequestState, now_s: float | None = None):
        st = self._clock(now_s) if now_s is not None else self._mem
        att = self.progress(r)
        rec = st.get(r.rid)
        if rec is None:
            rec = st[r.rid] = [att, att, -1, 0]
            return rec
        if att < rec[1]:      # progress dropped: evicted (recompute) since we last looked
            self._mark_evicted(rec)
        if att > rec[0]:
            rec[0] = att
        rec[1] = att
        return rec

    def _mark_evicted(self, rec):
        rec[3] += 1
        lv = self.level(rec[0])
        if lv > rec[2]:
            rec[2] = lv

    def may_evict(self, r: RequestState, now_s: float) -> bool:
        """May the simulator evict ``r`` now (has it crossed a threshold since its last eviction)?"""
        rec = self._track(r, now_s)
        return self.level(rec[0]) > rec[2]

    def on_evict(self, r: RequestState, now_s: float) -> None:
        """The simulator evicted ``r`` (optional; call it before resetting ``r``'s progress)."""
        rec = self._track(r, now_s)
        self._mark_evicted(rec)
        rec[1] = 0  # the drop that follows (recompute) is this eviction, not another

    def guard_gap(self, r: RequestState) -> int:
        """KV tokens ``r`` still needs to reach the threshold that lets it be evicted (0 if evictable now)."""
        rec = self._track(r)
        if self.level(rec[0]) > rec[2]:
            return 0
        return max(0, (self.k_tokens << (rec[2] + 1)) - self.progress(r))

    def kv_reserve(self, requests, now_s: float) -> int:
        """Sum of :meth:`guard_gap` over admitted requests (those holding KV: some prompt prefilled).

        A batch former that keeps ``kv_free - kv_reserve`` non-negative when it admits new work lets
        every guarded request reach its next threshold, so the guard never has to be overridden.
        """
        return sum(self.guard_gaps(requests).values())

    def guard_gaps(self, requests) -> dict:
        """``{rid: guard_gap}`` for the admitted requests with a positive gap."""
        st = self._mem
        k = self.k_tokens
        out = {}
        for r in requests:
            if r.prefilled > 0:
                rec = st.get(r.rid)
                if rec is None:
                    rec = self._track(r)
                pk, spent = rec[0], rec[2]
                lv = -1 if pk < k else (int(pk) // k).bit_length() - 1
                if lv <= spent:
                    base = r.prompt_tokens - r.recompute_tokens
                    pf = r.prefilled
                    g = (k << (spent + 1)) - ((pf if pf < base else base) + r.decoded)
                    if g > 0:
                        out[r.rid] = g
        return out

    def evictions(self, rid: int) -> int:
        rec = self._mem.get(rid)
        return 0 if rec is None else int(rec[3])

    def order(self, requests, now_s):
        st = self._clock(now_s)
        k = self.k_tokens
        base = self.base
        for r in requests:                      # inline _track
            b0 = r.prompt_tokens - r.recompute_tokens
            pf = r.prefilled
            att = (pf if pf < b0 else b0) + r.decoded
            rec = st.get(r.rid)
            if rec is None:
                st[r.rid] = [att, att, -1, 0]
                continue
            if att < rec[1]:
                self._mark_evicted(rec)
            if att > rec[0]:
                rec[0] = att
            rec[1] = att
        if not self.quantize or not hasattr(base, "phi"):
            return base.order(requests, now_s)
        watch = getattr(base, "watch", None)
        if watch is not None:
            watch(requests, now_s)
        if isinstance(base, GammaBoost):
            g, cost, wmin, margin, eff = base.gamma, base.token_cost_s, base.w_min_s, base.margin_s, base.effective_work
            bs = _b_scalar
            memo = base._boosts()

            def key(r):
                att = r.prefilled + r.decoded
                w = (att if att > r.prompt_tokens else r.prompt_tokens) if eff else att
                if w >= k:
                    w = k << ((int(w) // k).bit_length() - 1)
                bw = memo.get(w)
                if bw is None:
                    bw = memo[w] = bs(w * cost, g, wmin)
                p = r.arrival_s - bw
                if margin and att > 0:
                    p -= margin
                return (p, r.arrival_s, r.rid)
        else:
            phi = base.phi

            def key(r):
                w = base.work_tokens(r) if hasattr(base, "work_tokens") else r.attained_tokens
                return (phi(r, now_s, self.quantized(w)), r.arrival_s, r.rid)

        return sorted(requests, key=key)

    def forget(self, rid: int) -> None:
        """Drop the memory of a finished request."""
        self._mem.pop(rid, None)


# --------------------------------------------------------------------------- gamma-Ada
@dataclass(frozen=True, kw_only=True)
class GammaAda(GammaBoost):
    """gamma-Boost with gamma adapted to the observed tail of response times.

    Response times (last token minus arrival) are taken from :meth:`observe` when the simulator
    calls it, and otherwise inferred in :meth:`order`: the request objects seen are kept by
    reference, and one found finished at a later call is taken as finished at that call's time
    (an over-estimate by at most one iteration).  Every ``update_every`` new observations, once
    ``min_samples`` are available, the P95 and P99 of the last ``window`` are computed and gamma
    moves towards a target (``gamma_new = (1 - beta) gamma + beta target``, clamped to
    ``[gamma_min, gamma_max]``):

    * ``estimator="slope"``: ``target = ln 5 / (t99 - t95)`` (the tail decay rate of an
      exponential tail, since ``P(T > t95) / P(T > t99) = 5``);
    * ``estimator="ratio"``: ``target = gamma_max / (1 + 4 max(t99/t95 - 1, 0))``.

    Large gamma is FCFS-like (protects the tail), small gamma LAS-like (helps the mean).

    Parameters
    ----------
    estimator : {"slope", "ratio"}
    gamma_min, gamma_max : float
        Clamp in 1/s (default 1 and 200).
    beta : float
        Smoothing weight in (0, 1] (default 0.3).
    gamma_per_s : float
        Initial gamma (default ``gamma_max``: start FCFS-like).

    References
    ----------
    Li et al., "UNIBOOST", arXiv:2606.18431, gamma-Ada.
    """

    gamma_per_s: float = 200.0
    estimator: str = "ratio"
    gamma_min: float = 1.0
    gamma_max: float = 200.0
    beta: float = 0.3
    window: int = 2000
    min_samples: int = 100
    update_every: int = 50
    _ada: dict = field(default_factory=dict, repr=False, compare=False)

    name = "gamma-ada"

    def __post_init__(self):
        super().__post_init__()
        if self.estimator not in ("slope", "ratio"):
            raise ParameterError("estimator", self.estimator, "'slope' or 'ratio'")
        lo = real("gamma_min", self.gamma_min, positive=True)
        hi = real("gamma_max", self.gamma_max, positive=True)
        if not lo < hi:
            raise ParameterError("gamma_min", lo, f"a value below gamma_max={hi}")
        b = real("beta", self.beta, positive=True)
        if b > 1:
            raise ParameterError("beta", b, "a smoothing weight in (0, 1]")
        for nm in ("window", "min_samples", "update_every"):
            object.__setattr__(self, nm, integer(nm, getattr(self, nm), minimum=1))
        self.reset()

    def reset(self) -> None:
        self._ada.clear()
        self._ada.update(gamma=min(max(self.gamma_per_s, self.gamma_min), self.gamma_max),
                         samples=deque(maxlen=self.window), new=0, seen={}, now=None, last_step=None,
                         history=[])

    @property
    def gamma(self) -> float:  # type: ignore[override]
        return self._ada["gamma"]

    @property
    def history(self) -> list:
        """``(time_s, gamma)`` after each update."""
        return list(self._ada["history"])

    def target(self, t95: float, t99: float) -> float:
        """The estimator's target gamma for tail percentiles ``t95 <= t99`` (seconds)."""
        if self.estimator == "slope":
            gap = t99 - t95
            return self.gamma_max if gap <= 0 else math.log(5.0) / gap
        ratio = t99 / t95 if t95 > 0 else 1.0
        return self.gamma_max / (1.0 + 4.0 * max(ratio - 1.0, 0.0))

    def observe(self, response_s: float, now_s: float | None = None) -> None:
        """Record one response time (seconds); once called, departures are no longer inferred."""
        self._ada["explicit"] = True
        self._record(response_s, now_s)

    def _record(self, response_s: float, now_s: float | None) -> None:
        st = self._ada
        st["samples"].append(float(response_s))
        st["new"] += 1
        if st["new"] >= self.update_every and len(st["samples"]) >= self.min_samples:
            st["new"] = 0
            t95, t99 = np.percentile(np.fromiter(st["samples"], float), [95, 99])
            g = (1 - self.beta) * st["gamma"] + self.beta * self.target(float(t95), float(t99))
            st["gamma"] = min(max(g, self.gamma_min), self.gamma_max)
            st["history"].append((now_s, st["gamma"]))

    def watch(self, requests, now_s) -> None:
        """Infer completions from the resident set (called by :meth:`order`, and by MemGuard)."""
        st = self._ada
        if st["now"] is not None and now_s < st["now"]:
            self.reset()
            st = self._ada
        st["now"] = now_s
        if st.get("explicit") is None and (st["last_step"] is None or now_s > st["last_step"]):
            st["last_step"] = now_s
            seen = st["seen"]
            for rid in list(seen):
                ref = seen[rid]
                if ref.decoded >= ref.output_tokens and ref.prefilled >= ref.prompt_tokens:
                    del seen[rid]
                    self._record(now_s - ref.arrival_s, now_s)
        for r in requests:
            st["seen"].setdefault(r.rid, r)

    def order(self, requests, now_s):
        self.watch(requests, now_s)
        return GammaBoost.order(self, requests, now_s)

    def phi(self, r, now_s, work_tokens=None):
        w = self.work_tokens(r) if work_tokens is None else work_tokens
        p = r.arrival_s - _b_scalar(w * self.token_cost_s, self.gamma, self.w_min_s)
        return p - self.margin_s if self.margin_s and _started(r) else p


# --------------------------------------------------------------------------- names
def _factories():
    return {"fcfs": FCFS, "sjf": SJF, "srpt": SRPT, "las": LAS, "pars": PARS, "gamma-boost": GammaBoost,
            "memguard": MemGuard, "gamma-ada": GammaAda}


ORDERING_NAMES = ("fcfs", "sjf", "srpt", "las", "pars", "gamma-boost", "memguard", "gamma-ada")


def resolve_ordering(order, name: str = "order", **kw) -> Ordering:
    """An ordering from a name (``"pars"``, ``"gamma-boost"``...) or an :class:`Ordering`."""
    from ..errors import UnknownNameError

    if isinstance(order, Ordering):
        return order
    if isinstance(order, str):
        key = order.strip().lower().replace("_", "-")
        key = {"gammaboost": "gamma-boost", "boost": "gamma-boost", "gamma-adapt": "gamma-ada",
               "ada": "gamma-ada", "oracle-sjf": "sjf"}.get(key, key)
        f = _factories().get(key)
        if f is None:
            raise UnknownNameError(name, order, ORDERING_NAMES)
        return f(**kw)
    raise ParameterError(name, order, "an ordering name or a fluidq Ordering", f"names: {', '.join(ORDERING_NAMES)}")
