"""A station with a KV cache whose policy is asked in Python, on the compiled network loop (2026-12-07, h-netkv).

:mod:`fluidq.kernel.network_select` asks the policies of a network's stations in Python once an event of the
compiled loop (:mod:`fluidq.kernel.network`) is over.  For a station with a KV cache (``kv_capacity_tokens``) the
ask is the Python clock's own: the station keeps, on the asker's side, the fed
:class:`~fluidq.kernel.step.EngineRun` that :func:`fluidq.kernel.clock.run_clock` would give it
(:func:`fluidq.kernel.clock._fed_engine`: the same construction, the same
:class:`~fluidq.kernel.memory.StationMemory`), so the view (every resident in arrival order, ``kv_free_tokens``,
``b_max``/``k_max``), the memory passes around ``select`` (swap-ins, admission under the token or paged rules,
preemption by recomputation or swap with the victim in the policy's order and its ``may_evict``, the policy asked
again without new requests, prefix caching), the checks (``PolicyError`` with the Python clock's message, the
batch's faults with the check off, ``idle_ask``) and the batch's time (``t(b)``, a context-aware or a composition
time, plus the swap seconds) are the Python clock's calls of the ONE set of rules, not a copy.  At each ask
(:meth:`KVStation.ask`):

* the station's previous batch is finished on the EngineRun (``finish``: its requests' objects, KV grown, the
  finished released -- the loop already counted its tokens and moved its finished hops on, the same ones, in the
  same order: ``_mem_end``), then the hops submitted to the station since its last ask (ids below the ask's view)
  are offered, in order, as the Python clock's request objects (``_new_task``; ``rank`` the station's rank of the
  hop, which the loop does not apply at a KV station); the loop refused those that can never fit, by the same
  rule, ``never_fits``;
* ``begin(t)`` forms the batch; what the memory pass changed is written back into the loop's arrays: the
  station's remaining tokens (``S_WORK``; recomputation adds, a prefix hit takes off), the buffers' tokens per
  label, the preempted or reused requests' prompt, prefilled tokens and preemptions, the station's preemptions;
  the batch goes into ``al_t``/``al_k``/``fR`` with its end (``S_ASKEND``, ``R_END``), or the end of a pass that
  only swapped in (no batch: ``S_SWAPWAIT`` when it is over, the station asks again).

The loop ends such a batch as its native KV stations' (``_mem_end``: prefill chunks, the prefill's first token and
a recomputation's catch-up token, decode tokens, the finished in arrival order), without touching its own memory
columns.  Covered since 2026-12-07 (h-netwin) too: a subclass of a built-in FCFS scheduler that overrides ``select``
or ``budgets`` (the Python clock shows it every resident at a KV station, as any policy: no window there), and, with
``check_batches=True`` given explicitly, the KV stations under built-in FCFS schedulers (asked here, their batches
checked by their EngineRun; a composition batch time included).  Not covered, so on the Python clock
(``fluidq.sim.network._kernel_unsupported``): a join-the-shortest-queue router by remaining tokens that can pick such
a station (a memory pass changes the station's remaining tokens when the batch starts, which the loop's deferred ask
would show the routing of the same event too late).
"""
from __future__ import annotations

import numpy as np

from .network import (R_END, S_ASKEND, S_NALLOC, S_NH, S_NT, S_PREEMPT, S_WORK, T_CLS, T_D, T_LAB, T_NPRE, T_P,
                      T_PREF, T_HOP, T_ST)

__all__ = ["KVStation"]


class _Deltas(dict):
    """The EngineRun's ``labels``: the changes of each label's tokens since it was cleared (the loop keeps the
    tokens themselves)."""

    def __missing__(self, key):
        return 0


class KVStation:
    """Station ``s`` (a :class:`~fluidq.network.Station` with a KV cache) whose policy is asked in Python: its fed
    EngineRun, as the Python clock builds it (``kv_table``: its ``(tau_b, ks)``; ``swap_s``: seconds per KV token
    swapped; ``check``: ``check_batches``; ``ranks``: each hop's rank at the station by its step row, the Python
    clock's ``rank`` of a request object)."""

    kv = True

    def __init__(self, s, station, horizon, check, swap_s, kv_table, ranks):
        from .clock import _StationState, _fed_engine

        self.s = s
        self.name = station.name
        self.policy = station.policy
        ss = _StationState(s, station, False)
        self.deltas = _Deltas()
        self.blocked: set = set()  # (name, label) of the blocked hops, as the Python clock collects them
        self.nblocked = 0
        _fed_engine(ss, swap_s, self.deltas, horizon, check, [], self.blocked, kv_table)
        self.er = er = ss.engine_run
        self.hi = 1  # request ids below this are offered (or gone, or not at this station)
        self.ranks = ranks  # {step row: the hop's rank at the station, as the Python clock ranks it}
        mem = er.mem
        touched = self.touched = []  # the requests the memory pass preempted or gave a prefix back
        on_preempt, on_reuse = mem.on_preempt, mem.on_reuse

        def preempted(r, tokens, recomputed):
            on_preempt(r, tokens, recomputed)
            touched.append(r)

        def reused(r, tokens):
            on_reuse(r, tokens)
            touched.append(r)

        mem.on_preempt, mem.on_reuse = preempted, reused

    @property
    def idle_ask(self):
        return self.er.idle_ask

    def ask(self, a, lim, t, new_task, labels, lab_index):
        """The ask of the loop's arrays ``a`` at ``t`` with the hops below ``lim`` in view: return ``(prompts,
        the batch to run (the caller writes it into the arrays), ``None`` for none (idle), or ``()`` for a pass that
        only swapped in."""
        er, s = self.er, self.s
        if er.cur is not None:  # the batch the loop ended: the objects and the memory follow
            er.finish()
        ti = a.ti
        if lim > self.hi:
            if len(er.by_id) != a.st[s, S_NT]:  # (else every hop at the station is offered)
                idx = np.flatnonzero(ti[self.hi:lim, T_ST] == s)
                if idx.size:
                    idx += self.hi
                    for rid, row, (jin, arr) in zip(idx.tolist(), ti[idx].tolist(), a.tf[idx].tolist()):
                        er.offer(new_task(rid, arr, row[T_P], row[T_D], (row[T_CLS], jin), None,
                                          self.ranks[row[T_HOP]], labels[row[T_LAB]]))
            self.hi = lim
        deltas, touched = self.deltas, self.touched
        deltas.clear()
        touched.clear()
        work = er.work
        end = er.begin(t)
        st = a.st
        st[s, S_WORK] += er.work - work  # (hops submitted after the ask's view are the loop's already)
        if deltas:
            buf = a.buf
            for lab, dv in deltas.items():
                buf[lab_index[lab]] += dv
        for r in touched:
            rid = r.rid
            ti[rid, T_P] = r.prompt_tokens
            ti[rid, T_PREF] = r.prefilled
            ti[rid, T_NPRE] = r.preemptions
        st[s, S_PREEMPT] = er.mem.preemptions
        if len(self.blocked) != self.nblocked:
            self.nblocked = len(self.blocked)
            for _, lab in self.blocked:
                a.blk[s, lab_index[lab]] = 1
        if end is None:
            return None
        st[s, S_ASKEND] = 1
        a.stf[s, R_END] = end
        batch = er.cur
        if batch is None:  # only swaps
            st[s, S_NALLOC] = 0
            st[s, S_NH] = 0
            return ()
        return batch
