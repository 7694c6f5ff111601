"""``simulate``: the iteration-level discrete-event simulation of one engine."""
from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np

from .._validate import check_rng, integer, real, seed_sequence
from ..batchtime import ContextAware
from ..batchtime.composition import takes_bound
from ..engine import Engine
from ..errors import ParameterError
from ..policies import resolve_policy
from ..policies.orderings import Ordering
from ..policies.schedulers import Scheduler
from ..workload import Gamma, Workload
from ._fast import run_fast
from ..kernel.clock import KERNEL_TABLE_MAX
from ..kernel.memory import _may_evict_hook
from ..kernel.step import PolicyError, run_generic
from .result import SimResult

__all__ = ["MAX_ARRIVALS", "MAX_ITERATIONS", "MAX_RUNS", "MAX_TOTAL_ARRIVALS", "MIN_HORIZON_S", "PolicyError", "check_size",
           "fast_path_applies", "run_size", "simulate"]

#: Most arrivals one run may have (each costs about 100 bytes of per-request records, and the kernels
#: keep them in Python lists: 2e7 arrivals need a few GB).
MAX_ARRIVALS = 20_000_000
#: Most iterations one run may take (the clock advances once per iteration on both kernels).
MAX_ITERATIONS = 100_000_000
#: Most arrivals over all the runs of one call (replications x loads x policies).
MAX_TOTAL_ARRIVALS = 100_000_000
#: Most runs of one call (replications): each is kept for the verdict.
MAX_RUNS = 100_000
#: Shortest horizon: a shorter run serves nothing and its backlog slope cannot be fitted.
MIN_HORIZON_S = 1e-6
#: Longest run, in shortest batch times: beyond 2**36 of them the clock (a float) cannot resolve a
#: batch time to better than 2**-16 of itself.
MAX_CLOCK_STEPS = 2 ** 36
#: Gamma arrivals: coefficients of variation that sampling can represent (the shape is 1/cv^2; above
#: about 20 nearly every gap is 0.0 in floating point and drawing a horizon's arrivals may not end).
GAMMA_CV_RANGE = (1e-3, 20.0)


def fast_path_applies(policy, engine: Engine, preemption: str | None = None) -> tuple[bool, str]:
    """Whether the compiled kernel can run ``policy`` on ``engine``, and why not if not.

    It runs the built-in :class:`~fluidq.policies.Scheduler` (any priority / mixing / chunking /
    ``chunk_long_prompts`` / budgets) with an ordering that keeps arrival order (FCFS), whose batch
    time is a function of batch tokens (and KV):

    * without a KV-cache capacity: the event-skipping kernel (:mod:`fluidq.kernel.fcfs`), when the
      first token takes a decode iteration, scheduling is synchronous and the batch time is one of the
      batch's tokens (and KV); otherwise (a first token emitted with the prefill, async scheduling, a
      composition batch time) the kernel with memory below, with a cache that never binds
      (:data:`UNBOUNDED_KV`: it gives the generic path's requests, backlog, iterations and records,
      tests/sim/test_sim_nokv_kernel.py), a context-aware batch time with the first token from the prefill
      included: every path charges a decoder's context as the KV it holds (without a cache, prompt + generated
      tokens less the prefill's first token, whose KV is cached only at the next step);
    * with ``kv_capacity_tokens``: the kernel with memory (:mod:`fluidq.kernel.kv`: iterations formed
      one by one under the memory rules, the decoders on a virtual clock), under the default token
      rules or paged rules (prefix caching included), with recompute or swap preemption (``preemption``
      overrides ``engine.memory.preemption``), an ordering without ``may_evict``, any budget ``b_max``
      (above :data:`EAGER_TAU_TOKENS` tokens the kernel's batch-time table is tabulated up to the run's
      largest possible batch, :func:`_kernel_tau_table`) and blocks of at most :data:`KV_KERNEL_MAX_BLOCK`
      tokens (the kernel keeps one count per token offset in a block: larger blocks run on the generic
      path, with a :class:`~fluidq.kernel.KernelLimitWarning`); a batch
      time that reads the batch composition (:class:`~fluidq.batchtime.composition.Composition`) when its
      model exports a ``kernel_table()`` (the operator-profile models, tensor/expert/pipeline parallel and MoE
      included, and data-parallel MoE ranks in lockstep: the kernel evaluates it compiled,
      :mod:`fluidq.kernel.compose`), a first token emitted with the prefill and async scheduling too.
      Composition models without a table (fitted ones, lockstep ranks of a count not a power of two) run on the
      generic path, with identical rules.
    """
    if not isinstance(policy, Scheduler) or type(policy).select is not Scheduler.select:
        return False, "not a built-in Scheduler (runs policy.select every iteration)"
    order = policy.order
    if type(order).order is not Ordering.order:
        return False, f"ordering {order.name!r} is not arrival order"
    composition = callable(getattr(engine.batch_time, "composition_time", None))
    if composition and _compose_table(engine) is None:
        return False, ("a composition batch time whose model has no kernel table (a fitted model, lockstep ranks "
                       "of a count not a power of two) runs on the generic path")
    if engine.kv_capacity_tokens is None:
        if not _needs_kv_kernel(engine):
            return True, "built-in scheduler with FCFS order"
        return True, ("built-in scheduler with FCFS order, in the kernel with memory (a cache that never binds, "
                      "stepped per iteration)")
    mem = engine.memory
    if _may_evict_hook(policy) is not None:
        return False, "an ordering with may_evict runs on the generic path"
    if mem.block_size > KV_KERNEL_MAX_BLOCK:  # the kernel counts decoders by their offset in a block
        return False, (f"KV blocks of {mem.block_size} tokens (above {KV_KERNEL_MAX_BLOCK}: the compiled kernel "
                       "keeps one count per offset in a block) run on the generic path")
    return True, "built-in scheduler with FCFS order, KV memory in the kernel (stepped per iteration)"


def _needs_kv_kernel(engine: Engine) -> bool:
    """Whether an engine without a KV cache needs the kernel with memory (the event-skipping kernel models neither
    a first token from the prefill, nor async scheduling, nor a composition batch time)."""
    return bool(engine.prefill_emits_token or engine.async_scheduling
                or callable(getattr(engine.batch_time, "composition_time", None)))


