"""How large a truncated engine chain is, whether it fits in memory, and caps for a load (internal).

The count chain of :func:`fluidq.dtmc.build_dtmc` has ``(max_decode + 1) (max_prefill J + 1)`` states
(``J`` head-prompt positions for fixed prompts under a chunking scheduler, else 1).  Its builder
assembles ``P`` as two sparse factors (completions, then arrivals: :class:`fluidq.dtmc.build.FactoredP`):
about ``BYTES_PER_ENTRY`` bytes per entry, with ``completions x prefill outcomes + arrivals`` entries per
state.  :func:`check_memory` refuses a
chain whose estimate exceeds the memory this machine has available, *before* any array is allocated.

:func:`auto_caps` chooses the caps for a load when the caller gives none: a fluid estimate of the
mean requests in prefill and in decode gives the first caps; the chain is solved, and while the
stationary mass lost at the boundary exceeds the tolerance the cap whose marginal is heavy at the
boundary grows (extrapolating its tail), as long as the chain stays within the state and memory
limits.  A chain of :data:`ANNOUNCE_STATES` states or more has its size estimate (:class:`ChainSize`:
states, transitions, memory, CPU seconds) announced before it is built (``fluidq dtmc`` prints it on
stderr).
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass

import numpy as np
from scipy import stats

from ..errors import ParameterError
from ..results import fmt_load
from ..workload import Empirical, Fixed

__all__ = ["ANNOUNCE_STATES", "BYTES_PER_ENTRY", "MAX_STATES_LIMIT", "ChainSize", "auto_caps",
           "available_memory_bytes", "check_memory", "chain_states", "fluid_means"]

#: bytes the builder needs per transition entry (row and column int32, value float64, the
#: concatenated copies, the CSR matrix and its transpose for the solver)
BYTES_PER_ENTRY = 48
#: bytes per state for the per-state vectors (coordinates, sojourns, lost mass, solver vectors)
BYTES_PER_STATE = 200
#: states are indexed with 32-bit integers
MAX_STATES_LIMIT = 2**31 - 1


def available_memory_bytes() -> int | None:
    """Memory available to a new allocation: ``MemAvailable`` of /proc/meminfo, else ``os.sysconf``."""
    try:
        with open("/proc/meminfo", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    try:
        page = os.sysconf("SC_PAGE_SIZE")
        for key in ("SC_AVPHYS_PAGES", "SC_PHYS_PAGES"):
            n = os.sysconf(key)
            if n > 0 and page > 0:
                return int(n) * int(page)
    except (ValueError, OSError, AttributeError):
        pass
    return None


def _gib(x: float) -> str:
    return f"{x / 2**30:.3g} GiB"


def chain_states(max_prefill: int, max_decode: int, head_positions: int = 1) -> int:
    """States of the count chain: ``(max_decode + 1) (max_prefill J + 1)`` (exact Python integer)."""
    return (int(max_decode) + 1) * (int(max_prefill) * int(head_positions) + 1)


def transitions_per_state(lam: float, t_full: float, max_prefill: int, max_decode: int, b: int, q: float,
                          p_prompt: float | None, kernel_tol: float = 1e-12) -> float:
    """Estimated transition entries per state before duplicates are summed (an upper-side guess)."""
    mu = lam * t_full
    if mu > 0 and math.isfinite(mu):
        arrivals = min(max_prefill + 2, float(stats.poisson.isf(kernel_tol, min(mu, 1e15))) + 2)
    else:
        arrivals = max_prefill + 2
    d = min(max_decode, b)
    comp = min(d + 1, 14.0 * math.sqrt(max(d * q * (1 - q), 0.0)) + 2)
    outcomes = 1.0
    if p_prompt is not None:  # geometric prompts: binomial completions, then the position of the last one
        outcomes = min(b + 1, 14.0 * math.sqrt(max(b * p_prompt * (1 - p_prompt), 0.0)) + 2 + min(b, 1 / p_prompt))
    # the two factors of P (build.FactoredP): completions per prefill outcome, then arrivals per intermediate
    # (about two intermediates per state: the states of a level share them); a small chain also forms
    # the product, arrivals x completions x outcomes
    factored = outcomes * comp + 2.0 * arrivals
    return max(1.0, min(arrivals * comp * outcomes, factored))


#: chains of at least this many states have their size estimate announced before they are built
#: (``fluidq dtmc`` prints it on stderr: such a build and solve takes a second or more)
ANNOUNCE_STATES = 100_000
#: CPU seconds per *estimated* transition entry (the upper-side count of :func:`transitions_per_state`) to
#: build and solve a count chain: the 250,050-state Sarathi chain of benchmarks/bench_dtmc_scale.py, 13 M
#: estimated entries (6 M kept), took 1.7-3 CPU-s on the shared 2-vCPU VM (2026-12-06); a rough guide
#: printed with the size, not a promise
CPU_S_PER_ENTRY = 2e-7


@dataclass(frozen=True)
class ChainSize:
    """A chain's size estimated from its caps before any array is allocated."""

    states: int
    per_state: float
    bytes: float
    cpu_s: float

    @classmethod
    def of(cls, states: int, per_state: float) -> ChainSize:
        return cls(int(states), float(per_state), states * (per_state * BYTES_PER_ENTRY + BYTES_PER_STATE),
                   states * per_state * CPU_S_PER_ENTRY)

    def describe(self) -> str:
        """``"250,050 states, at most ~53.4 transitions each: up to about 0.643 GiB and 2.7 CPU-s to build and
        solve"`` (the estimate is on the high side: the memory check refuses by it)."""
        t = f"{self.cpu_s:.2g}" if self.cpu_s < 10 else f"{self.cpu_s:,.0f}"
        return (f"{self.states:,} states, at most ~{self.per_state:.3g} transitions each: up to about "
                f"{_gib(self.bytes)} and {t} CPU-s to build and solve")


