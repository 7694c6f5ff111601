"""The answer of a stationary solve: distribution, means, tails, throughput and accuracy."""
from __future__ import annotations

import time
from dataclasses import dataclass, field

import numpy as np

from ..results import Result, Status, plain
from .solve import stationary

__all__ = ["StationaryResult", "solve_chain"]


@dataclass(frozen=True, eq=False)
class StationaryResult(Result):
    """Stationary behaviour of a truncated engine chain.

    Means are *time averages* unless the name says ``embedded``: the embedded chain visits batch
    boundaries, and a state is weighted by the time until the next boundary (its batch time,
    ``1/lambda`` for the idle state); requests arriving during a batch add ``lambda E[t^2]/2``
    request-seconds per batch.  When ``status`` is "unstable" or the solve failed the numbers
    are ``None``, never NaN.

    Attributes
    ----------
    status : Status
        "stable" (solved, boundary mass below tolerance), "inaccurate" (too much mass lost at the
        truncation boundary, or the solver did not converge), "unstable" (offered load at or above
        the capacity of Theorem 2(a): no stationary distribution exists).
    mean_requests, mean_prefill, mean_decode : float or None
        Requests in system (time average), of which in prefill and in decode.
    mean_requests_embedded : float or None
        Mean requests at batch boundaries.
    mean_unprocessed_tokens : float or None
        Expected prefill + decode tokens still to process (time average at batch starts plus the
        arrivals during the batch).
    requests_quantiles : dict
        ``{0.5: n, 0.9: n, 0.99: n}`` of the time-stationary requests at batch starts.
    throughput_requests_per_s, throughput_tokens_per_s : float or None
        Completions and tokens processed per second; equal to the offered rates when stable.
    lost_mass : float
        Stationary probability of a transition cut at the truncation boundary.
    """

    status: Status
    reason: str
    policy: str
    arrival_rate_per_s: float
    n_states: int
    nnz: int
    build_s: float
    solve_s: float
    method: str
    residual: float | None
    lost_mass: float | None
    tolerance: float
    mean_requests: float | None = None
    mean_prefill: float | None = None
    mean_decode: float | None = None
    mean_requests_embedded: float | None = None
    mean_unprocessed_tokens: float | None = None
    mean_batch_s: float | None = None
    requests_quantiles: dict = field(default_factory=dict)
    throughput_requests_per_s: float | None = None
    throughput_tokens_per_s: float | None = None
    pi: np.ndarray | None = field(default=None, repr=False)
    chain: object = field(default=None, repr=False, compare=False)

    @property
    def inputs(self) -> dict:
        """What the chain was solved for: the policy, the arrival rate, the truncation tolerance and the solver."""
        return {"policy": self.policy, "arrival_rate_per_s": self.arrival_rate_per_s, "tolerance": self.tolerance,
                "method": self.method}

    def requests_pmf(self, time_average: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """``(n, P(N = n))`` for the requests in system at batch starts (time-weighted by default)."""
        if self.pi is None:
            return np.zeros(0, int), np.zeros(0)
        w = self.pi * (self.chain.sojourn_s if time_average else 1.0)
        n = self.chain.residents.astype(int)
        pmf = np.bincount(n, w)
        return np.arange(pmf.size), pmf / pmf.sum()

    def tail(self, n: int, time_average: bool = True) -> float | None:
        """``P(N > n)`` requests in system."""
        if self.pi is None:
            return None
        k, pmf = self.requests_pmf(time_average)
        return float(pmf[k > n].sum())

    def marginal(self, name: str = "n_p") -> tuple[np.ndarray, np.ndarray]:
        """Embedded marginal of one coordinate (``"n_p"``, ``"n_d"``)."""
        if self.pi is None:
            return np.zeros(0, int), np.zeros(0)
        x = self.chain.space[name]
        pmf = np.bincount(x, self.pi)
        return np.arange(pmf.size), pmf

    def to_dict(self) -> dict:
        d = {k: getattr(self, k) for k in ("status", "reason", "policy", "arrival_rate_per_s", "n_states", "nnz",
                                            "build_s", "solve_s", "method", "residual", "lost_mass", "tolerance",
                                            "mean_requests", "mean_prefill", "mean_decode", "mean_requests_embedded",
                                            "mean_unprocessed_tokens", "mean_batch_s", "requests_quantiles",
                                            "throughput_requests_per_s", "throughput_tokens_per_s")}
        if self.chain is not None:
            d["caps"] = self.chain.caps
        return plain(d)

    def plot(self, ax=None, path=None, **kw):
        from ..plotting.dtmc import plot_stationary

        return plot_stationary(self, ax=ax, path=path, **kw)


def _caps_words(caps) -> str:
    """``"max_prefill 13, max_decode 90, head_progress 400"``: a chain's caps for people (no dict repr)."""
    return ", ".join(f"{k} {v:,}" for k, v in caps.items())


def chain_levels(chain):
    """The first state of each prefill level (``n_p``) and the number of states, when the chain's states are
    ordered by ``n_p`` (the count, finite-support and ordered engine chains are); else ``None``."""
    space = getattr(chain, "space", None)
    if space is None or "n_p" not in space.names:
        return None
    npf = space["n_p"]
    if npf.size == 0 or np.any(np.diff(npf) < 0):
        return None
    return np.searchsorted(npf, np.arange(int(npf[-1]) + 2))


def solve_chain(chain, *, method="auto", tol=1e-10, tolerance=1e-6) -> StationaryResult:
    """Solve ``chain`` (an :class:`~fluidq.dtmc.build.EngineChain`) and compute the metrics."""
    from .._validate import real

    tol = real("tol", tol, positive=True)
    tolerance = real("tolerance", tolerance, nonnegative=True)
    inp = chain.inputs
    lam = chain.arrival_rate_per_s
    offered = lam * (inp["m_p"] + inp["m_d"])
    cap = inp["capacity_tokens_per_s"]
    common = {"policy": chain.policy, "arrival_rate_per_s": lam, "n_states": chain.n_states, "nnz": chain.nnz,
                  "build_s": chain.build_s, "tolerance": tolerance, "chain": chain}
    if offered >= cap:
        return StationaryResult(status=Status.UNSTABLE, reason=(
            f"offered load {offered:.4g} tokens/s >= capacity {cap:.4g} tokens/s: by Theorem 2(a) of "
            "arXiv:2504.07347 no scheduler is positive recurrent, so there is no stationary distribution "
            "(the truncated chain would only describe its caps)"), solve_s=0.0, method="none", residual=None,
            lost_mass=None, **common)
    t0 = time.perf_counter()
    sol = stationary(chain.P, method, tol=tol, ref=0, levels=chain_levels(chain))
    solve_s = time.perf_counter() - t0
    if sol.method == "failed":
        return StationaryResult(status=Status.INACCURATE, reason=f"no solver converged: {sol.note}",
                                solve_s=solve_s, method="failed", residual=None, lost_mass=None, **common)
    pi = sol.pi
    tau = chain.sojourn_s
    Z = float(pi @ tau)
    lost = float(pi @ chain.lost)
    sat = inp.get("saturated_tokens_per_s")
    if sat is not None and offered >= sat:
        # the truncated chain is solved (its boundary loss is evidence), but it describes only its caps
        return StationaryResult(status=Status.UNSTABLE, reason=(
            f"offered load {offered:.4g} tokens/s >= {sat:.4g} tokens/s, what {chain.policy} serves under a backlog "
            f"({inp.get('saturated_how', '')}): its backlog grows, so there is no stationary distribution; the "
            f"truncated chain's boundary mass (the stationary probability per step of leaving its caps "
            f"({_caps_words(chain.caps)})) is {lost:.3g} (no stationary metrics are given)"), solve_s=solve_s, method=sol.method, residual=sol.residual, lost_mass=lost,
            **common)
    area_arrivals = lam * float(pi @ chain.sojourn2_s2) / 2.0
    N = chain.residents
    mean_req = (float(pi @ (N * tau)) + area_arrivals) / Z
    npf = chain.space["n_p"].astype(float)
    mean_pre = (float(pi @ (npf * tau)) + area_arrivals) / Z
    mean_dec = float(pi @ (chain.space["n_d"] * tau)) / Z
    mean_tok = (float(pi @ (chain.unprocessed_tokens * tau)) + area_arrivals * (inp["m_p"] + inp["m_d"])) / Z
    thr_req = float(pi @ chain.completions) / Z
    thr_tok = float(pi @ chain.batch_tokens) / Z
    busy = chain.batch_tokens > 0
    mean_batch = float(pi[busy] @ tau[busy]) / float(pi[busy].sum()) if busy.any() else None
    w = pi * tau
    pmf = np.bincount(N.astype(int), w)
    pmf /= pmf.sum()
    cdf = np.cumsum(pmf)
    quant = {qq: int(np.searchsorted(cdf, qq - 1e-12)) for qq in (0.5, 0.9, 0.99)}
    notes = []
    if not sol.converged:
        notes.append(f"solver did not reach the residual target ({sol.note})")
    if lost > tolerance:
        notes.append(f"stationary mass {lost:.3g} leaves the truncation box (caps {_caps_words(chain.caps)}) per step, above "
                     f"the tolerance {tolerance:g}: raise max_prefill/max_decode, or the policy may be unstable "
                     "at this load")
    if notes:
        status, reason = Status.INACCURATE, "; ".join(notes)
    else:
        status = Status.STABLE
        where = f" {sol.note[len('solved '):]}" if sol.note.startswith("solved on levels") else ""
        reason = (f"solved by {sol.method}{where} (residual {sol.residual:.1e} on the whole chain); mass lost at "
                  f"the boundary {lost:.1e} <= {tolerance:g}")
    return StationaryResult(status=status, reason=reason, solve_s=solve_s, method=sol.method,
                            residual=sol.residual, lost_mass=lost, mean_requests=mean_req, mean_prefill=mean_pre,
                            mean_decode=mean_dec, mean_requests_embedded=float(pi @ N),
                            mean_unprocessed_tokens=mean_tok, mean_batch_s=mean_batch, requests_quantiles=quant,
                            throughput_requests_per_s=thr_req, throughput_tokens_per_s=thr_tok, pi=pi, **common)
