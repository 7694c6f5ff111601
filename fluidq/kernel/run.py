"""Drive :func:`fluidq.kernel.fcfs.step`: build its arrays, answer its requests, return plain results.

:func:`run_fcfs` takes the arrivals and lengths, the scheduler's options and a batch-time table
(a list or array indexed by tokens, or a mapping that computes entries on first use, which the
kernel asks for one at a time), and returns the dict that :func:`fluidq.simulate` reads.

The first call in a process compiles the kernel (or loads it from numba's cache) on a two-request
problem first; if that takes more than :data:`NOTE_AFTER_S` seconds a one-line note says so on
stderr, once.
"""
from __future__ import annotations

import math
import sys
import threading

import numpy as np

from ._jit import compiled, warn_if_uncompiled

__all__ = ["NOTE_AFTER_S", "ensure_compiled", "run_fcfs"]

#: a first compile (or cache load) slower than this prints a note
NOTE_AFTER_S = 1.5
_ready = False


def _note():
    print("fluidq: compiling the simulation kernel with numba (once; later runs load it from the cache) ...",
          file=sys.stderr, flush=True)


def ensure_compiled() -> None:
    """Compile (or load from the cache) the kernel's one signature, with a note if that is slow."""
    global _ready
    if _ready:
        return
    _ready = True
    if not compiled():
        warn_if_uncompiled()
        return
    timer = threading.Timer(NOTE_AFTER_S, _note)
    timer.daemon = True
    timer.start()
    try:
        _run(np.array([0.0, 0.5]), np.array([2, 3], np.int64), np.array([2, 1], np.int64), b_max=4, k_cap=2,
             mixed=True, chunked=True, chunk_long=False, prefill_first=True, tau_b=[math.nan, 1.0, 1.0, 1.0, 1.0],
             ks=1e-3, horizon=math.inf, record=True, progress=None)
    finally:
        timer.cancel()


def run_fcfs(arr, P, D, *, b_max, k_cap, mixed, chunked, chunk_long, prefill_first, tau_b, ks, horizon, record,
             progress=None) -> dict:
    """Simulate one engine under a built-in FCFS scheduler; return a dict of arrays and numbers.

    ``arr`` (sorted arrival times), ``P``, ``D`` (prompt and output tokens); ``b_max`` the token
    budget, ``k_cap`` the most requests per batch; ``mixed``, ``chunked``, ``chunk_long``,
    ``prefill_first`` the scheduler's rule; ``tau_b[b]`` the batch time of ``b`` tokens and ``ks``
    seconds per KV token of the decoders' contexts; ``record`` keeps one row per iteration;
    ``progress(t_s, arrivals)`` is called about every simulated second.
    """
    ensure_compiled()
    return _run(np.ascontiguousarray(arr, dtype=np.float64), np.ascontiguousarray(P, dtype=np.int64),
                np.ascontiguousarray(D, dtype=np.int64), b_max=b_max, k_cap=k_cap, mixed=mixed, chunked=chunked,
                chunk_long=chunk_long, prefill_first=prefill_first, tau_b=tau_b, ks=ks, horizon=horizon,
                record=record, progress=progress)


def _tau_array(tau_b, b_max):
    """(array of batch times for 0..b_max with NaN where not known yet, the lazy source or None)."""
    if isinstance(tau_b, (list, tuple, np.ndarray)):
        tab = np.asarray(tau_b, dtype=np.float64)[:b_max + 1]
        return np.ascontiguousarray(tab), None
    tab = np.full(b_max + 1, np.nan)
    for b, v in dict(tau_b).items():
        if 0 < b <= b_max:
            tab[b] = v
    return tab, tau_b


def _run(arr, P, D, *, b_max, k_cap, mixed, chunked, chunk_long, prefill_first, tau_b, ks, horizon, record,
         progress):
    from . import fcfs  # decorating it imports numba: not at `import fluidq`

    n = arr.size
    i64, f64 = np.int64, np.float64
    tau, lazy = _tau_array(tau_b, b_max)
    cfg = np.array([b_max, min(k_cap, 1 << 62), mixed, chunked, chunk_long, prefill_first, record,
                    progress is not None], dtype=i64)
    cf = np.array([horizon, ks], dtype=f64)
    si = np.zeros(fcfs.N_SI, dtype=i64)
    sf = np.zeros(3, dtype=f64)
    fs, pdn, ftk, fin = (np.full(n, np.nan) for _ in range(4))
    pq, cum, dq = (np.empty(n, dtype=i64) for _ in range(3))
    val = np.full(n, -1, dtype=i64)
    hin = np.zeros(n, dtype=i64)
    m = 64 if record else 0  # record rows, in step's order: rt, rx, rs, rq, rb, rd, rk
    bufs = (np.empty(64, i64), np.empty(64, i64), np.empty(2 * n + 64, f64), np.empty(2 * n + 64, i64),
            np.empty(2 * n + 64, i64), np.empty(m, f64), np.empty(m, i64), np.empty(m, i64), np.empty(m, i64),
            np.empty(m, f64), np.empty(m, i64), np.empty(m, i64))
    state = [arr, P, D, tau, cfg, cf, si, sf, fs, pdn, ftk, fin, pq, cum, dq, val, hin]
    if not compiled():  # plain Python indexes lists ~5x faster than numpy arrays (a grown buffer is an array)
        state = [a.tolist() for a in state]
        bufs = tuple(b.tolist() for b in bufs)
        tau, si, sf = state[3], state[6], state[7]
    while True:
        status, *bufs = fcfs.step(*state, *bufs)
        if status == fcfs.STATUS_DONE:
            break
        if status == fcfs.STATUS_PROGRESS:
            t = float(sf[fcfs.F_T])
            progress(t, int(si[fcfs.I_NA]))
            sf[fcfs.F_NEXT] = t + 1.0 + 0.02 * t
        else:  # STATUS_TAU: the lazy table computes (and checks) one more batch time
            b = int(si[fcfs.I_TAU])
            tau[b] = float(lazy[b])
    _hf, _hr, bt, bn, bw, rt, rx, rs, rq, rb, rd, rk = bufs
    nb, nr = int(si[fcfs.I_NB]), int(si[fcfs.I_NR])
    fs, pdn, ftk, fin = (np.asarray(a, dtype=f64) for a in state[8:12])

    def cut(a, k, dt):
        return np.array(a[:k], dtype=dt)  # a copy: the buffer's spare room is freed

    rec = None
    if record:
        rec = {"t_s": cut(rt, nr, f64), "prefill_tokens": cut(rx, nr, i64), "decode_tokens": cut(rs, nr, i64),
               "requests": cut(rq, nr, i64), "batch_s": cut(rb, nr, f64), "demand": cut(rd, nr, i64),
               "kv_tokens": cut(rk, nr, i64)}
    return {"first_scheduled_s": fs, "prefill_done_s": pdn, "first_token_s": ftk, "finish_s": fin,
            "backlog": (cut(bt, nb, f64), cut(bn, nb, i64), cut(bw, nb, i64)), "iterations": int(si[fcfs.I_NITER]),
            "busy_s": float(sf[fcfs.F_BUSY]), "mixed_iterations": int(si[fcfs.I_MIXED]),
            "tokens_served": int(si[fcfs.I_TOKS]), "records": rec, "end_s": float(sf[fcfs.F_T]),
            "n_blocked": int(si[fcfs.I_NBLOCKED]), "n_arrived": int(si[fcfs.I_NA])}
