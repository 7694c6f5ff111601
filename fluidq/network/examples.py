"""The networks of reference §3, ready to use.

* :func:`rybko_stolyar` -- two stations, routes A: 1 -> 2 and B: 2 -> 1 (classes 1, 2 and 3, 4);
* :func:`lu_kumar` -- one route visiting stations 1, 2, 2, 1 (classes 1-4);
* :func:`llm_rybko_stolyar` -- the LLM version with two Sarathi engines (paper §5.4, reconstructed).

The classical ones are built with :meth:`Network.classical` (stations that serve one unit of work per
unit time); mean times default to ``(0.1, 0.6, 0.1, 0.6)`` and ``lambda = 1``, where each station's
load is 0.7 but ``lambda (m2 + m4) = 1.2 > 1``.  ``priority="exit"`` gives station 1 priority to class 4
and station 2 to class 2 (the classes that leave); ``"reversed"`` the opposite; ``None`` none.

References
----------
Rybko, Stolyar (1992); Lu, Kumar (1991); Li, Dai, Peng, arXiv:2504.07347 §5.4.
"""
from __future__ import annotations

from ..batchtime import Affine
from ..engine import Engine
from ..errors import ParameterError
from .model import Hop, Network, RequestClass, Station

__all__ = ["rybko_stolyar", "lu_kumar", "llm_rybko_stolyar", "CLASSICAL_MEAN_TIMES", "LLM_RS_RATE_PER_S",
           "LLM_RS_VIRTUAL_RATE_PER_S"]

CLASSICAL_MEAN_TIMES = {"1": 0.1, "2": 0.6, "3": 0.1, "4": 0.6}
LLM_RS_RATE_PER_S = 0.9 * 768 / 608
_PRIORITIES = {"exit": {"S1": ["4", "1"], "S2": ["2", "3"]},
               "reversed": {"S1": ["1", "4"], "S2": ["3", "2"]}, None: {}}


def _priority(priority):
    if isinstance(priority, dict):
        return priority
    if priority not in _PRIORITIES:
        raise ParameterError("priority", priority, "'exit', 'reversed', None or {station: [hop labels]}")
    return _PRIORITIES[priority]


def rybko_stolyar(*, priority="exit", rate_per_s: float = 1.0, mean_times: dict | None = None,
                  **kw) -> Network:
    """Classical Rybko--Stolyar network (see the module docstring); ``kw`` go to :meth:`Network.classical`."""
    return Network.classical(stations=["S1", "S2"], routes={"A": [("S1", "1"), ("S2", "2")],
                                                            "B": [("S2", "3"), ("S1", "4")]},
                             rate_per_s=rate_per_s, mean_times=mean_times or CLASSICAL_MEAN_TIMES,
                             priority=_priority(priority), name="rybko-stolyar", **kw)


def lu_kumar(*, priority="exit", rate_per_s: float = 1.0, mean_times: dict | None = None, **kw) -> Network:
    """Lu--Kumar network (see the module docstring); ``kw`` go to :meth:`Network.classical`."""
    return Network.classical(stations=["S1", "S2"],
                             routes={"A": [("S1", "1"), ("S2", "2"), ("S2", "3"), ("S1", "4")]},
                             rate_per_s=rate_per_s, mean_times=mean_times or CLASSICAL_MEAN_TIMES,
                             priority=_priority(priority), name="lu-kumar", **kw)


#: the token analogue of the virtual-station condition of the LLM Rybko--Stolyar network: hops A.2 and
#: B.2 (544 tokens each) are never served together in the fluid model, so it diverges once
#: ``lambda (544 + 544) > 768`` tokens/s, i.e. above this rate per type (ours, reference §3)
LLM_RS_VIRTUAL_RATE_PER_S = 768 / 1088


def llm_rybko_stolyar(*, priority="exit", rate_per_s: float = LLM_RS_RATE_PER_S, b_max: int = 768,
                      policy="sarathi", k_max: int | None = None) -> Network:
    """Two Sarathi engines, ``b_max = 768``, one second per batch (``Affine(c=1, a=0)``).

    Type A: ``(32, 32)`` on E1 (hop ``A.1``) then ``(512, 32)`` on E2 (``A.2``); type B mirrored.
    ``priority="exit"``: E1 serves ``B.2`` first and E2 ``A.2``; ``"reversed"``: the entering hops first.
    At the default rate each engine is 90 % loaded.  ``k_max``: the engines' batch-size limit (``b_max``
    or more never binds and changes no verdict).
    """
    e = Engine(batch_time=Affine(c=1.0, a=0.0), b_max=b_max, k_max=k_max)
    if priority == "exit":
        pr = {"E1": ("B.2", "A.1"), "E2": ("A.2", "B.1")}
    elif priority == "reversed":
        pr = {"E1": ("A.1", "B.2"), "E2": ("B.1", "A.2")}
    elif priority is None:
        pr = {}
    else:
        raise ParameterError("priority", priority, "'exit', 'reversed' or None")
    return Network(
        stations=[Station(name="E1", engine=e.with_(name="E1"), policy=policy, priority=pr.get("E1", ())),
                  Station(name="E2", engine=e.with_(name="E2"), policy=policy, priority=pr.get("E2", ()))],
        classes=[RequestClass(name="A", rate_per_s=rate_per_s,
                              route=[Hop(engine="E1", prompt_tokens=32, output_tokens=32, name="A.1"),
                                     Hop(engine="E2", prompt_tokens=512, output_tokens=32, name="A.2")]),
                 RequestClass(name="B", rate_per_s=rate_per_s,
                              route=[Hop(engine="E2", prompt_tokens=32, output_tokens=32, name="B.1"),
                                     Hop(engine="E1", prompt_tokens=512, output_tokens=32, name="B.2")])],
        name="llm-rybko-stolyar")
