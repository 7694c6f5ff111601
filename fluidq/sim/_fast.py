"""The event-skipping kernel for the built-in :class:`~fluidq.policies.Scheduler` with FCFS order.

``run_fast`` is :func:`fluidq.kernel.run_fcfs`: one array-style kernel that numba compiles (and
that runs as the same Python where numba is missing).  How it works is told in
:mod:`fluidq.kernel.fcfs`: the waiting prompts are one stream with a cursor, the decoders a
virtual clock of rounds with a heap of finishing rounds, and a run of identical iterations is
one step.  It gives the same per-request times and per-iteration records as the generic path
(``policy.select(view)`` every iteration) on the built-in schedulers; the test suite checks this
on random workloads.
"""
from __future__ import annotations

from ..kernel import run_fcfs as run_fast

__all__ = ["run_fast"]