def check_memory(n_states: int, per_state: float, *, what: str, name: str, value) -> float:
    """Raise :class:`ParameterError` naming ``name`` when the chain's estimate exceeds available memory.

    Returns the estimate in bytes.
    """
    need = n_states * (per_state * BYTES_PER_ENTRY + BYTES_PER_STATE)
    avail = available_memory_bytes()
    if avail is not None and need > avail:
        raise ParameterError(name, value, f"a chain that fits in memory",
                             f"{what}: ~{_gib(need)} for {n_states:,} states x ~{per_state:.3g} transitions "
                             f"each ({BYTES_PER_ENTRY} bytes per transition while building); this machine has "
                             f"{_gib(avail)} available; lower the caps")
    return need


def fluid_batch_s(engine, b: int, lam: float, mean_tokens: float) -> tuple[float, float]:
    """``(t, rho)``: the mean batch time at load ``lam`` (fixed point ``t = t(min(b, lam m t))``) and
    the load ``lam m t(b) / b`` relative to full batches (>= 1: saturated)."""
    bt = engine.batch_time
    t_full = float(bt(float(b)))
    rho = lam * mean_tokens * t_full / b
    t = float(bt(1.0))
    for _ in range(200):
        nt = float(bt(float(min(b, max(1.0, lam * mean_tokens * t)))))
        if abs(nt - t) <= 1e-12 * t_full:
            t = nt
            break
        t = nt
    return t, rho


def fluid_means(engine, workload, b: int) -> tuple[float, float, float]:
    """``(mean prefill requests, mean decoding requests, rho)`` of a fluid estimate (Little's law)."""
    lam = workload.arrival_rate_per_s
    mp, md = workload.mean_prompt_tokens, workload.mean_output_tokens
    t, rho = fluid_batch_s(engine, b, lam, mp + md)
    nd = lam * md * t
    npf = lam * t * (1.0 + mp / b)
    if rho < 1:
        npf /= (1.0 - rho)
        nd /= math.sqrt(1.0 - rho)
    return npf, nd, rho


def _initial(n: float, lo: int) -> int:
    if not math.isfinite(n):
        return lo
    return max(lo, int(math.ceil(n + 6.0 * math.sqrt(n + 1.0) + lo)))