def _compose_table(engine: Engine):
    """The composition batch time's flat table for the kernel (``kernel_table()``, covering the batches of the
    engine's token budget), or ``None``."""
    f = getattr(engine.batch_time, "kernel_table", None)
    if not callable(f):
        return None
    return f(max_batch_tokens=engine.b_max) if takes_bound(type(engine.batch_time)) else f()


def _shortest_batch_s(engine: Engine) -> float:
    bt = engine.batch_time.base if isinstance(engine.batch_time, ContextAware) else engine.batch_time
    try:
        t1 = float(np.min(np.asarray(bt(np.array([1.0, float(engine.b_max)])), dtype=float)))
    except Exception:  # noqa: BLE001 - a user's batch time: _tau_table reports it
        return math.nan
    return t1


def run_size(engine: Engine, workload, horizon_s: float | None = None, n_requests: int | None = None) -> dict:
    """The expected size of one run: ``{"arrivals", "duration_s", "iterations"}`` (floats; may be inf).

    ``arrivals`` is ``rate x horizon_s`` (or ``n_requests``, or the explicit rows); ``duration_s`` the
    simulated time (the horizon, or ``n_requests / rate``); ``iterations`` an upper bound: at most
    one per shortest batch time ``t(1)`` of the duration, and at most one per token of work (every
    iteration serves at least one).  Nothing is sampled.
    """
    t1 = _shortest_batch_s(engine)
    if isinstance(workload, Workload):
        rate = workload.arrival_rate_per_s
        with np.errstate(over="ignore"):
            arrivals = rate * horizon_s if horizon_s is not None else math.inf
            if n_requests is not None:
                arrivals = min(arrivals, float(n_requests))
            if workload.replays_trace:
                arrivals = min(arrivals, float(len(workload.trace)))
            duration = horizon_s if horizon_s is not None else arrivals / rate
            tokens = arrivals * workload.mean_tokens
    elif isinstance(workload, Mapping):
        try:
            a = np.asarray(workload["arrival_s"], dtype=float)
            tok = float(np.sum(workload["prompt_tokens"]) + np.sum(workload["output_tokens"]))
        except (KeyError, TypeError, ValueError):
            return {"arrivals": 0.0, "duration_s": 0.0, "iterations": 0.0}  # _requests names the problem
        if a.ndim != 1 or not np.all(np.isfinite(a)):  # (an inf or NaN time: _requests names the entry, not the size)
            return {"arrivals": 0.0, "duration_s": 0.0, "iterations": 0.0}
        arrivals = float(a.size)
        duration = horizon_s if horizon_s is not None else (float(np.max(a)) if a.size else 0.0)
        tokens = tok
    else:
        return {"arrivals": 0.0, "duration_s": 0.0, "iterations": 0.0}
    steps = duration / t1 + 1 if t1 > 0 else math.inf
    return {"arrivals": float(arrivals), "duration_s": float(duration), "iterations": float(min(steps, tokens + 1))}


def check_size(engine: Engine, workload, horizon_s: float | None = None, n_requests: int | None = None, *,
               runs: int = 1, policies: int = 1, names: Mapping | None = None, blame: tuple | None = None) -> dict:
    """Refuse, before any work, a run too large to simulate; return :func:`run_size`.

    Limits: :data:`MAX_ARRIVALS` arrivals and :data:`MAX_ITERATIONS` iterations per run,
    :data:`MAX_TOTAL_ARRIVALS` over ``runs`` runs of each of ``policies`` policies, a horizon of at least :data:`MIN_HORIZON_S` and a
    duration of at most :data:`MAX_CLOCK_STEPS` shortest batch times.  The error names the
    parameter (``names`` maps ``"horizon_s"``, ``"n_requests"``, ``"runs"`` to the caller's names, e.g.
    CLI flags; ``blame=(name, value)`` names another parameter for too many arrivals or iterations,
    e.g. the rate the user gave) and says the size the run would have.
    """
    nm = {"horizon_s": "horizon_s", "n_requests": "n_requests", "runs": "runs", **(names or {})}
    if horizon_s is not None and horizon_s < MIN_HORIZON_S:
        raise ParameterError(nm["horizon_s"], horizon_s, f"a horizon >= {MIN_HORIZON_S:g} s",
                             "a shorter run serves nothing (no batch ends within it) and its backlog slope "
                             "cannot be fitted")
    size = run_size(engine, workload, horizon_s, n_requests)
    who, val = blame or ((nm["horizon_s"], horizon_s) if horizon_s is not None else (nm["n_requests"], n_requests))
    rate = workload.arrival_rate_per_s if isinstance(workload, Workload) else None
    at = f" at {rate:.4g} req/s" if rate is not None else ""
    if not size["arrivals"] <= MAX_ARRIVALS:
        raise ParameterError(who, val, f"a run of at most {MAX_ARRIVALS:,} arrivals",
                             f"it would have {_n(size['arrivals'])} arrivals{at} over {_n(size['duration_s'])} s; "
                             "shorten the run or lower the rate")
    t1 = _shortest_batch_s(engine)
    if t1 > 0 and not size["duration_s"] <= MAX_CLOCK_STEPS * t1:
        raise ParameterError(who, val, f"a run of at most {MAX_CLOCK_STEPS * t1:.3g} simulated seconds "
                             f"(2^36 shortest batch times t(1) = {t1:.3g} s)",
                             f"it would last {_n(size['duration_s'])} s{at}, too long for the clock to resolve "
                             "a batch time")
    if not size["iterations"] <= MAX_ITERATIONS:
        raise ParameterError(who, val, f"a run of at most {MAX_ITERATIONS:,} iterations",
                             f"it could take {_n(size['iterations'])} iterations ({_n(size['duration_s'])} s of "
                             f"batches of at least {t1:.3g} s, {_n(size['arrivals'])} arrivals); shorten the run")
    runs = integer(nm["runs"], runs, minimum=1, maximum=MAX_RUNS, why="every run is kept in memory")
    policies = integer("policies", policies, minimum=1)
    total = runs * policies * size["arrivals"]
    if runs * policies > 1 and not total <= MAX_TOTAL_ARRIVALS:
        each = f" for each of {policies} policies" if policies > 1 else ""
        raise ParameterError(nm["runs"], runs, f"at most {MAX_TOTAL_ARRIVALS:,} arrivals over all runs",
                             f"{runs:,} run{'s' if runs > 1 else ''} of {_n(size['arrivals'])} arrivals{each} would "
                             f"have {_n(total)}; fewer runs{', fewer policies' if policies > 1 else ''} or shorter "
                             "ones")
    return size


