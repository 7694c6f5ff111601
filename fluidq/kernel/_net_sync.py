"""The request objects of a station asked in Python on the compiled network loop, brought up to date from the loop's
arrays at each ask: written once for the three drivers (2026-12-07, h-dedup; each had its copy).

The drivers -- :class:`fluidq.kernel.network_select.Asker` (``_sync``: a station without a KV cache, every resident in
view, one dict per rank), :func:`fluidq.kernel.network_window.sync_window` (the built-in window: per rank the prompts
and the decoders apart, as the Python clock's ``_StationState``) and :class:`fluidq.kernel.network_kv.KVStation`
(``_sync``: a station with a KV cache, no per-rank queues) -- keep the objects of the Python clock
(:func:`fluidq.kernel.clock._new_task`) that their policies are shown.  What they share is here: the last batch's
prefill chunks' requests (:func:`prefilled`), its decoders (:func:`decoded`) and the hops submitted since the last
ask (:func:`submitted`); what each keeps apart -- which queues a request leaves or joins -- stays with it.
"""
from __future__ import annotations

import numpy as np

from .network import S_NT, T_CLS, T_D, T_DEC, T_HOP, T_LAB, T_P, T_PREF, T_RANK, T_ST

__all__ = ["decoded", "prefilled", "submitted"]

#: at most this many hops submitted since a station's last ask are read as one slice and filtered in Python (fewer
#: numpy calls); more are found by a vectorised scan of the hops' station column
_SCAN = 16


def prefilled(res, ti, pids, t0) -> list:
    """The objects (``res``, by id) of the last batch's prefill chunks (the ids ``pids``, an array), started at
    ``t0``, up to date from the loop's rows ``ti``: prefilled, decoded (an engine whose prefill gives the first token),
    first scheduled.  Returns those whose prompt is done, in the batch's order, each with whether it is finished too
    (it leaves the station; else it decodes from now on)."""
    done = []
    for rid, row in zip(pids.tolist(), ti[pids].tolist()):
        pf, dc = row[T_PREF], row[T_DEC]
        r = res[rid]
        r.prefilled = pf
        r.decoded = dc
        if r.first_scheduled_s != r.first_scheduled_s:
            r.first_scheduled_s = t0
        if pf >= row[T_P]:
            done.append((r, dc >= row[T_D]))
    return done


def decoded(res, queues, objs, dcs) -> None:
    """The last batch's decoders ``objs`` given their decoded tokens ``dcs``; a finished one leaves ``res`` and, where
    ``queues`` is given (one dict per rank), its rank's queue."""
    for r, dc in zip(objs, dcs):
        r.decoded = dc
        if dc >= r.output_tokens:
            del res[r.rid]
            if queues is not None:
                del queues[r.rank][r.rid]


def submitted(a, s, hi, lim, known, new_task, labels, ranks=None):
    """The new objects (``new_task``; ``cont`` None: where the request goes next is the loop's, not the object's) of
    the hops submitted to station ``s`` with ids in ``[hi, lim)``, in id order, from the loop's arrays ``a``; none
    where the station's ``known`` objects are all its hops (``S_NT``).  A hop's rank is its ``T_RANK``, or, with
    ``ranks`` (a KV station, whose loop rank is 0), ``ranks[its step row]`` (the Python clock's rank)."""
    if lim <= hi or known == a.st[s, S_NT]:
        return ()
    ti = a.ti
    if lim - hi <= _SCAN:  # (a few hops since the last ask, the usual case: one slice read, filtered here)
        rows = ti[hi:lim].tolist()
        sel = [j for j, row in enumerate(rows) if row[T_ST] == s]
        if not sel:
            return ()
        tf = a.tf[hi:lim].tolist()
        idx = [hi + j for j in sel]
        rows = [rows[j] for j in sel]
        tfs = [tf[j] for j in sel]
    else:
        x = np.flatnonzero(ti[hi:lim, T_ST] == s)
        if not x.size:
            return ()
        x += hi
        idx = x.tolist()
        rows, tfs = ti[x].tolist(), a.tf[x].tolist()
    return [new_task(rid, arr, row[T_P], row[T_D], (row[T_CLS], jin), None,
                     row[T_RANK] if ranks is None else ranks[row[T_HOP]], labels[row[T_LAB]])
            for rid, row, (jin, arr) in zip(idx, rows, tfs)]