def _tail_target(pmf: np.ndarray, cap: int, target: float) -> int:
    """A cap where the marginal ``pmf`` (support 0..cap) would fall below ``target``, extrapolating its
    tail geometrically from its last values; at least 1.25x and at most 4x ``cap``."""
    lo_cap, hi_cap = max(cap + 2, int(math.ceil(1.25 * cap))), 4 * cap + 8
    k = max(2, cap // 8)
    if pmf.size <= k or not pmf[-1] > 0:
        return lo_cap
    a, z = float(pmf[-1 - k]), float(pmf[-1])
    if not (a > z > 0):
        return hi_cap
    r = (z / a) ** (1.0 / k)
    extra = math.log(target / z) / math.log(r)
    return int(min(hi_cap, max(lo_cap, math.ceil(cap + 1.5 * extra + 2))))


def auto_caps(engine, workload, policy, *, tolerance: float = 1e-6, max_states: int = 500_000,
              method: str = "auto", build_kw: dict | None = None, announce=None):
    """Caps for this load: ``(chain, result, notes)`` of the last chain built and solved.

    Starts from a fluid estimate of the mean requests in prefill and decode; solves; while the mass
    lost at the boundary exceeds ``tolerance``, grows the cap(s) whose marginal is heavy at the
    boundary (extrapolating its tail), within ``max_states`` states and the memory available.  A load
    the policy cannot serve (at or above what it serves under a backlog) is solved once with the first
    caps: the answer is "unstable" whatever the caps.  ``announce(caps, size)``, when given, is called
    before each build of at least :data:`ANNOUNCE_STATES` states with the caps ``(max_prefill,
    max_decode)`` and their :class:`ChainSize` (``fluidq dtmc`` prints it).  Orca with ``Fixed`` prompts and
    outputs goes to the adaptive ordered chain (:func:`fluidq.dtmc.ordered.build_ordered_dtmc`), which grows its
    state set to ``tolerance`` within ``max_states`` and announces its rounds the same way; at a load it cannot
    serve that chain is not grown (the empty state only: the answer is "unstable" all the same).  Other
    finite-support lengths (``Fixed`` or ``Empirical`` outputs under other schedulers, ``Empirical`` prompts)
    raise :class:`ParameterError`: their chain (:func:`fluidq.dtmc.finite.build_finite_dtmc`) grows as
    ``C(max_decode + output, output)`` and no fluid rule sizes it; give ``max_prefill`` and ``max_decode`` to
    :func:`fluidq.build_dtmc`.
    """
    from .saturation import saturated_rate
    from .build import _lengths, build_dtmc, scheduler_rules

    build_kw = dict(build_kw or {})
    pol, b = scheduler_rules(policy, engine)
    out, prompt = workload.output_tokens, workload.prompt_tokens
    orca = pol.priority == "prefill" and pol.mixed
    finite_out = isinstance(out, (Fixed, Empirical)) and not (isinstance(out, Fixed) and out.n == 1)
    adaptive = orca and isinstance(out, Fixed) and out.n > 1 and isinstance(prompt, Fixed)
    if not adaptive and (finite_out or isinstance(prompt, Empirical)):
        # build_dtmc's finite-support (or ordered) chain: decoders per remaining tokens, C(max_decode + v, v)
        # sequences; no fluid rule sizes that box, so the caller chooses it
        name, value = ("output_tokens", out) if finite_out else ("prompt_tokens", prompt)
        raise ParameterError(name, value, f"Geometric outputs and Fixed or Geometric prompts for caps chosen by the "
                             f"load under {pol.name} (only Orca with Fixed prompts and outputs grows its chain "
                             "by itself)", "give max_prefill and max_decode to fluidq.build_dtmc (its chain "
                             "holds the decoders' remaining tokens: C(max_decode + output, output) decode states; "
                             "start small), or use Geometric outputs of the same mean")
    npf, nd, rho = fluid_means(engine, workload, b)
    lam = workload.arrival_rate_per_s
    offered = lam * (workload.mean_prompt_tokens + workload.mean_output_tokens)
    sat, _how = saturated_rate(engine, workload, pol)
    # known before any chain is built: at or above what the policy serves under a backlog (or above the
    # Theorem-2(a) capacity, which bounds it) no caps hold the mass, and the answer is "unstable" whatever they are
    hopeless = sat is not None and offered >= sat or rho >= 1
    notes = [f"fluid estimate: {npf:.3g} requests in prefill, {nd:.3g} decoding (load {fmt_load(rho)} of full batches)"]
    if adaptive:  # Orca, fixed lengths: the adaptive ordered chain
        from .ordered import build_ordered_dtmc

        chain = build_ordered_dtmc(engine, workload, pol, max_prefill=build_kw.get("max_prefill", 40),
                                   max_decode=None, tolerance=tolerance, max_states=1 if hopeless else max_states,
                                   kernel_tol=build_kw.get("kernel_tol", 1e-12), adaptive=True, announce=announce)
        if hopeless:
            notes.append(f"offered {offered:.4g} tokens/s is at or above what {pol.name} serves under a backlog: "
                         "no states hold the mass, the adaptive chain is not grown (the empty state only)")
            return chain, chain.solve(method), notes
        return chain, chain.solve(method), [f"adaptive ordered chain: {n}" for n in chain.inputs["adaptive"][-1:]]
    vp, _pp, _q = _lengths(workload, pol, b)
    J = vp if (vp is not None and pol.chunked and vp > 1) else 1
    Np, Nd = _initial(npf, 4), _initial(nd, 8)
    if hopeless:
        Np, Nd = 4, 8
        notes.append(f"offered {offered:.4g} tokens/s is at or above what {pol.name} serves under a backlog: "
                     "no caps hold the mass, the smallest are used")

    def fit(np_, nd_):
        """Shrink both caps in proportion until the chain is within max_states."""
        while chain_states(np_, nd_, J) > max_states and (np_ > 1 or nd_ > 1):
            np_, nd_ = max(1, int(np_ * 0.9)), max(1, int(nd_ * 0.9))
        return np_, nd_

    Np, Nd = fit(Np, Nd)
    while True:
        if announce is not None and chain_states(Np, Nd, J) >= ANNOUNCE_STATES:
            from .build import chain_size

            announce((Np, Nd), chain_size(engine, workload, pol, Np, Nd, build_kw.get("kernel_tol", 1e-12)))
        chain = build_dtmc(engine, workload, pol, max_prefill=Np, max_decode=Nd, tolerance=tolerance,
                           max_states=max_states, **build_kw)
        res = chain.solve(method)
        lost = res.lost_mass
        if hopeless or res.status.value != "inaccurate" or lost is None or not lost > tolerance:
            break
        target = tolerance * 1e-2
        _, pp = res.marginal("n_p")
        _, pd = res.marginal("n_d")
        heavy_p = pp[-1] > target
        heavy_d = pd[-1] > target
        if not (heavy_p or heavy_d):
            heavy_p = heavy_d = True
        nNp = _tail_target(pp, Np, target) if heavy_p else Np
        nNd = _tail_target(pd, Nd, target) if heavy_d else Nd
        nNp, nNd = fit(nNp, nNd)
        if (nNp, nNd) == (Np, Nd) or nNp < Np or nNd < Nd:
            notes.append(f"larger caps would exceed max_states={max_states:,} states: the mass lost at the "
                         f"boundary stays {lost:.2e} > tolerance {tolerance:g}")
            break
        try:
            from .build import chain_memory_check

            chain_memory_check(engine, workload, pol, nNp, nNd, build_kw.get("kernel_tol", 1e-12))
        except ParameterError:
            notes.append(f"larger caps ({nNp}, {nNd}) would not fit in memory: the mass lost at the boundary "
                         f"stays {lost:.2e} > tolerance {tolerance:g}")
            break
        notes.append(f"caps ({Np}, {Nd}) lost {lost:.2e} > {tolerance:g} at the boundary: grown to ({nNp}, {nNd})")
        Np, Nd = nNp, nNd
    return chain, res, notes