def _n(x: float) -> str:
    """A size for a message: ``1.5e+27``, or ``more than 1.8e+308`` where it overflowed."""
    return f"{x:.3g}" if math.isfinite(x) else "more than 1.8e+308"


def check_gamma_cv(cv, name: str = "cv") -> float:
    """``cv`` of :class:`~fluidq.Gamma` arrivals, refused outside :data:`GAMMA_CV_RANGE`."""
    lo, hi = GAMMA_CV_RANGE
    return real(name, cv, minimum=lo, maximum=hi,
                why=f"gamma inter-arrival times of shape 1/cv^2 can be drawn for cv in [{lo:g}, {hi:g}]: below, "
                    "they are periodic (use periodic arrivals); above, nearly every gap is 0 in floating point")


def _requests(workload, rng, horizon_s, n_requests, residents: bool = False):
    if isinstance(workload, Workload):
        return workload.sample(rng, horizon_s=horizon_s, n=n_requests)
    if isinstance(workload, Mapping):
        from ..workload.traces import column  # the rules a trace file's cells follow (one copy)

        try:
            cols = [workload[k] for k in ("arrival_s", "prompt_tokens", "output_tokens")]
        except KeyError as exc:
            raise ParameterError("workload", "<mapping>", "keys arrival_s, prompt_tokens, output_tokens") from exc
        a = column("workload['arrival_s']", cols[0], tokens=False)
        p = column("workload['prompt_tokens']", cols[1], tokens=True)
        d = column("workload['output_tokens']", cols[2], tokens=True)
        if not (a.shape == p.shape == d.shape):
            raise ParameterError("workload", "<mapping>", "1-d columns of equal length",
                                 f"lengths {a.size}, {p.size}, {d.size}")
        if not a.size and not residents:  # (with ``initial`` residents, no arrival is a run)
            raise ParameterError("workload", "<mapping of empty columns>", "at least one request",
                                 "or residents given by initial")
        if n_requests is not None and n_requests > a.size:
            raise ParameterError("n_requests", n_requests, f"at most the {a.size:,} rows of the workload's columns",
                                 "the columns are not repeated")
        if a.size and (np.any(np.diff(a) < 0) or not np.all(np.isfinite(a)) or a[0] < 0):
            raise ParameterError("workload['arrival_s']", "<unsorted or negative>", "sorted finite times >= 0")
        if np.any(p < 1) or np.any(d < 1):
            raise ParameterError("workload", "<lengths below one token>", "prompt and output tokens >= 1")
        keep = np.ones(a.size, bool)
        if horizon_s is not None:
            keep &= a <= horizon_s
        a, p, d = a[keep], p[keep], d[keep]
        if n_requests is not None:
            a, p, d = a[:n_requests], p[:n_requests], d[:n_requests]
        return a, p, d
    raise ParameterError("workload", workload, "a fluidq.Workload or a mapping of arrival_s, prompt_tokens, "
                         "output_tokens arrays")


_check_rng = check_rng  # (the names this module had; fluidq._validate holds them for every layer)
_seed_sequence = seed_sequence


#: the largest KV block (tokens) the compiled kernel with memory takes: it keeps one count per token offset in a
#: block (an int64 array of ``block_size`` entries, allocated per run), so a block of 2**16 tokens costs 0.5 MB and
#: the ``kv_capacity_tokens``-sized blocks an engine may declare (up to 1e12) would not fit in memory; larger
#: blocks run on the generic path, with a :class:`~fluidq.kernel.KernelLimitWarning`
KV_KERNEL_MAX_BLOCK = 1 << 16

#: the KV capacity the kernel with memory is given for an engine without a KV cache (the first token with the
#: prefill, async scheduling, a composition batch time): no run holds as many tokens, so the memory never binds
#: (nothing is preempted, rejected or held back; the kernel's sums of tokens stay far below 2**63)
UNBOUNDED_KV = 1 << 62

#: budgets up to this many tokens get their batch times tabulated in full before a run (a list index
#: per iteration); larger ones fill a table lazily with the batch sizes the run meets (a list of 2**24
#: times took about 7 s to build for every policy and load); the same bound as the network kernel's dense tables,
#: :data:`fluidq.kernel.clock.KERNEL_TABLE_MAX`
EAGER_TAU_TOKENS = KERNEL_TABLE_MAX


class _LazyTau(dict):
    """``tau[b]`` for ``b = 1..b_max``: the batch time of ``b`` tokens, computed on first use."""

    def __init__(self, bt, b_max):
        super().__init__()
        self.bt, self.b_max = bt, b_max

    def __missing__(self, b):
        v = float(np.asarray(self.bt(np.array([float(b)])), dtype=float)[0])
        if not (math.isfinite(v) and v > 0):
            raise ParameterError("engine.batch_time", self.bt, f"batch times > 0 for 1..b_max tokens (t({b}) = {v!r})")
        self[b] = v
        return v


def _tau_table(engine: Engine):
    bt = engine.batch_time
    ks = 0.0
    if isinstance(bt, ContextAware):
        ks = float(bt.kv_s_per_token)
        bt = bt.base
    if engine.b_max > EAGER_TAU_TOKENS:
        probe = np.asarray(bt(np.array([1.0, float(engine.b_max)])), dtype=float)  # the ends, checked now
        if not np.all(np.isfinite(probe)) or np.any(probe <= 0):
            raise ParameterError("engine.batch_time", bt, "batch times > 0 for 1..b_max tokens")
        return _LazyTau(bt, engine.b_max), ks
    b = np.arange(1, engine.b_max + 1, dtype=float)
    tab = np.asarray(bt(b), dtype=float)
    if not np.all(np.isfinite(tab)) or np.any(tab <= 0):
        raise ParameterError("engine.batch_time", bt, "batch times > 0 for 1..b_max tokens")
    return [math.nan] + tab.tolist(), ks


