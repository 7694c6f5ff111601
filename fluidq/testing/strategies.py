"""Hypothesis strategies for property tests of policies and analyses (needs ``hypothesis``).

``request_states()``, ``queue_views()``, ``schedulers()``, ``engines()``, ``workloads()``.

Examples
--------
>>> from hypothesis import given
>>> from fluidq.testing.strategies import queue_views
>>> from fluidq.policies import Sarathi, batch_violations
>>> @given(queue_views())
... def test_sarathi_batches_are_valid(view):
...     assert batch_violations(Sarathi().select(view), view) == []
"""
from __future__ import annotations

try:
    from hypothesis import strategies as st
except ImportError as exc:  # pragma: no cover - depends on the environment
    raise ImportError("fluidq.testing.strategies needs hypothesis: pip install 'fluidq[test]'") from exc

from ..batchtime import Staircase
from ..engine import Engine
from ..policies.base import QueueView, RequestState
from ..policies.schedulers import Scheduler
from ..workload import Geometric, Poisson, Workload

__all__ = ["engines", "queue_views", "request_states", "schedulers", "workloads"]


@st.composite
def request_states(draw, rid: int = 0, max_prompt: int = 200, max_output: int = 50):
    """One resident: waiting, part-way through prefill, or decoding."""
    p = draw(st.integers(1, max_prompt))
    d = draw(st.integers(1, max_output))
    phase = draw(st.sampled_from(["waiting", "prefill", "decode"]))
    pf = 0 if phase == "waiting" else (draw(st.integers(1, p)) if phase == "prefill" else p)
    if phase == "prefill" and pf == p:
        pf = p - 1
    dec = draw(st.integers(0, d - 1)) if phase == "decode" else 0
    return RequestState(rid=rid, arrival_s=float(rid), prompt_tokens=p, output_tokens=d, prefilled=pf, decoded=dec)


@st.composite
def queue_views(draw, max_requests: int = 10, max_b_max: int = 256):
    """A queue state with budgets (``k_max`` sometimes set)."""
    n = draw(st.integers(0, max_requests))
    rs = tuple(draw(request_states(rid=i)) for i in range(n))
    b = draw(st.integers(1, max_b_max))
    k = draw(st.one_of(st.none(), st.integers(1, max_requests + 2)))
    return QueueView(requests=rs, now_s=float(n), b_max=b, k_max=k)


def schedulers():
    """Any built-in batch former (priority x mixing x chunking x chunk_long_prompts, budgets)."""
    return st.builds(lambda pr, m, c, cl, b, k: Scheduler(name="hyp", priority=pr, mixed=m, chunked=c,
                                                          chunk_long_prompts=cl, b_max=b, k_max=k),
                     st.sampled_from(["prefill", "decode"]), st.booleans(), st.booleans(), st.booleans(),
                     st.one_of(st.none(), st.integers(4, 128)), st.one_of(st.none(), st.integers(1, 32)))


def engines(max_b_max: int = 512):
    """Staircase engines with random constants and budgets."""
    return st.builds(lambda c, a, b0, mult, k: Engine(batch_time=Staircase(c=c, a=a, b0=b0), b_max=b0 * mult, k_max=k),
                     st.floats(0.001, 0.05), st.floats(0.001, 0.05), st.sampled_from([8, 16, 32, 64, 128]),
                     st.integers(1, 4), st.one_of(st.none(), st.integers(1, 64)))


def workloads():
    """Poisson workloads with geometric lengths."""
    return st.builds(lambda r, mp, md: Workload(arrival=Poisson(rate_per_s=r), prompt_tokens=Geometric(mean_tokens=mp),
                                                output_tokens=Geometric(mean_tokens=md)),
                     st.floats(0.1, 50.0), st.floats(1.0, 300.0), st.floats(1.0, 300.0))
