"""The checks of a policy's batch that the ``select()`` loop on the kernel's arrays runs in Python:
:func:`fluidq.kernel.select.run_select` (the driver) calls them after each ``select(view)``, and when the compiled
check (``_bad`` in :mod:`fluidq.kernel._select_phases`) flags a batch.  They read the arrays by the slots of
:mod:`fluidq.kernel._select_state`.

The user-policy checks are EngineRun's, by step.py's functions (branch h-selmirror, 2026-12-07): a policy's own
exception gets ``_note_raised``'s note (in the driver); with the check, the batch's requests' fields are compared
with the arrays (:func:`_differs`, a quick look on lists; when it sees a difference ``step._tampered`` over
:class:`_Owned` names the field: a policy must not write them) and ``blocked`` ids with the view's
(:func:`_junk_blocked`); with it off, ``batch_faults`` (unless ``_trusted``) refuses what no engine can run, and a
batch the compiled check flags for its budgets alone (``b_max``, ``k_max``) is run as given (``si[S_SKIPCHK]``), as
EngineRun runs it -- one of more tokens than the batch-time table holds is refused with the budget's message
(EngineRun fails indexing its table).  A flagged batch is refused by :func:`_raise`, which asks
:func:`~fluidq.policies.base.batch_violations` (the one written copy of the constraints) for EngineRun's
:class:`~fluidq.kernel.step.PolicyError`.  With a KV cache, a run that ends on an empty batch with nothing more to
arrive (``si[S_STALL]``) raises ``_idle_with_work``'s error over every resident and the swapped out
(:func:`_stalled`, ``step._All``), unless the policy is ``_trusted``.  :func:`_residents`: whether a batch names
residents only (else the driver computes no composition's time, and the compiled check flags the batch).

Moved out of select.py unchanged (branch h-selsplit, 2026-12-07); every name here is still importable from
:mod:`fluidq.kernel.select`.
"""
# ruff: noqa: PLR0913
from __future__ import annotations

import numpy as np

from ..policies.base import batch_violations
from ._select_state import R_D, R_DC, R_PC, R_PF, R_ST, S_SWH, S_SWT
from .step import _All, _bad_batch, _idle_error, _idle_with_work


class _Owned:
    """A request's fields as the arrays hold them (``EngineRun.owned``'s ``get``), for the residents ``objs``."""

    __slots__ = ("objs", "ri")

    def __init__(self, ri, objs):
        self.ri, self.objs = ri, objs

    def get(self, rid):
        try:
            if rid not in self.objs:
                return None
        except TypeError:  # (unhashable: batch_faults says what)
            return None
        return tuple(self.ri[rid, [R_PC, R_D, R_PF, R_DC]].tolist())


_FIELDS4 = [R_PC, R_D, R_PF, R_DC]


def _differs(ri, batch, objs) -> bool:
    """Whether a resident request of ``batch`` has (prompt, output, prefilled, decoded) other than the arrays' (or
    the batch is not plain pairs of ids: then ``step._tampered`` and the checks after it decide)."""
    try:
        rids = [item[0] for item in batch.prefill]
        rids += batch.decode
        keep = [(rid, r) for rid, r in zip(rids, map(objs.get, rids)) if r is not None]
        if not keep:
            return False
        ids = np.array([rid for rid, _ in keep], dtype=np.int64)
        # (compared as Python lists, with step._tampered's equality: building a numpy array of the objects'
        # fields cost more than the rest of the check)
        return [[r.prompt_tokens, r.output_tokens, r.prefilled, r.decoded] for _, r in keep] != \
            ri[ids][:, _FIELDS4].tolist()
    except (TypeError, IndexError, KeyError, ValueError, OverflowError):
        return True


def _junk_blocked(batch, reqs) -> bool:
    """Whether ``blocked`` names an id that is not a request of the view (batch_violations says which)."""
    ids = {r.rid for r in reqs}
    try:
        return any(rid not in ids for rid in batch.blocked)
    except TypeError:
        return True


def _stalled(policy, si, ri, sw, ol, objs, blocked, t):
    """EngineRun's idle error with a KV cache: every resident and the swapped out (``step._All``), their fields
    brought up to date from the arrays first."""
    res = [ol[rid] for rid in objs if ri[rid, R_ST] == 1]
    ring = [int(sw[k % sw.shape[0], 0]) for k in range(int(si[S_SWH]), int(si[S_SWT]))]
    swapped = [(ol[rid], None) for rid in ring]
    for r in res + [q for q, _ in swapped]:
        r.prompt_tokens, r.output_tokens, r.prefilled, r.decoded = ri[r.rid, [R_PC, R_D, R_PF, R_DC]].tolist()
    _idle_with_work(policy, _All(res, swapped), blocked, t)


def _idle_arrays(policy, ri, objs, blocked, t):
    """EngineRun's idle error without a KV cache (an empty batch, nothing more to arrive), judged from the ARRAYS:
    the residents ``objs`` whose (prompt, output, prefilled, decoded) there leave work -- a policy that wrote its
    requests' fields with the check off cannot end the run silently with work left (h-fixk, review finding 2).
    The objects are not written."""
    if not objs:
        return
    ids = np.fromiter(objs, np.int64, len(objs))
    pc, d, pf, dc = ri[ids][:, _FIELDS4].T
    demand = np.where(pf < pc, pc - pf, (dc < d).astype(np.int64))
    waiting = [rid for rid in ids[demand > 0].tolist() if rid not in blocked]
    if waiting:
        raise _idle_error(policy, t, waiting)


def _residents(objs, batch) -> bool:
    return all(rid in objs for rid, _ in batch.prefill) and all(rid in objs for rid in batch.decode)


def _raise(name, t, batch, view):
    """EngineRun's :class:`PolicyError` for a batch the kernel's check flagged (``batch_violations`` decides)."""
    bad = batch_violations(batch, view)
    if not bad:  # pragma: no cover - the kernel's check flags only what batch_violations flags
        raise RuntimeError(f"fluidq select kernel: a batch at t={t:.6g} flagged but within the constraints")
    raise _bad_batch(name, t, bad)