def _kernel_tau_table(engine: Engine, P, D):
    """The batch-time table of the kernel with memory, which needs one in full (:func:`fluidq.kernel.run_fcfs_kv`):
    :func:`_tau_table`'s, and above :data:`EAGER_TAU_TOKENS` tokens an array of the batch times of
    ``0..m`` tokens (NaN at 0) with ``m = min(b_max, sum(P + D))``: no batch holds more tokens than the run's
    requests have (a prefill chunk is at most a request's remaining prompt -- after a recomputation its prompt
    plus the tokens generated, at most ``P + D`` -- and a decode step one token of its output), and the kernel
    reads the table only at a batch's tokens.  Both ends of ``1..b_max`` are checked as the lazy table does; each
    entry is the element-wise value the generic path's lazy table computes one at a time."""
    tau, ks = _tau_table(engine)
    if not isinstance(tau, _LazyTau):
        return tau, ks
    bt = tau.bt  # (the base of a context-aware batch time; both ends checked by _tau_table)
    m = int(min(engine.b_max, max(1, int(np.sum(P, dtype=np.int64)) + int(np.sum(D, dtype=np.int64)))))
    tab = np.empty(m + 1)
    tab[0] = math.nan
    tab[1:] = np.asarray(bt(np.arange(1, m + 1, dtype=float)), dtype=float)
    if not np.all(np.isfinite(tab[1:])) or np.any(tab[1:] <= 0):
        raise ParameterError("engine.batch_time", bt, "batch times > 0 for 1..b_max tokens")
    return tab, ks


