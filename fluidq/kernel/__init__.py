"""The simulation kernel: the compiled loops (numba; plain Python where numba is missing) and the ``select()`` loop.

A layer between the descriptions (batch times, workloads, engines, policies) and the analyses:
the compiled loops know only arrays and numbers, the ``select()`` loop the policies' request views, and
:mod:`fluidq.sim` calls them.

* :mod:`fluidq.kernel.fcfs` -- the FCFS event-skipping kernel of the built-in schedulers;
* :mod:`fluidq.kernel.kv` -- the same schedulers with a KV-cache memory model, stepped per iteration (its driver;
  the compiled loop is ``_kv_loop``, its inlined parts ``_kv_parts``, its state layout ``_kv_layout``);
* :mod:`fluidq.kernel.network` -- every station of a network on one event clock (with or without a KV cache);
* :mod:`fluidq.kernel.clock` -- the Python event clock (:class:`~fluidq.kernel.clock.EventClock`), the one that
  drives :func:`run_generic`'s engine and every station of a network in Python (every station a fed
  :class:`EngineRun`, with run skipping for the decode-first chunked schedulers), with the routing, forks,
  joins and recording (moved from ``fluidq.sim.network``, which drives it);
* :mod:`fluidq.kernel.routing` -- the routing rules of a network written once (a choice's option, a JSQ router's
  pick, a fork's and a join's arrivals, a refused hop), called by the Python event clock and inlined by the
  compiled network loop;
* :mod:`fluidq.kernel.kvrules` -- the memory rules the compiled loops inline (admission, reservation, the block
  pool);
* :mod:`fluidq.kernel.compose` -- the operator-profile iteration model (composition batch time) evaluated inside
  the compiled loops, the same seconds as :meth:`fluidq.batchtime.operators.IterationModel.time`;
* :mod:`fluidq.kernel.step` -- the ``select()`` loop for any policy (a user's object, orderings whose keys
  change with time): an engine's state (:class:`EngineRun`) and one iteration (:func:`step`), with the Python
  memory rules; :func:`run_generic` runs it on the event clock (moved from ``fluidq.sim._generic``);
* :mod:`fluidq.kernel.select` -- the ``select()`` loop on the kernel's arrays (:func:`run_select`): a policy that is not
  compiled asked in Python at each iteration, the rest advanced by compiled phases; bit-identical to
  :func:`run_generic`, which it replaces in ``simulate(method="auto")`` (compiled) and ``"fast"`` for the cases its
  notes list (with or without a KV cache, under any memory rules, async scheduling, ``initial`` residents,
  ``record_batches``); its slot constants, statuses and phases are in :mod:`fluidq.kernel._select_state`, the
  compiled phases (``_advance``) in :mod:`fluidq.kernel._select_phases`, the checks of a policy's batch run in Python
  in :mod:`fluidq.kernel._select_checks` (split out of select.py, branch h-selsplit, 2026-12-07);
* :mod:`fluidq.kernel.memory` -- those memory rules, written once in Python: :class:`StationMemory` (admission,
  preemption, swap, the paged rules) over :class:`BlockPool` (moved from ``fluidq.sim._admission`` and
  ``fluidq.sim._memory``); the stations of ``fluidq.simulate_network`` drive it too;
* :mod:`fluidq.kernel.run` -- the compiled loops' drivers, :func:`run_fcfs` and :func:`run_fcfs_kv`;
* :mod:`fluidq.kernel._jit` -- numba's ``njit(cache=True)`` or the Python stand-in (numba is imported
  on the first simulation, not with fluidq);
* :mod:`fluidq.kernel._pages` -- ordinary (4 KiB) pages, not transparent huge pages, for a run's per-request arrays.
"""
from __future__ import annotations

from ._jit import KernelLimitWarning, KernelNotCompiledWarning, compiled
from .memory import BlockPool, StationMemory
from .run import ensure_compiled, run_fcfs, run_fcfs_kv
from .step import EngineRun, PolicyError, run_generic

# (the function ``step`` stays ``fluidq.kernel.step.step``: exported here it would hide the module's name)
__all__ = ["BlockPool", "EngineRun", "KernelLimitWarning", "KernelNotCompiledWarning", "PolicyError", "StationMemory",
           "compiled", "ensure_compiled", "run_fcfs", "run_fcfs_kv", "run_generic"]
