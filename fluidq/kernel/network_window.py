"""The built-in window of a station's queue, for a station asked in Python on the compiled network loop (issue 15,
2026-12-07, h-netwin).

:mod:`fluidq.kernel.network_select` asks in Python the policies the compiled loop (:mod:`fluidq.kernel.network`)
does not run itself.  Two kinds of station without a KV cache have a policy that is a built-in
:class:`~fluidq.policies.Scheduler` in FCFS order (``fluidq.kernel.clock._windowable``) and are asked there too: a
subclass that overrides ``select`` or ``budgets`` (a rule of its own), and, with ``check_batches=True`` given
explicitly, the built-in schedulers themselves (their batches checked in Python, as the Python clock checks them).
The Python event clock (:func:`fluidq.kernel.clock.run_clock`) shows such a station's policy the built-in window of
its queue, not every resident: its ``_StationState`` is ``windowed``, and the fed ``EngineRun`` reads its view from
the station's per-priority queues (``queues=``; EngineRun's own ``window`` -- a FIFO of waiting requests, ``n_fresh``,
``n_parked`` -- is :func:`fluidq.simulate`'s and refused for a fed run).  The asker keeps those queues and makes that
view, rule for rule:

* the queues (:func:`sync_window`, at each ask, after the loop ended the station's last batch): per priority rank,
  the prompts in arrival order at the station (request id order: a hop submitted joins its rank's prompts) and the
  decoders in the order their prefill ended (a prompt completed by the last batch moves to its rank's decoders, in
  the batch's order, or leaves the station with nothing to decode; a finished decoder leaves) -- the Python clock's
  ``_StationState.add`` and ``end``;
* the view (:func:`window`; ``_StationState.view_requests``, windowed, with the engine's ``b_max`` and ``k_max``):
  the decoders by rank up to ``min(b_max, k_max)``, then the prompts by rank and arrival until they hold ``b_max``
  tokens the policy could take (a prompt above ``b_max`` counts only for a chunking policy: ``chunked`` or
  ``chunk_long_prompts``) or ``min(b_max, k_max) + 8`` of them; O(window) per ask;
* the batch may name only requests of that view (:func:`in_view`): a resident outside it is not in the view, which
  :func:`~fluidq.policies.base.batch_faults` refuses (the Python clock's message), with the check on or off.
  Blocked requests stay in the queues (a fed run parks none), as on the Python clock.

A station with a KV cache is shown every resident on the Python clock whatever its policy (its EngineRun's memory
view), so it is asked through :mod:`fluidq.kernel.network_kv` as any other policy there.
"""
from __future__ import annotations

from ._net_sync import decoded, prefilled, submitted
from .clock import window_view
from .network import T_DEC

__all__ = ["in_view", "sync_window", "window"]


def sync_window(asker, S, lim):
    """Bring windowed station ``S``'s queues and objects up to date from the loop's arrays (``asker.a``): its last
    batch's requests, and the hops submitted to it with ids below ``lim`` (:mod:`fluidq.kernel._net_sync`, as the
    asker's ``_sync`` for a station without the window; the queues are this module's)."""
    a = asker.a
    ti = a.ti
    res, pre, dec = S.res, S.pre, S.dec
    if S.last is not None:
        pids, dids, t0 = S.last
        S.last = None
        if dids is not None:  # (end(): the finished decoders leave first; disjoint from the prompts below)
            objs, idx = dids
            decoded(res, dec, objs, ti[idx, T_DEC].tolist())
        if pids is not None:
            for r, finished in prefilled(res, ti, pids, t0):  # its prompt is done: to the decoders, or it leaves
                del pre[r.rank][r.rid]
                if finished:
                    del res[r.rid]
                else:
                    dec[r.rank][r.rid] = r
    if lim > S.hi:
        for r in submitted(a, S.s, S.hi, lim, len(res), asker.new_task, asker.labels):
            res[r.rid] = r
            pre[r.rank][r.rid] = r
        S.hi = lim


def window(S) -> tuple:
    """The windowed station's view (see the module notes), a tuple of its request objects: the Python clock's rule,
    :func:`fluidq.kernel.clock.window_view`, over the station's queues (one dict per rank, in rank order)."""
    return tuple(window_view((q.values() for q in S.dec), (q.values() for q in S.pre), S.b_max, S.k_max, S.chunks))


def in_view(batch, reqs) -> bool:
    """Whether every request of ``batch`` (whole-number ids: the asker wrote it into the loop's arrays) is in the
    view ``reqs``."""
    ids = {r.rid for r in reqs}
    return all(rid in ids for rid, _ in batch.prefill) and all(rid in ids for rid in batch.decode)