def simulate(engine: Engine, workload, policy="sarathi", horizon_s: float | None = None,
             n_requests: int | None = None, rng=None, *, record_iterations: bool = False,
             record_batches: bool = False, method: str = "auto", check_batches: bool | None = None,
             preemption: str | None = None, swap_s_per_token: float | None = None, warmup_s: float = 0.0,
             initial=(), progress=None, record: str = "full") -> SimResult:
    """Simulate one LLM engine iteration by iteration.

    Parameters
    ----------
    engine : Engine
        Batch-time model and budgets (``b_max``, ``k_max``, ``kv_capacity_tokens``).  A
        :class:`~fluidq.ContextAware` batch time is charged ``t(b, kv)`` with ``kv`` the sum of the
        contexts of the decoding requests in the batch: the KV tokens each holds before the step (prompt +
        generated tokens; with ``prefill_emits_token``, less the first token, whose KV is cached only at
        the step after the prefill that sampled it -- vLLM's ``num_computed_tokens``), with or without a cache.
    workload : Workload or mapping
        Arrivals and lengths, or explicit columns ``arrival_s``, ``prompt_tokens``, ``output_tokens``.
    policy : str or Policy
        A scheduler name (``"sarathi"``, ``"orca"``, ``"vllm"``, ``"fastertransformer"``,
        ``"vllm-chunked"``) or any object with ``select(view) -> Batch``.
    horizon_s : float, optional
        Arrivals up to and the run until this time: the iteration in progress at ``horizon_s`` is
        completed, so requests finishing in it get their finish time (a little past the horizon) and
        count in ``n_finished``; unfinished requests have NaN finish times.  No iteration starts at
        or after ``horizon_s``.  :func:`fluidq.simulate_network` means the same by its horizon.
    n_requests : int, optional
        Number of arrivals; without a horizon the run continues until all have finished (or no
        policy decision can make progress).
    rng : None, int, SeedSequence or Generator
        Randomness of the arrivals and lengths (an int seed must be >= 0).
    record_iterations : bool
        Keep one record per iteration (see :class:`SimResult`).
    record_batches : bool
        Keep every :class:`~fluidq.policies.Batch` run (the ``select()`` paths only: the compiled FCFS loops do
        not form Batch objects, so it takes a built-in FCFS scheduler off them).
    method : {"auto", "fast", "generic"}
        ``"auto"`` runs the compiled kernel when :func:`fast_path_applies` (the event-skipping kernel
        without memory; with ``kv_capacity_tokens``, or without it for a first token from the prefill, async
        scheduling or a composition batch time, the kernel with memory, stepped per iteration, when numba
        compiles it -- without numba that run takes the generic path, with one
        :class:`~fluidq.kernel.KernelNotCompiledWarning`), else the generic path; both give identical requests
        (every time), counts and iterations on the built-in schedulers (without a KV cache the event-skipping
        kernel may sample the backlog series and call ``progress`` at other instants).  ``"fast"`` insists on the kernel (run as Python where numba is missing).
        Where ``policy.select`` runs every iteration (user policies, orderings other than FCFS, and the built-in
        FCFS schedulers with ``initial`` residents or ``record_batches``) ``"auto"`` runs the ``select()`` loop on
        the kernel's arrays (:mod:`fluidq.kernel.select`, identical results) where numba compiles it, for an engine
        without a KV cache or with one (any memory rules: token, paged, prefix caching), synchronous or async
        scheduling, ``initial`` residents, ``record_batches``, records and progress; without numba ``"auto"`` keeps
        the Python reference :class:`fluidq.kernel.step.EngineRun` (the array loop uncompiled is the slower of the
        two).  ``"fast"`` runs that loop compiled, or as plain Python where numba is missing (with the one-line
        :class:`~fluidq.kernel.KernelNotCompiledWarning`); ``"generic"`` runs EngineRun.  What the ``select()``
        loop leaves to EngineRun (``"fast"`` refuses it): ``initial`` residents in a state a run does not reach
        (finished, or with decoded tokens before the prompt is done) and a built-in FCFS scheduler's window (its
        view of the queue, where no compiled loop runs it).  The result's ``method`` is ``"fast"`` when a compiled
        loop (or the select loop) ran, ``"generic"`` when EngineRun did.
    check_batches : bool, optional
        Check every batch against (6a)-(6d), ``b_max`` and ``k_max``, and the fields of its requests
        against the engine's (a policy must not write them), and raise :class:`PolicyError` on a
        violation (default: on for policies that are not built-in schedulers).  Off, only the budgets
        (``b_max``, ``k_max``) and that comparison of the fields are skipped: what no engine can run
        (:func:`~fluidq.policies.base.batch_faults`: entries that are not whole numbers, ids that are
        not residents', ``blocked`` included, a chunk below one token or past the prompt, a request twice
        in the prefill part, a decode of a request in its prompt or finished, two decodes of one
        request) is a :class:`PolicyError` on every path, check on or off.  A policy that writes its
        requests' fields (``prompt_tokens``, ``output_tokens``, ``prefilled``, ``decoded``) with the check
        off gets different runs on the two paths, not a check: ``"generic"`` (EngineRun) keeps the engine's
        state in those objects, so the written values ARE its run (``output_tokens = 1`` finishes a request
        after one token); the ``select()`` loop (``"auto"``/``"fast"``) keeps it in its arrays and only shows
        the objects to the policy, so a write changes nothing it runs but the policy's own choices -- it raises
        the :class:`PolicyError` naming the field when its compiled check flags a batch whose requests were
        written, and the idle error (an empty batch while, by its arrays, requests wait with work left and
        nothing more arrives) rather than ending with that work undone.  With the check on, every path raises
        on the first written field of a batch's request.
    preemption : {"recompute", "swap"}, optional
        What a KV-cache preemption costs (only with ``engine.kv_capacity_tokens``); default the
        engine's ``memory.preemption`` (``"recompute"`` unless set), which this overrides.
    swap_s_per_token : float, optional
        Seconds per KV token moved by a swap (out or in); required for ``preemption="swap"``.
    warmup_s : float
        Requests arriving before this time are left out of :attr:`SimResult.metrics`; must be below
        ``horizon_s`` (or, without a horizon, at most the last arrival time).
    initial : sequence of RequestState
        Requests already in the engine at time 0 (the ``select()`` paths), e.g. to replay the paper's Fig. 8.
    progress : callable, optional
        ``progress(t_s, arrivals_so_far)`` called about every simulated second (the CLI's bar).
    record : {"full", "summary"}
        ``"full"``: the :class:`SimResult` with every request's times and the backlog series.
        ``"summary"``: a :class:`~fluidq.sim.result.SimSummary` (``summary()``, ``metrics``, ``inputs``,
        no per-request or per-event array), for sweeps that keep many runs.  Where the event-skipping
        kernel runs (a built-in scheduler in FCFS order, no KV capacity, :func:`fast_path_applies`) the
        run is *streamed* in bounded memory: the requests are drawn chunk by chunk
        (:meth:`~fluidq.Workload.sample_chunks`), the kernel runs in segments and hands back finished
        requests (:func:`fluidq.kernel.run.run_fcfs_segments`), and the figures are folded as they come,
        so the memory is bounded by the requests in the system plus a chunk of 65,536 (when the run is
        unstable, by the requests in the system, which grow).  Such a summary is **not** the full run with
        the same seed: its sample is another draw from the same distribution (equal in distribution).  On
        the same sample (explicit rows, or ``sample_chunks`` of the seed given to a full run as rows) it
        equals the full run: counts, times, iterations, throughputs, busy and mixed fractions, final
        backlogs and maxima exactly; means up to rounding (relative 1e-9); the P50/P90/P99 of the metrics
        from log-spaced bins, within 0.5 % (relative) of the full run's; and ``token_backlog_slope_per_s``
        is fitted on the backlog at the points ``i * 2**m`` seconds in ``[end_s / 2, end_s]`` (512 to
        1024 of them; ``2**m`` is ``streamed["backlog_slope_grid_s"]``) instead of 200 evenly spaced points
        (tests/sim/test_summary_stream.py checks each claim).  ``SimSummary.streamed`` says so.  Other runs
        (KV memory, user policies, the generic path, ``initial``) are run in full and summarised: equal to
        the full run with the same seed (``streamed`` is None), with the full run's peak memory.

    Returns
    -------
    SimResult or SimSummary

    Notes
    -----
    **KV-cache memory** (``engine.kv_capacity_tokens``; in the compiled kernel for the built-in FCFS
    schedulers, else on the generic path, with identical results).  A resident request holds
    one KV token per processed prompt token and per generated token.  A new request is admitted
    only when its whole remaining prompt fits with one token of headroom per request already
    holding KV; admission is head-of-line in the policy's order.  When the decode tokens of a batch
    do not fit, the last request in the policy's ordering that holds KV is preempted -- unless the
    ordering defines ``may_evict(request, now_s) -> bool`` and returns False for it (the hook for
    MEMGUARD-like orderings; if every candidate refuses, decode tokens are dropped first and a
    refusing request is evicted only when nothing else could run).  ``preemption="recompute"``
    discards the KV (counted in ``wasted_tokens``; the request must prefill its prompt plus its
    generated tokens again, and its :class:`~fluidq.policies.RequestState` shows
    ``prompt_tokens`` = prompt + ``recompute_tokens``); ``"swap"`` moves it to host memory at
    ``swap_s_per_token`` seconds per token, out and back in (``swap_tokens``).  No batch ever makes
    the held KV exceed the capacity; a request larger than the whole cache is ``rejected``.
    Those are the default rules, ``engine.memory = Memory()``.  Any other
    :class:`~fluidq.engine.Memory` pages the cache in ``memory.block_size``-token blocks (a request
    holds ``ceil(tokens / block_size)``, the cache has ``kv_capacity_tokens // block_size``, no
    headroom): running requests get blocks for their next tokens first, preempting ``memory.victim``
    (the last in the ordering, or the most recently admitted) until they fit, then new requests are
    admitted head-of-line while ``memory.reservation`` (the whole remaining prompt, or the chunk)
    fits; with ``memory.prefix_caching`` a re-admitted victim reuses its own cached leading blocks.

    **vLLM.** ``Engine(batch_time=Composition(model=...), memory=fluidq.engine.VLLM,
    prefill_emits_token=True, ...)`` under ``"vllm-chunked"`` is vLLM v1's engine (what
    ``fluidq validate`` checks against measured runs): a batch time that reads the batch composition
    (:class:`~fluidq.batchtime.composition.Composition`) is charged per batch from its prefill chunks
    and decode contexts; with ``prefill_emits_token`` the prefill's iteration gives the first token
    (``first_token_s == prefill_done_s``), and the iteration completing a recomputation after a
    preemption gives the request's next token.  ``Engine(async_scheduling=True)`` (vLLM's default since 0.14)
    forms each batch while the previous one runs: a batch sees the arrivals up to the previous batch's
    start, and a finished request holds its slot and KV through one more batch.  With or without a KV cache
    both run in the compiled kernel with memory (the composition evaluated from its model's ``kernel_table()``;
    without a cache, one that never binds); a request that finished in the batch in flight is never a preemption
    victim.

    A batch is formed at the start of each iteration from the requests that arrived up to that
    instant and runs for ``t(b)`` seconds; arrivals during a batch wait for the next one.  An idle
    engine jumps to the next arrival.  The fast kernel advances runs of identical iterations in
    one step, so its cost grows with events (arrivals, prefill completions, finishes), not with
    iterations or queue length.

    References
    ----------
    Li, Dai, Peng, "Throughput-Optimal Scheduling Algorithms for LLM Inference and AI Agents",
    arXiv:2504.07347 (batch constraints 6a-6d, Table 1 schedulers, Fig. 8).

    Examples
    --------
    >>> import fluidq
    >>> e = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
    >>> w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=10.0), prompt_tokens=100, output_tokens=100)
    >>> r = fluidq.simulate(e, w, "sarathi", horizon_s=60, rng=1)
    >>> r.n_finished > 500
    True
    """
    if not isinstance(engine, Engine):
        raise ParameterError("engine", engine, "a fluidq.Engine")
    if record not in ("full", "summary"):
        raise ParameterError("record", record, "'full' or 'summary'")
    if record == "summary" and (record_iterations or record_batches):
        raise ParameterError("record", record, "'full' with record_iterations or record_batches",
                             "a summary keeps no per-iteration rows or batches")
    pol = resolve_policy(policy)
    horizon_s = real("horizon_s", horizon_s, positive=True, allow_none=True)
    n_requests = integer("n_requests", n_requests, minimum=1, allow_none=True)
    if horizon_s is None and n_requests is None:
        raise ParameterError("horizon_s", None, "a horizon in seconds or a number of requests n_requests")
    if isinstance(workload, Workload) and isinstance(workload.arrival, Gamma):
        check_gamma_cv(workload.arrival.cv, "workload.arrival.cv")
    check_size(engine, workload, horizon_s, n_requests)
    if method not in ("auto", "fast", "generic"):
        raise ParameterError("method", method, "'auto', 'fast' or 'generic'")
    if preemption is None:
        preemption = engine.memory.preemption
    if preemption not in ("recompute", "swap"):
        raise ParameterError("preemption", preemption, "'recompute' or 'swap'")
    if preemption == "swap" and engine.memory.prefix_caching:
        raise ParameterError("preemption", preemption, "'recompute' with engine.memory.prefix_caching",
                             "a swapped-out request keeps its KV on the host and reuses no cached block")
    if preemption == "swap":
        if swap_s_per_token is None:
            raise ParameterError("swap_s_per_token", None, "seconds per KV token moved, for preemption='swap'")
        swap_s_per_token = real("swap_s_per_token", swap_s_per_token, nonnegative=True)
    else:
        swap_s_per_token = 0.0 if swap_s_per_token is None else real("swap_s_per_token", swap_s_per_token,
                                                                     nonnegative=True)
    warmup_s = real("warmup_s", warmup_s, nonnegative=True)
    if horizon_s is not None and warmup_s >= horizon_s:
        raise ParameterError("warmup_s", warmup_s, f"a time < horizon_s={horizon_s:g}",
                             "a warm-up this long leaves every request out of the metrics")
    ok, why = fast_path_applies(pol, engine, preemption)
    unbounded = engine.kv_capacity_tokens is None and _needs_kv_kernel(engine)  # (no cache: one that never binds)
    kv_kernel = ok and (engine.kv_capacity_tokens is not None or unbounded)
    if initial or record_batches:
        ok, why = False, "initial residents / batch records need the generic path"
    elif method == "auto":
        from ..kernel._jit import compiled, warn_if_uncompiled, warn_kernel_limit

        if kv_kernel and not compiled():  # uncompiled, the Python path with memory is the faster of the two
            warn_if_uncompiled()  # (same results): the run goes generic, saying once why it is slow
            ok, why = False, "numba is missing: the kernel with memory's runs take the generic path"
        elif not ok and why.startswith("KV blocks of"):  # a size limit of the kernel, not a model it lacks
            if compiled():
                warn_kernel_limit(why)
            else:
                warn_if_uncompiled()
    use_fast = ok and method != "generic"
    use_select = False  # the select() loop on the kernel's arrays (fluidq.kernel.select): a policy asked in Python
    # (the select() paths: a built-in FCFS scheduler is shown a window of the queue by EngineRun)
    window = (isinstance(pol, Scheduler) and type(pol).select is Scheduler.select
              and type(pol.order).order is Ordering.order and not initial and not record_batches)
    if not use_fast and method != "generic":
        from ..kernel._jit import compiled as _compiled, warn_if_uncompiled as _warn_uncompiled
        from ..kernel.select import covers as _select_covers

        use_select = _select_covers(kv_cap=engine.kv_capacity_tokens, memory=engine.memory,
                                    async_scheduling=engine.async_scheduling, initial=initial,
                                    record_batches=record_batches, window=window, record=record_iterations)
        if method == "auto":  # uncompiled, EngineRun (the reference) is the faster of the two
            use_select = use_select and _compiled()
        elif use_select:  # "fast": the select loop, as plain Python where numba is missing (saying so once)
            _warn_uncompiled()
    if method == "fast" and not ok and not use_select:
        raise ParameterError("method", method, "'auto' or 'generic' for this run", why)
    rng = _check_rng(rng)
    if record == "summary" and use_fast and not kv_kernel:
        return _streamed_summary(engine, workload, pol, horizon_s, n_requests, rng, warmup_s, progress, preemption,
                                 swap_s_per_token)
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    arr, P, D = _requests(workload, gen, horizon_s, n_requests, residents=bool(initial))
    _check_warmup_after(warmup_s, horizon_s, float(np.max(arr)) if len(arr) else None)
    arr_a, P_a, D_a = (np.ascontiguousarray(arr, dtype=float), np.ascontiguousarray(P, dtype=np.int64),
                       np.ascontiguousarray(D, dtype=np.int64))
    tau_b, ks = _kernel_tau_table(engine, P_a, D_a) if use_fast and kv_kernel else _tau_table(engine)
    hz = math.inf if horizon_s is None else horizon_s
    if use_fast:
        opts = dict(**_kernel_options(engine, pol), tau_b=tau_b, ks=ks, horizon=hz, record=record_iterations,
                    progress=progress)
        if kv_kernel and unbounded:  # no KV cache: the token rules with a cache that never binds
            from ..kernel import run_fcfs_kv

            out = run_fcfs_kv(arr_a, P_a, D_a, kv_cap=UNBOUNDED_KV, emit_at_prefill=engine.prefill_emits_token,
                              compose_table=_compose_table(engine), async_scheduling=engine.async_scheduling,
                              engine_k_max=engine.k_max, **opts)
            # what the generic path reports without a cache: no KV figures (nothing is preempted or rejected)
            out["peak_kv_tokens"] = 0
            if out["records"] is not None:
                del out["records"]["kv_used"]
        elif kv_kernel:
            from ..kernel import run_fcfs_kv

            mem = engine.memory
            out = run_fcfs_kv(arr_a, P_a, D_a, kv_cap=engine.kv_capacity_tokens, paged=not mem.default_rules,
                              block_size=mem.block_size, whole_prompt=mem.reservation == "whole_prompt",
                              most_recent=mem.victim == "most_recent", emit_at_prefill=engine.prefill_emits_token,
                              swap_s_per_token=swap_s_per_token if preemption == "swap" else None,
                              prefix_caching=mem.prefix_caching, compose_table=_compose_table(engine),
                              async_scheduling=engine.async_scheduling, engine_k_max=engine.k_max, **opts)
        else:
            out = run_fast(arr_a, P_a, D_a, **opts)
    else:
        if check_batches is None:
            check_batches = not isinstance(pol, Scheduler)
        if use_select:
            from ..kernel.select import run_select

            # the select() loop on the kernel's arrays (fluidq.kernel.select: the same results as run_generic); a
            # lazily tabulated batch time is tabulated up to the run's largest possible batch first, as for kv.py
            if isinstance(tau_b, _LazyTau):
                tau_b, ks = _kernel_tau_table(engine, P_a, D_a)
            out = run_select(arr_a, P_a, D_a, policy=pol, b_max=engine.b_max, k_max=engine.k_max, tau_b=tau_b, ks=ks,
                             horizon=hz, record=record_iterations, check=check_batches,
                             compose=getattr(engine.batch_time, "composition_time", None),
                             emit_at_prefill=engine.prefill_emits_token, progress=progress,
                             kv_cap=engine.kv_capacity_tokens, preemption=preemption,
                             swap_s_per_token=swap_s_per_token, memory=engine.memory, initial=tuple(initial),
                             record_batches=record_batches, async_scheduling=engine.async_scheduling)
        else:  # the reference: EngineRun (the generic loop indexes Python lists, faster than numpy scalars in Python)
            out = run_generic(arr_a.tolist(), P_a.tolist(), D_a.tolist(), policy=pol, b_max=engine.b_max,
                              k_max=engine.k_max, tau_b=tau_b, ks=ks,
                              horizon=hz, record=record_iterations, check=check_batches,
                              kv_cap=engine.kv_capacity_tokens, preemption=preemption,
                              swap_s_per_token=swap_s_per_token, record_batches=record_batches,
                              initial=tuple(initial), progress=progress, window=window, memory=engine.memory,
                              compose=getattr(engine.batch_time, "composition_time", None),
                              emit_at_prefill=engine.prefill_emits_token,
                              async_scheduling=engine.async_scheduling)
    n0 = len(initial)
    if n0:
        a0 = np.array([float(r.arrival_s) for r in initial])
        p0 = np.array([int(r.prompt_tokens) for r in initial], dtype=np.int64)
        d0 = np.array([int(r.output_tokens) for r in initial], dtype=np.int64)
        arr = np.concatenate([a0, arr])
        P = np.concatenate([p0, P])
        D = np.concatenate([d0, D])
    reqs = {"arrival_s": np.asarray(arr, dtype=float), "prompt_tokens": np.asarray(P, dtype=np.int64),
            "output_tokens": np.asarray(D, dtype=np.int64)}
    for k in ("first_scheduled_s", "prefill_done_s", "first_token_s", "finish_s"):
        reqs[k] = np.asarray(out[k], dtype=float)
    reqs["preemptions"] = np.asarray(out.get("preemptions_per_request", np.zeros(len(arr), np.int64)),
                                     dtype=np.int64)
    # (with async scheduling a batch reads the arrivals up to the start of the batch before, so the arrivals after
    # the last batch's start are never read: they stay unserved, with NaN times)
    if horizon_s is not None and out["n_arrived"] < len(arr) - n0 and not engine.async_scheduling:  # pragma: no cover
        raise RuntimeError("internal: arrivals beyond the horizon were not admitted")
    for v in reqs.values():
        v.setflags(write=False)
    bt, bn, bw = out["backlog"]
    backlog = {"t_s": np.asarray(bt, dtype=float), "requests": np.asarray(bn, dtype=np.int64),
               "tokens": np.asarray(bw, dtype=np.int64)}
    for v in backlog.values():
        v.setflags(write=False)
    its = None
    if out["records"] is not None:
        its = {k: np.asarray(v) for k, v in out["records"].items()}
        for v in its.values():
            v.setflags(write=False)
    end = _run_end(out, horizon_s)
    fr = _kernel_fractions(out, end)
    res = SimResult(
        requests=reqs, backlog=backlog, policy=getattr(pol, "name", type(pol).__name__),
        method="fast" if use_fast or use_select else "generic", end_s=end, horizon_s=horizon_s, n_iterations=fr["iterations"],
        busy_fraction=fr["busy_fraction"], mixed_batch_fraction=fr["mixed_batch_fraction"],
        tokens_served=int(out["tokens_served"]),
        preemptions=int(out.get("preemptions", 0)), wasted_tokens=int(out.get("wasted_tokens", 0)),
        swap_tokens=int(out.get("swap_tokens", 0)), rejected=int(out.get("rejected", 0)),
        peak_kv_tokens=int(out.get("peak_kv_tokens", 0)), blocked=int(out["n_blocked"]), iterations=its,
        batches=tuple(out["batches"]) if out.get("batches") is not None else None, warmup_s=warmup_s,
        examined=int(out.get("examined", 0)),
        inputs=_run_inputs(engine, workload, pol, horizon_s, n_requests, len(arr) - n0, preemption, swap_s_per_token,
                           rng, method="fast" if use_fast or use_select else "generic"))
    if record == "summary":
        from .result import SimSummary

        return SimSummary.of(res)
    return res


