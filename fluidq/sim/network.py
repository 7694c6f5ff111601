"""Event-driven simulation of a network of LLM engines: :func:`simulate_network`, a driver.

It checks the inputs, runs the network on one of two event loops and builds the :class:`NetworkSimResult`
from what the loop returns:

* the Python event clock, :func:`fluidq.kernel.clock.run_clock` (``method="python"`` and ``"generic"``, and
  ``"auto"`` where the compiled loop does not apply): every station a fed :class:`fluidq.kernel.step.EngineRun`
  (``simulate``'s ``select()`` loop, with the single-engine memory rules at a station with a KV cache), stations
  without a KV cache skipping runs of identical batches where they can (``"python"``, ``"auto"``), with the
  routing (choices, random and join-the-shortest-queue routers, forks and joins), the order of events at equal
  times, the horizon rule and the recording (see that module);
* the compiled event loop (``method="auto"``, the default, where it applies): :mod:`fluidq.kernel.network`
  runs every station on one event clock in machine code, rule for rule as the Python clock (tests check the two
  give the same run, bit for bit), for networks whose stations run a built-in scheduler in FCFS order
  (Sarathi-Serve and vLLM with chunked prefill in runs of identical batches, the others batch by batch; a
  station with a KV cache batch by batch under the memory rules, with any memory model, prefix caching included;
  a context-aware batch time and a first token from the prefill with or without a cache) and whose classes route
  through hops to stations or to random or join-the-shortest-queue routers, probabilistic choices and fork-joins,
  with class priorities and fixed or random lengths (every draw from ``rng`` in the Python clock's order).
  Stations whose policies are not built-in FCFS schedulers (user policies, SJF, SRPT, ...) run there too, batch by
  batch, their policies asked in Python on the loop's state (:mod:`fluidq.kernel.network_select`; at a station with
  a KV cache its memory passes compiled on the loop's arrays, :mod:`fluidq.kernel.network_kv`, 2026-12-07, under a
  JSQ router by remaining tokens too; a batch over the budgets with the check off runs as given, the loop's batch
  arrays growing); so do subclasses of the built-in FCFS schedulers with a rule of their own (shown the Python
  clock's window of their queue, :mod:`fluidq.kernel.network_window`) and, with ``check_batches=True`` given
  explicitly, every station, asked and checked in Python as the Python clock asks and checks them (2026-12-07,
  h-netwin), and a KV station with a composition batch time whatever its policy (the loop's own KV rule has no
  composition time).

Order at equal times (both loops): external arrivals first (a request arriving at the instant a batch ends joins
the next batch, as in :func:`fluidq.simulate`; a test checks that a one-engine network gives the single-engine
simulator's requests, exactly coincident times included), then batch completions: the batch that started first
ends first, then the station listed first.  The horizon means what it means in :func:`fluidq.simulate`: no batch
starts at or after it, and the batches in progress are completed.

``fluidq.network.sim`` (and ``fluidq.network.simulate_network``) is the old path of this module,
registered by it when ``fluidq`` is imported, so that the topology package imports no simulator.

References
----------
Li, Dai, Peng, arXiv:2504.07347 (engine model, constraints 6a-6d, networks of engines).
"""
from __future__ import annotations

import gc
import math
import sys
import time as _time
from dataclasses import dataclass, field

import numpy as np

from .._validate import real
from ..errors import ParameterError
from ..results import Result, line_slope, plain
from ..network.model import Choice, Fork, Hop, Network

# the Python clock (kernel/clock.py, with kernel/step.py and kernel/memory.py behind it) is imported where a run
# needs it, not with ``import fluidq`` (issue 15's start-up target); the names it exported from here before the
# move still resolve, through the module's __getattr__
_CLOCK_NAMES = ("_TABLE_MAX", "_batch_time_array", "_batch_time_table", "_fast_budget", "_initial_hops", "_windowable",
                "run_clock", "RID_BITS", "RID_MASK", "INF", "NAN", "_Task", "_StationState", "_JoinRec")


