"""Capacity as the token budget ``b_max`` varies: Theorem 2's ``max_b b/t(b)`` for each budget on a grid
(arXiv:2504.07347), one :func:`fluidq.capacity.max_throughput` per budget.

The numbers are computed here, by the analysis; :func:`fluidq.plotting.capacity.plot_capacity_vs_bmax`
only draws a :class:`CapacityCurveResult` (issue 14: plotting takes results and recomputes nothing).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._validate import BUDGET_WHY, MAX_BUDGET_TOKENS, integer
from ..engine import Engine
from ..errors import ExtrapolationError, ParameterError
from ..results import Result, plain
from ..workload import Workload

__all__ = ["CapacityCurveResult", "capacity_vs_bmax"]


@dataclass(frozen=True)
class CapacityCurveResult(Result):
    """Capacity (tokens/s, and requests/s with a workload) for each token budget ``b_max`` of a grid.

    Attributes
    ----------
    b_max_values : tuple of int
        The budgets, increasing.
    tokens_per_s : tuple of float
        The capacity at each budget; NaN where the batch-time model does not reach that far (a tabulated
        model ends before it): the curve stops there.
    requests_per_s : tuple of float or None
        ``tokens_per_s / (m_p + m_d)`` when a workload was given.
    configured_b_max : int
        The engine's own budget (the plot marks it).
    offered_tokens_per_s : float or None
        The workload's offered token rate ``lambda (m_p + m_d)``, when a workload was given.
    inputs : dict
        The engine and workload.

    A curve is no verdict: it has no ``status``.
    """

    b_max_values: tuple
    tokens_per_s: tuple
    requests_per_s: tuple | None
    configured_b_max: int
    offered_tokens_per_s: float | None = None
    inputs: dict = field(default_factory=dict, repr=False)

    def to_dict(self) -> dict:
        return plain({"b_max_values": list(self.b_max_values), "tokens_per_s": list(self.tokens_per_s),
                      "requests_per_s": None if self.requests_per_s is None else list(self.requests_per_s),
                      "configured_b_max": self.configured_b_max,
                      "offered_tokens_per_s": self.offered_tokens_per_s, "inputs": self.inputs})

    def to_frame(self):
        """One row per budget: ``b_max``, ``tokens_per_s`` (and ``requests_per_s``) (needs pandas)."""
        import pandas as pd

        cols = {"b_max": list(self.b_max_values), "tokens_per_s": list(self.tokens_per_s)}
        if self.requests_per_s is not None:
            cols["requests_per_s"] = list(self.requests_per_s)
        return pd.DataFrame(cols)

    def plot(self, ax=None, path=None, *, engines=None):
        """The curve, the configured ``b_max`` and the offered load (per engine over ``engines`` engines)."""
        from ..plotting.capacity import plot_capacity_vs_bmax

        return plot_capacity_vs_bmax(self, engines=engines, ax=ax, path=path)


def capacity_vs_bmax(engine: Engine, workload: Workload | None = None, *, b_max_values=None) -> CapacityCurveResult:
    """Theorem 2's capacity of ``engine`` with its budget set to each of ``b_max_values``.

    A budget the batch-time model does not reach (a tabulated model that ends before it) gives NaN there.

    Parameters
    ----------
    engine : Engine
    workload : Workload, optional
        Adds requests/s and the offered load.
    b_max_values : sequence of int, optional
        Budgets to evaluate (at least one; each an integer in ``1..2**24``, the largest ``b_max`` an
        :class:`Engine` takes); by default 96 budgets from 16 to ``4 b_max``.  Any other error of the
        analysis is raised, not turned into NaN.

    Returns
    -------
    CapacityCurveResult
    """
    if not isinstance(engine, Engine):
        raise ParameterError("engine", engine, "an Engine")
    if workload is not None and not isinstance(workload, Workload):
        raise ParameterError("workload", workload, "a Workload or None")
    from . import max_throughput, offered_tokens_per_s

    if b_max_values is None:
        values = [int(b) for b in np.unique(np.linspace(16, 4 * engine.b_max, 96).astype(int))]
    else:
        given = np.atleast_1d(np.asarray(b_max_values, dtype=object)).tolist()
        if not given:
            raise ParameterError("b_max_values", b_max_values, "at least one token budget (integers >= 1)",
                                 "leave it out (None) for 96 budgets from 16 to 4 b_max")
        values = [integer("b_max_values", b, minimum=1, maximum=MAX_BUDGET_TOKENS, why=BUDGET_WHY) for b in given]
    caps, reqs = [], []
    for b in values:
        try:
            c = max_throughput(engine.with_(b_max=int(b)), workload)
        except ExtrapolationError:  # a tabulated model does not reach this far: the curve stops there
            caps.append(float("nan"))
            reqs.append(float("nan"))
            continue
        caps.append(float(c.tokens_per_s))
        reqs.append(float("nan") if c.requests_per_s is None else float(c.requests_per_s))
    inputs = {"engine": engine.to_dict()}
    if workload is not None:
        inputs["workload"] = workload.to_dict()
    return CapacityCurveResult(
        b_max_values=tuple(values), tokens_per_s=tuple(caps),
        requests_per_s=None if workload is None else tuple(reqs), configured_b_max=int(engine.b_max),
        offered_tokens_per_s=None if workload is None else float(offered_tokens_per_s(engine, workload)), inputs=inputs)