def _check_warmup_after(warmup_s: float, horizon_s, last_arrival) -> None:
    """Without a horizon, refuse a warm-up past the last arrival (``None``: no request): it leaves every
    request out of the metrics."""
    if horizon_s is None and warmup_s > 0 and (last_arrival is None or warmup_s > last_arrival):
        raise ParameterError("warmup_s", warmup_s, f"a time <= the last arrival ({last_arrival or 0.0:g} s)",
                             "a warm-up this long leaves every request out of the metrics")


def _run_end(out: dict, horizon_s) -> float:
    """The run's end: the kernel's last event, or the horizon when the engine sat idle (or stalled) until it."""
    end = float(out["end_s"])
    return float(horizon_s) if horizon_s is not None and end < horizon_s else end


def _kernel_fractions(out: dict, end: float) -> dict:
    """``iterations``, ``busy_fraction`` and ``mixed_batch_fraction`` of a run from its loop's output ``out`` and
    its end ``end`` (the full result's and the streamed summary's)."""
    n_it = int(out["iterations"])
    return {"iterations": n_it, "busy_fraction": float(out["busy_s"]) / end if end > 0 else math.nan,
            "mixed_batch_fraction": out["mixed_iterations"] / n_it if n_it else 0.0}


def _kernel_options(engine: Engine, pol: Scheduler) -> dict:
    """The event-skipping kernel's scheduler options for a built-in scheduler on ``engine``."""
    b = engine.b_max if pol.b_max is None else min(engine.b_max, pol.b_max)
    ks_ = [k for k in (engine.k_max, pol.k_max) if k is not None]
    return dict(b_max=b, k_cap=min(ks_) if ks_ else 1 << 62, mixed=pol.mixed, chunked=pol.chunked,
                chunk_long=pol.chunk_long_prompts, prefill_first=pol.priority == "prefill")