def __getattr__(name):
    if name in _CLOCK_NAMES:
        from ..kernel import clock

        return getattr(clock, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


MAX_GRID = 1_000_000  # most recorded grid points of one run
#: most requests one run may be expected to hold (arrivals over the horizon plus the initial ones);
#: each is a Python object and several events, so more would not finish (or fit in memory)
MAX_REQUESTS = 50_000_000
#: most requests expected over all the replications of one call (the runs are made one after another)
MAX_TOTAL_REQUESTS = 100_000_000

__all__ = ["NetworkSimResult", "check_run", "replicate_network", "simulate_network"]


@dataclass(frozen=True)
class NetworkSimResult(Result):
    """One simulated run.

    Attributes
    ----------
    times_s : ndarray
        Sampling grid.
    in_system : dict
        ``{class: requests of that class in the network}`` on the grid.
    buffer_tokens : dict
        ``{buffer label: remaining tokens}`` on the grid (labels as in the fluid model).
    station_tokens, station_requests : dict
        ``{station: remaining tokens / resident requests}`` on the grid.
    completed : dict
        Requests of each class that left the network.
    mean_sojourn_s : dict
        Mean time in the network of the completed requests of each class; ``None`` for a class none
        of whose requests completed (undefined, not a number).
    batches, events : int
        Batches run and events processed.
    horizon_s, wall_s : float
        Simulated and wall-clock seconds.
    seed : object
        The entropy of the generator used (for replay).
    violations : tuple
        Always empty (kept for compatibility, deprecated since 2026-12-07): a batch that breaks a constraint raises
        :class:`~fluidq.errors.PolicyError` naming the station, the time and the rule, on every path, as
        :func:`fluidq.simulate` does, instead of being listed here while the run went on with it.
    blocked : tuple
        ``(station, hop)`` pairs of requests a policy reported it can never schedule.
    preemptions, rejected : dict
        ``{station: count}``: KV-cache preemptions, and hops refused at arrival because the request
        can never fit in the station's KV cache (zero for a station without ``kv_capacity_tokens``).
    hops : dict or None
        With ``record_hops=True``: ``{"station", "arrival_s", "finish_s", "preemptions"}`` arrays, one
        entry per finished hop (station index into ``network.stations``, arrival at the station, end of
        the hop, preemptions it suffered), in the order the hops finished.
    network : Network or None
        The network simulated (kept for :attr:`inputs`; not compared, not in :meth:`to_dict`).
    inputs : dict
        What the run was: ``network`` (its :meth:`~fluidq.network.Network.to_dict`: stations with their
        engines and policies, routers, classes), ``horizon_s`` and ``seed``.
    """

    times_s: np.ndarray
    in_system: dict
    buffer_tokens: dict
    station_tokens: dict
    station_requests: dict
    completed: dict
    mean_sojourn_s: dict
    batches: int
    events: int
    horizon_s: float
    wall_s: float
    seed: object = None
    violations: tuple = ()
    blocked: tuple = ()
    preemptions: dict = field(default_factory=dict)
    rejected: dict = field(default_factory=dict)
    hops: dict | None = field(default=None, repr=False)
    network: Network | None = field(default=None, repr=False, compare=False)

    @property
    def inputs(self) -> dict:
        """The network (its ``to_dict()``; ``None`` for a result made without it), the horizon and the seed,
        JSON-ready."""
        return plain({"network": None if self.network is None else self.network.to_dict(),
                      "horizon_s": self.horizon_s, "seed": self.seed})

    @property
    def total_in_system(self) -> np.ndarray:
        return np.sum([v for v in self.in_system.values()], axis=0)

    @property
    def total_tokens(self) -> np.ndarray:
        return np.sum([v for v in self.buffer_tokens.values()], axis=0)

    def growth_rate(self, *, start_fraction: float = 0.25, tokens: bool = False) -> float:
        """Least-squares slope (per second) of requests (or tokens) in system over the last part of the run."""
        t = self.times_s
        y = self.total_tokens if tokens else self.total_in_system
        m = t >= t[0] + start_fraction * (t[-1] - t[0])
        if m.sum() < 3:
            return float("nan")
        return line_slope(t[m], y[m])  # the one backlog slope (fluidq.results)

    @property
    def us_per_batch(self) -> float:
        return 1e6 * self.wall_s / max(self.batches, 1)

    def to_dict(self) -> dict:
        return plain({"horizon_s": self.horizon_s, "batches": self.batches, "events": self.events,
                      "wall_s": self.wall_s, "completed": self.completed, "mean_sojourn_s": self.mean_sojourn_s,
                      "final_in_system": {k: float(v[-1]) for k, v in self.in_system.items()},
                      "growth_rate_per_s": self.growth_rate(), "violations": list(self.violations),
                      "blocked": [list(b) for b in self.blocked], "seed": self.seed,
                      "preemptions": self.preemptions, "rejected": self.rejected})

    def plot(self, ax=None, path=None, **kw):
        from ..plotting.network import plot_network_sim

        return plot_network_sim(self, ax=ax, path=path, **kw)


def _kernel_unsupported(network: Network, check_batches) -> str | None:
    """Why ``network`` needs the Python event loop (``None``: the compiled loop of
    :mod:`fluidq.kernel.network` runs it).

    The compiled loop covers stations running a built-in scheduler in FCFS order (runs of identical batches
    where :func:`_fast_budget` allows them, batch by batch otherwise: Orca, vLLM, FasterTransformer,
    ``k_max``, a context-aware batch time, an engine whose prefill gives the first token, as the Python
    path): without a KV cache, with a batch time of the batch's tokens (a context-aware time's base) that
    tabulates in one call (:func:`_batch_time_table`); with a KV cache (any memory model: token or block KV,
    reservation, victim rule, recompute or swap, prefix caching), with the Python path's batch-time table
    (context-aware times included) and a first token from the prefill or not -- a composition batch time there
    has the station asked in Python whatever its policy (:func:`_composed_kv`, 2026-12-07); every station's ``b_max`` at most :data:`fluidq.kernel.clock.KERNEL_TABLE_MAX` (the loop's dense
    batch-time table; a larger one runs the network on the Python path with a
    :class:`~fluidq.kernel.KernelLimitWarning`); and classes whose routes are hops to
    stations or to random or join-the-shortest-queue routers, probabilistic choices and fork-joins (nested
    too), with fixed or random lengths (every draw from ``rng`` in the Python path's order).  A station without a
    KV cache whose policy is not a built-in FCFS scheduler (a user policy, an ordering other than FCFS) is run
    batch by batch with its policy asked in Python on the loop's state (:mod:`fluidq.kernel.network_select`; its
    batch time tabulated as above); one with a KV cache too, its memory passes compiled on the loop's arrays and its
    policy (``select``, the victim's order, ``may_evict``) asked in Python (:mod:`fluidq.kernel.network_kv`,
    2026-12-07: every memory model, a composition time included -- the driver calls the engine's
    ``composition_time`` --, no EngineRun; a join-the-shortest-queue router by remaining tokens that can pick it
    has the loop make the event's asks so far before it reads them, 2026-12-07: its memory pass changes them as the
    batch starts).  Since 2026-12-07
    (h-netwin) the loop covers the last two cases that were not about a KV cache: a subclass of a built-in FCFS
    scheduler that overrides ``select`` or ``budgets`` is asked in Python too (without a KV cache shown the Python
    clock's built-in window of its queue, :mod:`fluidq.kernel.network_window`; with one, every resident, as the
    Python clock shows it), and ``check_batches=True`` given explicitly asks every station in Python,
    the built-in FCFS ones included (through the same window, or as a KV station of network_kv), their batches
    checked as the Python clock checks them (the default check, on where a user policy runs, checks the batches of
    the policies asked in Python; the built-in stations are then the loop's own, batch by batch); a composition
    batch time at a KV station is covered then.  The cases excluded above stay on the Python path (the returned
    reason names the first one met; a station's size limit, which warns, only where nothing else excludes the
    network).  ``check_batches`` (given explicitly) no longer changes the answer: checked or not, every policy is
    covered; it stays in the signature for its callers.
    """
    from ..kernel.clock import KERNEL_TABLE_MAX, _batch_time_array

    limit = None
    for st in network.stations:  # (every policy is covered now, asked in Python or the loop's own: what is left is
        # a station's size and, without a KV cache, a batch time the loop cannot tabulate in one call)
        if st.engine.b_max > KERNEL_TABLE_MAX:  # said last: a size limit warns, so only if nothing else excludes
            limit = limit or _limit_why(st)
            continue
        if st.engine.kv_capacity_tokens is None and _batch_time_array(st.engine, KERNEL_TABLE_MAX) is None:
            return f"station {st.name!r}'s batch time cannot be tabulated in one call up to b_max"
    for c in network.classes:
        if not c.route:
            return f"class {c.name!r} has an empty route"
    for r in network.routers:
        if r.policy != "random" and r.policy != "jsq":
            return f"router {r.name!r}'s policy {r.policy!r}"
    return limit


_LIMIT_PREFIX = "station budget above the compiled network loop's"


def _limit_why(st) -> str:
    """The reason a station's budget keeps a network off the compiled loop (a size limit, said by a warning)."""
    from ..kernel.clock import KERNEL_TABLE_MAX

    return (f"{_LIMIT_PREFIX} {KERNEL_TABLE_MAX} tokens (station {st.name!r}: b_max={st.engine.b_max}; the loop "
            "tabulates every station's batch times up to the largest budget in one dense array)")


def _composed_kv(st) -> bool:
    """A station with a KV cache and a composition batch time: the compiled loop's own KV rule has no composition
    time, so even a built-in FCFS scheduler there is asked in Python (:mod:`fluidq.kernel.network_kv` times its
    batches by the engine's ``composition_time``), as the Python clock asks it every batch at a KV station."""
    return st.engine.kv_capacity_tokens is not None and \
        getattr(st.engine.batch_time, "composition_time", None) is not None


def _native(policy) -> bool:
    """A built-in scheduler in FCFS order, which the compiled network loop runs itself; any other policy is asked
    in Python (:mod:`fluidq.kernel.network_select`)."""
    from ..kernel.clock import _windowable

    return _windowable(policy) and type(policy).select is _scheduler_select() and \
        type(policy).budgets is _scheduler_select(budgets=True)


def _scheduler_select(budgets=False):
    """``Scheduler.select`` (or ``Scheduler.budgets``): a subclass that overrides either runs in Python."""
    from ..policies.schedulers import Scheduler

    return Scheduler.budgets if budgets else Scheduler.select


def _run_kernel(network, horizon, gen, seed, initial, dt_rec, max_batches, wall0, record_hops, swap_s=0.0,
                check_batches=False, check_all=False):
    """:func:`simulate_network`'s ``method="auto"`` run on the compiled loop (``_kernel_unsupported`` is
    None): the same arrivals, router uniforms and length draws from ``gen``, in the same order, so the same
    results as the Python path.  Stations whose policies are not built-in FCFS schedulers are asked in Python
    (:mod:`fluidq.kernel.network_select`); with ``check_batches`` (on by default where there are such stations)
    every station runs batch by batch, as the Python path runs them then; with ``check_all`` (``check_batches=True``
    given explicitly) the built-in FCFS schedulers are asked in Python too, their batches checked as the Python path
    checks them."""
    from ..kernel.clock import KERNEL_TABLE_MAX, _batch_time_array, _fast_budget, _initial_hops
    from ..kernel.network import (H_A, H_B, H_C, H_CLS, H_D, H_DSRC, H_INFORK, H_KIND, H_NEXT, H_P, H_PSRC, H_RANK0,
                                  H_ROUTER, H_TGT, K_CHOICE, K_END, K_FORK, K_HOP, K_JOIN, LBN, R_ENG0, S_EMIT,
                                  S_MEMORY, S_OPTIONS, UB, run_network)
    from .core import _tau_table
    from ..network.model import NoTokens
    from ..workload.lengths import Fixed

    i64 = np.int64
    stations = network.stations
    n_st = len(stations)
    sidx = {s.name: i for i, s in enumerate(stations)}
    routers = {r.name: (i, r) for i, r in enumerate(network.routers)}
    fm = network.flow
    pooled = set(fm.pooled)
    labels = {b.label: None for b in fm.buffers}
    seen_order = {lab: i + 1 for i, lab in enumerate(labels)}

    # steps: one row per step of every sequence of every class route (depth first), each sequence followed by an
    # end row that says what comes after it; sub/subp: the choices' options and the forks' branches
    rows: list = []  # [kind, step, class, next, a, b, c, in a fork's branch]
    sub: list = []
    subp: list = []
    first, top = [], []  # each class's first step; the rows of its route's top-level steps
    n_forks = 0
    hops_in: list = []  # hop rows per class (a request takes each at most once)
    choices_in: list = []

    def emit(ci, steps, pk, parg, infork, counts):
        """Rows for the sequence ``steps`` (ending in an end row of kind ``pk``, argument ``parg``); return its
        rows."""
        base = len(rows)
        idx = list(range(base, base + len(steps) + 1))
        rows.extend([None] * (len(steps) + 1))
        scope: dict = {}  # fork name -> its index among the class's forks (a join joins the fork before it)
        for i, stp in enumerate(steps):
            nxt = idx[i + 1]
            if isinstance(stp, Hop):
                rows[idx[i]] = [K_HOP, stp, ci, nxt, 0, 0, 0, infork]
                counts[0] += 1
            elif isinstance(stp, Choice):
                firsts = [emit(ci, opt, 1, nxt, infork, counts)[0] for _, opt in stp.options]
                rows[idx[i]] = [K_CHOICE, stp, ci, nxt, len(sub), len(firsts), 0, infork]
                sub.extend(firsts)
                subp.extend(float(pr) for pr, _ in stp.options)
                counts[1] += 1
            elif isinstance(stp, Fork):
                f = scope[stp.name] = counts[2]
                counts[2] += 1
                firsts = [emit(ci, br, 2, f, True, counts)[0] for br in stp.branches]
                rows[idx[i]] = [K_FORK, stp, ci, nxt, f, len(firsts), len(sub), infork]
                sub.extend(firsts)
                subp.extend([0.0] * len(firsts))
            else:  # a Join: its branches' end rows go on after it (the first join of the fork: the one it waits at)
                f = scope[stp.name]
                rows[idx[i]] = [K_JOIN, stp, ci, nxt, f, 0, 0, infork]
                join_next.setdefault((ci, f), nxt)
        rows[idx[-1]] = [K_END, None, ci, idx[-1], pk, parg, 0, infork]
        return idx

    join_next: dict = {}
    for ci, c in enumerate(network.classes):
        counts = [0, 0, 0]  # hops, choices, forks
        idx = emit(ci, c.route, 0, 0, False, counts)
        first.append(idx[0])
        top.append(idx)
        hops_in.append(counts[0])
        choices_in.append(counts[1])
        n_forks = max(n_forks, counts[2])
    for r in rows:  # a branch's end row: where its fork's main line goes on once every branch has arrived
        if r[0] == K_END and r[4] == 2:
            r[6] = join_next[(r[2], r[5])]
    n_h = len(rows)
    hop = np.zeros((n_h, H_RANK0 + 2 * n_st), dtype=i64)
    for j, (kind, _, ci, nxt, a, b, c_, infork) in enumerate(rows):
        hop[j, H_KIND], hop[j, H_CLS], hop[j, H_NEXT], hop[j, H_A], hop[j, H_B], hop[j, H_C] = kind, ci, nxt, a, b, c_
        hop[j, H_INFORK] = infork
    sources: dict = {}  # id(random length) -> (source index, the length)

    def length_src(length):
        if isinstance(length, (Fixed, NoTokens)):
            return -1
        return sources.setdefault(id(length), (len(sources), length))[0]

    kvst = [s.engine.kv_capacity_tokens is not None for s in stations]
    # (a station with a KV cache shows its policy every resident in arrival order: one rank)
    ranks = [{} if kvst[i] else {h: k for k, h in enumerate(s.priority)} for i, s in enumerate(stations)]
    lows = [0 if kvst[i] else len(s.priority) for i, s in enumerate(stations)]
    stl_sets = [set() for _ in stations]
    lab_ids: dict = {}

    def label_id(name):
        if name not in lab_ids:
            lab_ids[name] = len(lab_ids)
        return lab_ids[name]

    for lab in labels:
        label_id(lab)
    for j, (kind, h, ci, *_) in enumerate(rows):
        if kind == K_HOP:
            is_router = h.engine in routers
            hop[j, H_ROUTER] = 1 if is_router else 0
            hop[j, H_TGT] = routers[h.engine][0] if is_router else sidx[h.engine]
            for col, src, length in ((H_P, H_PSRC, h.prompt_tokens), (H_D, H_DSRC, h.output_tokens)):
                hop[j, src] = length_src(length)
                hop[j, col] = length.n if isinstance(length, Fixed) else 0
            targets = routers[h.engine][1].engines if is_router else (h.engine,)
            for si, s in enumerate(stations):
                hop[j, H_RANK0 + si] = ranks[si].get(h.name, lows[si])
                name = f"{h.name}@{s.name}" if is_router and h.engine not in pooled else h.name
                if s.name in targets:
                    lid = label_id(name)
                    hop[j, H_RANK0 + n_st + si] = lid
                    stl_sets[si].add(lid)
            if j == first[ci] and not is_router and h.name not in seen_order:  # planned at set-up, as the Python path
                seen_order[h.name] = len(seen_order) + 1
    lab_names = list(lab_ids)
    n_lab = len(lab_names)
    seen = np.zeros(n_lab, dtype=i64)
    for name, o in seen_order.items():
        seen[lab_ids[name]] = o
    maxl = max((len(x) for x in stl_sets), default=0)
    stl = np.zeros((n_st, maxl + 1), dtype=i64)
    for si, x in enumerate(stl_sets):
        stl[si, 0] = len(x)
        stl[si, 1:1 + len(x)] = sorted(x)
    maxe = max((len(r.engines) for r in network.routers), default=1)
    rt = np.zeros((max(len(network.routers), 1), R_ENG0 + maxe), dtype=i64)
    rp = np.zeros((max(len(network.routers), 1), maxe))
    for i, r in enumerate(network.routers):
        rt[i, 0] = 0 if r.policy == "random" else (1 if r.count == "requests" else 2)
        rt[i, 1] = len(r.engines)
        for j, e in enumerate(r.engines):
            rt[i, R_ENG0 + j] = sidx[e]
            if r.policy == "random":
                rp[i, j] = r.probabilities[j]
    # (their policies asked in Python, batch by batch; every station's with check_all)
    asked = [check_all or not _native(s.policy) or _composed_kv(s) for s in stations]
    # (with check_batches the Python path steps every station batch by batch)
    fast = [None if check_batches or asked[si] else _fast_budget(s) for si, s in enumerate(stations)]
    options = np.zeros((n_st, len(S_OPTIONS)), dtype=i64)  # S_GEN, S_KMAX, S_MIXED, S_CHUNKED, S_CHL, S_PF, S_VB, S_LIM
    for si, s in enumerate(stations):
        pol, eng = s.policy, s.engine
        lim = eng.b_max if eng.k_max is None else min(eng.b_max, eng.k_max)
        if asked[si]:  # (the options of the built-in rule do not apply)
            options[si] = (1, 1 << 62, 0, 0, 0, 0, eng.b_max, lim)
            continue
        ks = [k for k in (eng.k_max, pol.k_max) if k is not None]
        options[si] = (fast[si] is None or kvst[si], min(ks) if ks else 1 << 62, pol.mixed, pol.chunked,
                       pol.chunk_long_prompts,
                       pol.priority == "prefill", eng.b_max, lim)
    # the token budget (the scheduler's own b_max may be lower than the engine's; a policy asked in Python may
    # form batches up to the engine's)
    budget = np.array([s.engine.b_max if asked[si] or s.policy.b_max is None else min(s.engine.b_max, s.policy.b_max)
                       for si, s in enumerate(stations)], dtype=i64)
    nrank = np.array([lo + 1 for lo in lows], dtype=i64)
    tau = np.full((n_st, int(budget.max()) + 1), np.nan)
    tables: dict = {}  # (stations often share one engine)
    mem = np.zeros((n_st, len(S_MEMORY)), dtype=i64)  # S_MEM, S_KVCAP, S_PAGED, S_BS, S_WHOLE, S_MOSTREC, S_SWAP,
    memf = np.zeros((n_st, 2))                          # S_CACHING, S_EMIT; R_KS, R_SWAPS
    for si, s in enumerate(stations):
        nb = int(budget[si])
        if kvst[si]:  # the Python path's table (fluidq.sim.core._tau_table: a context-aware time's base)
            key = ("kv", id(s.engine))
            if key not in tables:
                tab, ks = _tau_table(s.engine)
                tables[key] = (np.asarray(tab[1:], dtype=float), ks)
            tab, ks = tables[key]
            tau[si, 1:nb + 1] = tab[:nb]
            m = s.engine.memory
            paged = not m.default_rules
            mem[si] = (1, s.engine.kv_capacity_tokens, paged, m.block_size if paged else 1,
                       m.reservation == "whole_prompt", m.victim == "most_recent", m.preemption == "swap",
                       paged and m.prefix_caching, bool(getattr(s.engine, "prefill_emits_token", False)))
            memf[si] = (ks, swap_s)
            continue
        if id(s.engine) not in tables:
            tables[id(s.engine)] = _batch_time_array(s.engine, KERNEL_TABLE_MAX)  # (a context-aware time's base)
        tau[si, 1:nb + 1] = tables[id(s.engine)][:nb]
        # batch by batch (see _fast_budget): the prefill's first token, a context-aware time's seconds per KV token
        mem[si, S_MEMORY.index(S_EMIT)] = bool(getattr(s.engine, "prefill_emits_token", False))
        if getattr(s.engine.batch_time, "kind", "") == "context_aware":
            memf[si, 0] = float(s.engine.batch_time.kv_s_per_token)
    # external arrivals, drawn and merged as the Python path does
    a_t, a_c = [], []
    for ci, c in enumerate(network.classes):
        times = c.arrival.times(gen, horizon_s=horizon)
        a_t.append(times)
        a_c.append(np.full(len(times), ci, dtype=i64))
    a_t = np.concatenate(a_t) if a_t else np.zeros(0)
    a_c = np.concatenate(a_c) if a_c else np.zeros(0, dtype=i64)
    order = np.lexsort((a_c, a_t))
    ext_t = np.append(a_t[order].astype(float), math.inf)
    ext_c = np.ascontiguousarray(a_c[order], dtype=i64)
    counts = np.bincount(ext_c, minlength=len(network.classes))
    ini = _initial_hops(network, initial)
    ihop = np.array([top[ci][k] for ci, k, n in ini for _ in range(n)], dtype=i64)
    icls = np.array([ci for ci, k, n in ini for _ in range(n)], dtype=i64)
    jobs = [int(counts[ci]) + sum(n for cj, _, n in ini if cj == ci) for ci in range(len(network.classes))]
    n_tasks = int(sum(jobs[ci] * hops_in[ci] for ci in range(len(network.classes))))  # (each hop at most once)
    # the routers' and choices' uniforms, drawn a block at a time; a random length's draws rewind the generator to
    # the first uniform not used yet, so every draw comes from it in the Python path's order
    uniforms = _Uniforms(gen, UB) if any(r.policy == "random" for r in network.routers) or any(choices_in) else None
    G = int(math.floor(horizon / dt_rec * (1 + 1e-12))) + 1
    grid = np.minimum(np.arange(G) * dt_rec, horizon)
    by_index = {i: length for i, length in sources.values()}  # (the Python path's sample_len: LBN at a time)
    asker = None
    if any(asked):
        from ..kernel.network_select import Asker

        asker = Asker({si: (s, int(nrank[si])) for si, s in enumerate(stations) if asked[si]}, lab_names,
                      check=check_batches, kv={si: (_tau_table(s.engine), _py_ranks(s, rows)) for si, s in
                                               enumerate(stations) if asked[si] and kvst[si]},
                      horizon=horizon, swap_s=swap_s)
    out = run_network(ext_t, ext_c, np.array(first, dtype=i64), hop, rt, rp, stl, tau, budget, nrank, options,
                      len(network.classes), n_lab, seen, ihop, icls, uniforms, grid, horizon=horizon,
                      max_batches=max_batches, record_hops=record_hops, n_tasks=n_tasks, n_sources=len(sources),
                      refill=lambda src: np.array([int(v) for v in by_index[src].sample(gen, LBN).tolist()], dtype=i64),
                      mem=mem if any(kvst) or mem[:, -1].any() or memf[:, 0].any() else None, memf=memf,
                      sub=np.array(sub, dtype=i64), subp=np.array(subp, dtype=float), n_jobs=int(sum(jobs)),
                      n_forks=n_forks, asker=asker)
    cls_names = [c.name for c in network.classes]
    completed = [int(x) for x in out["completed"]]
    soj = out["sojourn_sum"].tolist()
    rin = out["in_system"].astype(float)
    rbuf = out["buffer_tokens"].astype(float)
    rwk = out["station_tokens"].astype(float)
    rnt = out["station_requests"].astype(float)
    met = sorted((int(o), i) for i, o in enumerate(out["seen"]) if o > 0)
    wall = _time.perf_counter() - wall0
    hops = out["hops"]
    return NetworkSimResult(
        times_s=grid, in_system={c: rin[:, i].copy() for i, c in enumerate(cls_names)},
        buffer_tokens={lab_names[i]: rbuf[:, i].copy() for _, i in met},
        station_tokens={s.name: rwk[:, i].copy() for i, s in enumerate(stations)},
        station_requests={s.name: rnt[:, i].copy() for i, s in enumerate(stations)},
        completed=dict(zip(cls_names, completed)),
        mean_sojourn_s={c: (soj[i] / completed[i] if completed[i] else None) for i, c in enumerate(cls_names)},
        batches=out["batches"], events=out["events"], horizon_s=horizon, wall_s=wall, seed=seed,
        violations=(), blocked=tuple(sorted((stations[si].name, lab_names[li]) for si, li in zip(*np.nonzero(
            out["blocked"])))), preemptions={s.name: int(out["preemptions"][i]) for i, s in enumerate(stations)},
        rejected={s.name: int(out["rejected"][i]) for i, s in enumerate(stations)},
        hops=None if hops is None else {"station": hops[0], "arrival_s": hops[1], "finish_s": hops[2],
                                        "preemptions": hops[3]},
        network=network)


def _py_ranks(station, rows) -> dict:
    """``{step row: rank}`` of the hops at ``station`` as the Python clock ranks them (its ``_StationState.rank``;
    the loop gives a KV station's hops rank 0: it applies no priority there, but a policy asked in Python reads a
    request's ``rank``)."""
    from ..kernel.network import K_HOP

    rank = {h: k for k, h in enumerate(station.priority)}
    low = len(station.priority)
    return {j: rank.get(h.name, low) for j, (kind, h, *_) in enumerate(rows) if kind == K_HOP}


class _Uniforms:
    """The uniforms of the random routers and choices for :func:`fluidq.kernel.network.run_network`, drawn from
    ``gen`` a block at a time: ``block()`` draws the next block (remembering where it starts), ``rewind(used)``
    puts ``gen`` right after the block's first ``used`` (the ones the loop took: the next draw, a random length's,
    is then the Python path's next draw).  ``random()`` draws one double from one 64-bit word, so
    ``gen.random(n)`` is ``n`` calls of ``gen.random()``.

    A block's size follows use: the uniforms the loop took between two rewinds (a random length's refills) with a
    quarter more, and twice the last block when a block is used up before the next rewind (up to ``cap``), so
    that the draws thrown away at a rewind (and drawn again after the length's) stay about the number used
    rather than a fixed ``cap`` per refill; the loop asks for the next block only when it needs a uniform, so a
    rewind soon after another draws none."""

    def __init__(self, gen, cap, first=64):
        self.gen = gen
        self.state = None
        self.cap = cap
        self.size = min(first, cap)  # the next block's
        self.taken = 0  # uniforms taken since the last rewind, in blocks used up
        self.last = 0  # the estimate of the uniforms taken between two rewinds
        self.n = 0  # the current block's size

    def block(self):
        if self.state is not None and self.n:  # the last block is used up: the next one twice as long
            self.taken += self.n
            self.size = min(self.cap, 2 * self.n)
        self.state = self.gen.bit_generator.state
        self.n = self.size
        return self.gen.random(self.n)

    def rewind(self, used):
        if not self.n:  # no block drawn since the last rewind: the generator stands right after the last used
            return
        self.gen.bit_generator.state = self.state
        if used:
            self.gen.random(used)
        taken = self.taken + used
        if taken:  # (a rewind soon after another, with none taken, keeps the estimate)
            self.last = max(taken, self.last // 2)
        self.taken = self.n = 0
        self.size = min(self.cap, self.last + self.last // 4 + 16)


def check_run(network: Network, horizon_s, *, replications: int = 1, initial: dict | None = None,
              names: dict | None = None) -> float:
    """Refuse, before any work, runs that cannot be simulated; return the horizon as a float.

    ``horizon_s`` finite and at least :data:`fluidq.sim.core.MIN_HORIZON_S`; at most
    :data:`MAX_REQUESTS` requests expected in one run (arrivals over the horizon plus ``initial``),
    ``replications`` within ``1 .. MAX_RUNS`` and at most :data:`MAX_TOTAL_REQUESTS` over all of them.
    ``names`` maps ``"horizon_s"`` and ``"replications"`` to the caller's names (e.g. CLI flags); the
    message says the size the runs would have.
    """
    from .._validate import integer
    from .core import MAX_RUNS, MIN_HORIZON_S

    nm = {"horizon_s": "horizon_s", "replications": "replications", **(names or {})}
    horizon = real(nm["horizon_s"], horizon_s, positive=True)
    if horizon < MIN_HORIZON_S:
        raise ParameterError(nm["horizon_s"], horizon_s, f"a horizon >= {MIN_HORIZON_S:g} s",
                             "a shorter run serves nothing (no batch ends within it) and its growth cannot be fitted")
    rate = sum(float(c.rate_per_s) for c in network.classes)
    expected = horizon * rate
    if isinstance(initial, dict):
        vals = [v for v in initial.values() if isinstance(v, (int, float, np.integer, np.floating))
                and not isinstance(v, bool)]
        for v in vals:  # a non-finite count is refused by the run itself, naming initial
            try:
                f = float(v)
            except OverflowError:  # an int beyond the float range
                f = math.inf
            expected += max(f, 0.0) if not math.isnan(f) else 0.0
    if not expected <= MAX_REQUESTS:
        raise ParameterError(nm["horizon_s"], horizon_s,
                             f"a run of at most {MAX_REQUESTS:,} requests: {horizon:.4g} s at the total arrival rate "
                             f"{rate:.4g}/s" + (" plus the initial requests" if initial else "") +
                             f" would make about {expected:.3g} requests")
    n = integer(nm["replications"], replications, minimum=1, maximum=MAX_RUNS,
                why="the runs are kept for the verdict")
    if n > 1 and not n * expected <= MAX_TOTAL_REQUESTS:
        raise ParameterError(nm["replications"], replications,
                             f"at most {MAX_TOTAL_REQUESTS:,} requests over all replications",
                             f"{n:,} runs of about {expected:.3g} requests ({horizon:.4g} s at {rate:.4g}/s) would "
                             f"make {n * expected:.3g}; fewer replications or a shorter horizon")
    return horizon


def simulate_network(network: Network, *, horizon_s: float, rng=None, initial: dict | None = None,
                     record_dt_s: float | None = None, check_batches: bool | None = None,
                     max_batches: int | None = None, method: str = "auto", swap_s_per_token: float | None = None,
                     record_hops: bool = False) -> NetworkSimResult:
    """Simulate ``network`` for ``horizon_s`` seconds.

    Parameters
    ----------
    network : Network
        The network.
    horizon_s : float
        Simulated time, seconds.
    rng : numpy Generator, SeedSequence or int, optional
        Randomness (arrivals, lengths, choices, random routers); ``np.random.default_rng(rng)``.
    initial : dict, optional
        ``{hop label: n}``: ``n`` requests of the hop's class waiting at that hop at time 0 (the hop
        must be a top-level step of its class's route).
    record_dt_s : float, optional
        Sampling step of the recorded series (default ``horizon_s / 400``).
    check_batches : bool, optional
        Check every batch against the budgets, (6d) ``b_max`` and ``k_max``, as well, and raise
        :class:`~fluidq.errors.PolicyError` (``station 'name': policy 'p' at t=... s: <rule>``) at the first
        batch that breaks one, as :func:`fluidq.simulate` does.  Default: on when a station runs a policy that
        is not a built-in scheduler, off otherwise.  Off, a user policy's batches are still refused when no
        engine can run them (:func:`fluidq.policies.base.batch_faults`: ids that are not whole numbers or not
        residents', in ``blocked`` too, a chunk below one token or past the remaining prompt, a request twice in
        the prefill part, a decode token for a request in prefill or finished, two for one request); only the
        budgets are skipped.  A policy that leaves a station idle with work (an empty batch while requests wait
        with work left, not listed in ``Batch.blocked``) that no later hop made it take up by the horizon raises
        :class:`~fluidq.errors.PolicyError` too.
    max_batches : int, optional
        Stop once this many batches in total have ended (``batches`` reports the count).  ``"generic"``
        (batch by batch) stops after exactly ``max_batches``.  The paths that skip runs of identical
        batches (``"python"``, ``"kernel"``, ``"auto"``) count a run's ``k`` batches when the run ends and
        check the limit then, so they stop at the first batch end or run end that reaches it: ``batches`` may
        exceed ``max_batches`` by less than one run's length (one Sarathi station, ``max_batches=2``:
        ``batches=4``), the same count and state on those paths.
    method : {"auto", "generic", "python", "kernel"}
        ``"generic"`` calls ``policy.select(view)`` for every batch.  ``"auto"`` (default) runs the whole
        network on the compiled event loop of :mod:`fluidq.kernel.network` when it covers it (every station
        a built-in scheduler in FCFS order, with a KV cache of any memory model or without one, or any other
        policy -- a user's ``select(view)``, SJF, SRPT, a subclass of a built-in scheduler with a rule of its own,
        ... --, asked in Python on the loop's state by :mod:`fluidq.kernel.network_select`, with a KV cache too
        (:mod:`fluidq.kernel.network_kv`: its memory passes compiled, its policy, victim order and ``may_evict``
        asked in Python; under a JSQ router by remaining tokens too, the loop making an event's asks so far before
        the router reads such a station); routes of hops to stations, random or JSQ routers,
        probabilistic choices and fork-joins, fixed or random lengths; ``check_batches=True`` given explicitly asks
        every station in Python there, checked as on the Python path) and numba compiles, with the Python path's
        results exactly (a
        policy's batch that breaks the constraints raises the Python path's :class:`~fluidq.errors.PolicyError` at
        once; a batch over the budgets with ``check_batches=False`` runs as given, as on the Python path: the loop's
        batch arrays grow, 2026-12-07);
        otherwise it runs that Python path, which ``"python"`` forces (``"kernel"`` forces the compiled
        loop, or says why it does not apply).  The Python event-skipping path lets stations
        running a decode-first chunked scheduler in FCFS order (Sarathi-Serve, vLLM with chunked
        prefill) without ``k_max`` skip runs of identical batches: while no request finishes, no prompt
        completes and nothing arrives, every decoding request gets one token per batch (a virtual decode
        clock with a heap of finishing rounds) and the head prompt the same chunk, so the run is advanced
        in one step; an arrival cuts the run at the batch in progress.  Completions, request times and
        recorded series are the generic path's.  Whenever more requests decode than the budget holds,
        the station falls back to ``select(view)``; a station with a KV cache (``kv_capacity_tokens``)
        never skips (memory can bind at any batch): it always runs ``select(view)`` per batch (the compiled
        loop, the same rule batch by batch).
    swap_s_per_token : float, optional
        Seconds per KV token moved by a swap, out or in; required when a station's
        ``engine.memory.preemption`` is ``"swap"``.
    record_hops : bool
        Record every finished hop (the result's ``hops``).

    Returns
    -------
    NetworkSimResult

    Notes
    -----
    Events at equal times: external arrivals first (a request arriving as a batch ends joins the next
    batch, as in :func:`fluidq.simulate`), then batch completions, the batch that started first first,
    then the station listed first; both methods follow this order.

    Horizon: as in :func:`fluidq.simulate`, no batch starts at or after ``horizon_s`` and every batch in
    progress at the horizon is completed (requests finishing in it count as completed, with sojourns a
    little past the horizon; requests they route onward wait at their next station).  The recorded
    series stop at the horizon.

    KV cache: a station whose engine has ``kv_capacity_tokens`` runs the single-engine kernel's memory
    rules (:mod:`fluidq.kernel.memory`; the engine's ``memory``: token KV with the default rules, or
    block KV, prefix caching, reservation, recompute or swap, victim rule): a hop that can never fit
    is refused at arrival (``rejected``; the request leaves the network, or, inside a fork, stays
    counted in the system since its join never completes), and preemptions are counted per station.
    A one-station network gives :func:`fluidq.simulate`'s run exactly (a test checks every built-in
    scheduler).  ``k_max`` and context-aware batch times are modelled.

    Python's cyclic garbage collector is paused while the event loop runs and re-enabled on return
    (also on an error) if it was on: the loop makes no reference cycles, so collections would find
    nothing; other threads allocating cyclic garbage meanwhile keep it until the run ends.

    Examples
    --------
    >>> from fluidq import Engine, Affine
    >>> from fluidq.network import Network, Station, RequestClass, Hop, simulate_network
    >>> e = Engine(batch_time=Affine(c=0.05, a=0.0), b_max=256)
    >>> net = Network(stations=[Station(name="E", engine=e)], classes=[RequestClass(name="A", rate_per_s=10.0,
    ...     route=[Hop(engine="E", prompt_tokens=50, output_tokens=20)])])
    >>> r = simulate_network(net, horizon_s=20.0, rng=1)
    >>> r.completed["A"] > 150
    True
    """
    if not isinstance(network, Network):
        raise ParameterError("network", network, "a fluidq.network.Network")
    for st in network.stations:
        if getattr(st.engine, "async_scheduling", False):
            raise ParameterError(f"stations[{st.name!r}].engine.async_scheduling", True,
                                 "False in a network (async scheduling is modelled by fluidq.simulate only)")
    from .._validate import integer
    from .core import _check_rng

    horizon = check_run(network, horizon_s, initial=initial)
    rng = _check_rng(rng)
    if isinstance(rng, np.random.Generator):
        gen = rng
        seed = None
    else:
        ss = rng if isinstance(rng, np.random.SeedSequence) else np.random.SeedSequence(rng)
        gen = np.random.default_rng(ss)
        seed = ss.entropy
    dt_rec = real("record_dt_s", record_dt_s, positive=True) if record_dt_s is not None else horizon / 400.0
    if horizon / dt_rec > MAX_GRID:
        raise ParameterError("record_dt_s", record_dt_s, f"a step of at least horizon_s / {MAX_GRID:,} = "
                             f"{horizon / MAX_GRID:.3g} s (at most {MAX_GRID:,} recorded points)")
    if method not in ("auto", "generic", "python", "kernel"):
        raise ParameterError("method", method, "'auto', 'generic', 'python' or 'kernel'")
    max_batches = integer("max_batches", max_batches, minimum=1, allow_none=True)
    explicit_check = check_batches is not None
    if check_batches is None:  # a user policy's batches are checked, as fluidq.simulate checks them
        from ..policies.schedulers import Scheduler

        check_batches = any(not isinstance(st.policy, Scheduler) for st in network.stations)
    if not isinstance(check_batches, (bool, np.bool_)):
        raise ParameterError("check_batches", check_batches, "True, False or None (on for user policies)")
    if initial is not None and not isinstance(initial, dict):
        raise ParameterError("initial", initial, "a dict {hop label: number of requests}")
    if not isinstance(record_hops, (bool, np.bool_)):
        raise ParameterError("record_hops", record_hops, "True or False")
    if swap_s_per_token is not None:
        swap_s_per_token = real("swap_s_per_token", swap_s_per_token, nonnegative=True)
    for st in network.stations:
        if (st.engine.kv_capacity_tokens is not None and st.engine.memory.preemption == "swap"
                and swap_s_per_token is None):
            raise ParameterError("swap_s_per_token", None, f"seconds per KV token moved, for station {st.name!r} "
                                 "whose engine.memory.preemption is 'swap'")
    use_kernel = False
    if method in ("auto", "kernel"):
        # (the default checks the batches of the policies asked in Python, which the compiled loop always checks;
        # check_batches=True asks for every station's, built-in ones included)
        why = _kernel_unsupported(network, check_batches and explicit_check)
        if why is not None and method == "kernel":
            raise ParameterError("method", method, "a network the compiled event loop covers",
                                 f"{why}; method='auto' runs it on the Python path")
        from ..kernel._jit import compiled, warn_if_uncompiled, warn_kernel_limit

        if why is None:
            use_kernel = method == "kernel" or compiled()
        if why is None or why.startswith(_LIMIT_PREFIX):  # the loop would run it: why it does not, said once
            if not compiled():  # numba missing: the Python path (or, with method="kernel", the loop as Python)
                warn_if_uncompiled()
            elif why is not None:  # a size limit of the loop, not a model it lacks
                warn_kernel_limit(why)
    wall0 = _time.perf_counter()
    # The event loop makes no reference cycles (a fork's scope is released at its join), so the cyclic
    # garbage collector has nothing to find in the objects it makes per event; paused, it costs no time
    # (the compiled loop makes few objects, but a collection its set-up triggers would cost milliseconds).
    gc_on = gc.isenabled()
    gc.disable()
    try:
        if use_kernel:
            return _run_kernel(network, horizon, gen, seed, initial, dt_rec, max_batches, wall0, bool(record_hops),
                               swap_s_per_token or 0.0, bool(check_batches), bool(check_batches and explicit_check))
        return _run(network, horizon, gen, seed, initial, dt_rec, check_batches, max_batches,
                    "generic" if method == "generic" else "auto", wall0,
                    swap_s_per_token or 0.0, bool(record_hops))
    finally:
        if gc_on:
            gc.enable()


def _run(network, horizon, gen, seed, initial, dt_rec, check_batches, max_batches, method, wall0, swap_s,
         record_hops):
    """The Python path of :func:`simulate_network` (inputs checked): the kernel's event clock
    (:func:`fluidq.kernel.clock.run_clock`) with the single-engine simulator's batch-time tables for the
    stations with a KV cache; the result built from its run."""
    from ..kernel.clock import run_clock
    from .core import _tau_table

    kv_tables = {i: _tau_table(st.engine) for i, st in enumerate(network.stations)
                 if st.engine.kv_capacity_tokens is not None}
    out = run_clock(network, horizon, gen, initial, dt_rec, check_batches, max_batches, method, swap_s, record_hops,
                    kv_tables)
    wall = _time.perf_counter() - wall0
    return NetworkSimResult(**out, horizon_s=horizon, wall_s=wall, seed=seed, network=network)


def replicate_network(network: Network, *, horizon_s: float, replications: int = 4, rng=None, **kw) -> list:
    """Independent runs seeded from one ``SeedSequence`` (``rng`` an int, SeedSequence or None)."""
    from .._validate import integer

    if not isinstance(network, Network):
        raise ParameterError("network", network, "a fluidq.network.Network")
    check_run(network, horizon_s, replications=replications, initial=kw.get("initial"))
    n = integer("replications", replications, minimum=1)
    ss = rng if isinstance(rng, np.random.SeedSequence) else np.random.SeedSequence(rng)
    return [simulate_network(network, horizon_s=horizon_s, rng=child, **kw) for child in ss.spawn(n)]


# the documented old path ``fluidq.network.sim`` (and ``fluidq.network.simulate_network``): registered
# here, by the analysis, so that the topology package imports no simulator
sys.modules.setdefault("fluidq.network.sim", sys.modules[__name__])
_net_pkg = sys.modules["fluidq.network"]
for _name in ("simulate_network", "NetworkSimResult"):
    setattr(_net_pkg, _name, globals()[_name])
_net_pkg.sim = sys.modules[__name__]
