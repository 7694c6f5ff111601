"""The compiled simulation kernel (numba; plain Python where numba is missing).

A layer between the descriptions (batch times, workloads, engines, policies) and the analyses:
the kernel knows only arrays and numbers, and :mod:`fluidq.sim` calls it.

* :mod:`fluidq.kernel.fcfs` -- the FCFS event-skipping kernel of the built-in schedulers;
* :mod:`fluidq.kernel.kv` -- the same schedulers with a KV-cache memory model, stepped per iteration;
* :mod:`fluidq.kernel.network` -- every station of a network on one event clock (with or without a KV cache);
* :mod:`fluidq.kernel.kvrules` -- the memory rules the compiled loops inline (admission, reservation, the block
  pool);
* :mod:`fluidq.kernel.run` -- their drivers, :func:`run_fcfs` and :func:`run_fcfs_kv`;
* :mod:`fluidq.kernel._jit` -- numba's ``njit(cache=True)`` or the Python stand-in (numba is imported
  on the first simulation, not with fluidq).
"""
from __future__ import annotations

from ._jit import KernelNotCompiledWarning, compiled
from .run import ensure_compiled, run_fcfs, run_fcfs_kv

__all__ = ["KernelNotCompiledWarning", "compiled", "ensure_compiled", "run_fcfs", "run_fcfs_kv"]