def _run_inputs(engine, workload, pol, horizon_s, n_requests, n_explicit, preemption, swap_s_per_token, rng, *,
                method: str = "fast") -> dict:
    """A run's ``inputs`` (the full result's and the streamed summary's)."""
    return {"engine": engine.to_dict(), "workload": workload.to_dict() if isinstance(workload, Workload) else
            {"explicit_requests": int(n_explicit)}, "policy": getattr(pol, "name", repr(pol)),
            "horizon_s": horizon_s, "n_requests": n_requests, "method": method, "preemption": preemption,
            "swap_s_per_token": swap_s_per_token, "seed": _seed_repr(rng)}


def _streamed_summary(engine, workload, pol, horizon_s, n_requests, rng, warmup_s, progress, preemption,
                      swap_s_per_token):
    """``record="summary"`` on the event-skipping kernel: arrivals drawn chunk by chunk, the kernel run in
    segments, the figures folded as requests finish (see :func:`simulate`, ``record``)."""
    from ..kernel.run import run_fcfs_segments
    from ..workload import STREAM_CHUNK
    from ._summary import REL_ERROR, BacklogStream, RequestStream
    from .result import SimSummary, summary_values

    if isinstance(workload, Workload):
        chunks = workload.sample_chunks(rng, horizon_s=horizon_s, n=n_requests)
        sampling = f"Workload.sample_chunks, chunks of {STREAM_CHUNK} requests"
    else:  # explicit rows: already in memory, fed in chunks
        a, p, d = _requests(workload, None, horizon_s, n_requests)
        chunks = ((a[i:i + STREAM_CHUNK], p[i:i + STREAM_CHUNK], d[i:i + STREAM_CHUNK])
                  for i in range(0, len(a), STREAM_CHUNK))
        sampling = "the explicit rows given"
    reqs, back = RequestStream(warmup_s), BacklogStream(warmup_s)
    last_arrival = [-math.inf]

    def retire(cols):
        reqs.add(cols)
        if cols["arrival_s"].size:
            last_arrival[0] = max(last_arrival[0], float(cols["arrival_s"].max()))

    tau_b, ks = _tau_table(engine)
    out = run_fcfs_segments(chunks, **_kernel_options(engine, pol), tau_b=tau_b, ks=ks,
                            horizon=math.inf if horizon_s is None else horizon_s, retire=retire, rows=back.add,
                            progress=progress)
    _check_warmup_after(warmup_s, horizon_s, last_arrival[0] if reqs.n_requests else None)
    end = _run_end(out, horizon_s)
    bk = back.finish(end)
    m = reqs.metrics()
    values = summary_values(policy=getattr(pol, "name", type(pol).__name__), method="fast",
                            requests=reqs.n_requests, finished=reqs.n_finished, end_s=end,
                            tokens_served=int(out["tokens_served"]), blocked=int(out["n_blocked"]),
                            final_requests_in_system=bk["final_requests_in_system"],
                            final_token_backlog=bk["final_token_backlog"],
                            mean_requests_in_system=bk["mean_requests_in_system"],
                            token_backlog_slope_per_s=bk["token_backlog_slope_per_s"], metrics=m,
                            **_kernel_fractions(out, end))
    inputs = _run_inputs(engine, workload, pol, horizon_s, n_requests, reqs.n_requests, preemption,
                         swap_s_per_token, rng)
    return SimSummary(values=values, metrics=m, inputs=inputs,
                      streamed={"sampling": sampling, "percentile_rel_error": REL_ERROR,
                                "backlog_slope_grid_s": bk["grid_s"]})


def _seed_repr(rng):
    if rng is None or isinstance(rng, (int, np.integer)):
        return None if rng is None else int(rng)
    if isinstance(rng, np.random.SeedSequence):
        return {"entropy": rng.entropy, "spawn_key": list(rng.spawn_key)}
    return repr(rng)
