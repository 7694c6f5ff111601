"""Drive :func:`fluidq.kernel.fcfs.step`: build its arrays, answer its requests, return plain results.

:func:`run_fcfs` takes the arrivals and lengths, the scheduler's options and a batch-time table
(a list or array indexed by tokens, or a mapping that computes entries on first use, which the
kernel asks for one at a time), and returns the dict that :func:`fluidq.simulate` reads.

The first call in a process compiles the kernel (or loads it from numba's cache) on a two-request
problem first; if that takes more than :data:`NOTE_AFTER_S` seconds a one-line note says so on
stderr, once per kernel (once per sweep for a sweep's worker processes, :data:`NOTE_SHARED_ENV`): each kernel (the FCFS one, the KV-cache one per signature: composed or not, vLLM's rules or every memory; the network one) is
compiled apart, and each note names its kernel (one text for all printed it two or three times in one
``fluidq report``, reading as the same compile repeated).
"""
from __future__ import annotations

import contextlib
import math
import sys
import threading

import numpy as np

from ._jit import compiled, warn_if_uncompiled
from ._pages import small_pages

__all__ = ["NOTE_AFTER_S", "ensure_compiled", "ensure_compiled_kv", "run_fcfs", "run_fcfs_kv", "run_fcfs_segments"]

#: a first compile (or cache load) slower than this prints a note (issue 15: "more than a second")
NOTE_AFTER_S = 1.0
_ready = False
#: the kernels whose note was printed in this process (each is said once)
_noted: set = set()


#: the environment variable naming a folder the processes of one run share (a sweep's pool workers set it, see
#: :func:`fluidq.sweep.core.sweep`): a kernel's note is printed by the first of them to create its marker file
#: there, so a sweep says it once, not once per worker process
NOTE_SHARED_ENV = "FLUIDQ_COMPILE_NOTE_DIR"


def _first_to_say(kernel: str) -> bool:
    """Whether this process says ``kernel``'s note: always, unless :data:`NOTE_SHARED_ENV` names a folder in which
    another process of the same run created the note's marker first."""
    import os

    folder = os.environ.get(NOTE_SHARED_ENV)
    if not folder:
        return True
    marker = os.path.join(folder, "".join(c if c.isalnum() else "_" for c in kernel))
    try:
        os.close(os.open(marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY))
    except FileExistsError:
        return False
    except OSError:  # no folder to agree in (removed, unwritable): said here rather than not at all
        return True
    return True


def _note(kernel: str):
    if kernel in _noted:
        return
    _noted.add(kernel)
    if not _first_to_say(kernel):
        return
    # the timer cannot tell a compile from a slow load of numba's cache (a busy machine, a cold disk): say both
    print(f"fluidq: compiling {kernel} with numba, or loading it from numba's cache (compiled once per "
          "install; a load can be slow on a busy machine) ...", file=sys.stderr, flush=True)


@contextlib.contextmanager
def compile_note(kernel: str = "the simulation kernel"):
    """Around a first call that compiles ``kernel`` (or loads it from numba's cache): if the block takes more
    than :data:`NOTE_AFTER_S` seconds, a one-line note naming it says so on stderr (once per kernel).  The note
    says "compiling ... or loading it from numba's cache": a timer cannot tell which is slow."""
    timer = threading.Timer(NOTE_AFTER_S, _note, args=(kernel,))
    timer.daemon = True
    timer.start()
    try:
        yield
    finally:
        timer.cancel()


def ensure_compiled() -> None:
    """Compile (or load from the cache) the kernel's one signature, with a note if that is slow."""
    global _ready
    if _ready:
        return
    _ready = True
    if not compiled():
        warn_if_uncompiled()
        return
    with compile_note("the simulation kernel"):
        _run(np.array([0.0, 0.5]), np.array([2, 3], np.int64), np.array([2, 1], np.int64), b_max=4, k_cap=2,
             mixed=True, chunked=True, chunk_long=False, prefill_first=True, tau_b=[math.nan, 1.0, 1.0, 1.0, 1.0],
             ks=1e-3, horizon=math.inf, record=True, progress=None)


def run_fcfs(arr, P, D, *, b_max, k_cap, mixed, chunked, chunk_long, prefill_first, tau_b, ks, horizon, record,
             progress=None) -> dict:
    """Simulate one engine under a built-in FCFS scheduler; return a dict of arrays and numbers.

    ``arr`` (sorted arrival times), ``P``, ``D`` (prompt and output tokens); ``b_max`` the token
    budget, ``k_cap`` the most requests per batch; ``mixed``, ``chunked``, ``chunk_long``,
    ``prefill_first`` the scheduler's rule; ``tau_b[b]`` the batch time of ``b`` tokens and ``ks``
    seconds per KV token of the decoders' contexts; ``record`` keeps one row per iteration;
    ``progress(t_s, arrivals)`` is called about every simulated second.  ``covered`` in the dict counts the
    decoders that joined the served set covered (no heap entry of their own, see :mod:`fluidq.kernel.fcfs`).
    """
    ensure_compiled()
    with small_pages():  # fluidq/kernel/_pages.py: no huge-page compaction when the arrays are first touched
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


def _setup(*, b_max, k_cap, mixed, chunked, chunk_long, prefill_first, tau_b, ks, horizon, record, progress,
           open_segments):
    """The kernel's batch-time table (and its lazy source or None), options and scalar state: ``tau, lazy, cfg,
    cf, si, sf`` (:func:`run_fcfs`'s and :func:`run_fcfs_segments`')."""
    from . import fcfs

    tau, lazy = _tau_array(tau_b, b_max)
    cfg = np.array([b_max, min(k_cap, 1 << 62), mixed, chunked, chunk_long, prefill_first, record,
                    progress is not None, open_segments], dtype=np.int64)
    cf = np.array([horizon, ks], dtype=np.float64)
    return tau, lazy, cfg, cf, np.zeros(fcfs.N_SI, dtype=np.int64), np.zeros(3, dtype=np.float64)


def _drive(state, bufs, lazy, progress, before: int = 0):
    """Call :func:`fcfs.step` on ``state`` (its arrays, or lists in plain Python) until it is done or needs more
    arrivals, answering its other requests: a progress report (``before`` arrivals handed back earlier are
    counted) or one more batch time from ``lazy``.  Returns ``(status, bufs)``."""
    from . import fcfs

    tau, si, sf = state[3], state[6], state[7]
    while True:
        status, *bufs = fcfs.step(*state, *bufs)
        if status == fcfs.STATUS_PROGRESS:
            t = float(sf[fcfs.F_T])
            progress(t, before + int(si[fcfs.I_NA]))
            sf[fcfs.F_NEXT] = t + 1.0 + 0.02 * t
        elif status == fcfs.STATUS_TAU:  # the lazy table computes (and checks) one more batch time
            b = int(si[fcfs.I_TAU])
            tau[b] = float(lazy[b])
        else:
            return status, bufs


def _run(arr, P, D, *, b_max, k_cap, mixed, chunked, chunk_long, prefill_first, tau_b, ks, horizon, record,
         progress):
    from . import fcfs  # decorating it imports numba: not at `import fluidq`

    n = arr.size
    i64, f64 = np.int64, np.float64
    tau, lazy, cfg, cf, si, sf = _setup(b_max=b_max, k_cap=k_cap, mixed=mixed, chunked=chunked,
                                        chunk_long=chunk_long, prefill_first=prefill_first, tau_b=tau_b, ks=ks,
                                        horizon=horizon, record=record, progress=progress, open_segments=0)
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
        si, sf = state[6], state[7]
    _status, bufs = _drive(state, bufs, lazy, progress)
    _hf, _hr, bt, bn, bw, rt, rx, rs, rq, rb, rd, rk = bufs
    del bufs  # (so that _cut_own below sees the backlog buffers referenced by their names alone)
    nb, nr = int(si[fcfs.I_NB]), int(si[fcfs.I_NR])
    fs, pdn, ftk, fin = (np.asarray(a, dtype=f64) for a in state[8:12])

    def cut(a, k, dt):
        return np.array(a[:k], dtype=dt)  # a copy: the buffer's spare room is freed

    if isinstance(bt, np.ndarray):  # shrunk in place, not copied: no new pages to touch (~1.5 rows per request)
        backlog = (_cut_own(bt, nb), _cut_own(bn, nb), _cut_own(bw, nb))
    else:
        backlog = (cut(bt, nb, f64), cut(bn, nb, i64), cut(bw, nb, i64))
    rec = None
    if record:
        rec = {"t_s": cut(rt, nr, f64), "prefill_tokens": cut(rx, nr, i64), "decode_tokens": cut(rs, nr, i64),
               "requests": cut(rq, nr, i64), "batch_s": cut(rb, nr, f64), "demand": cut(rd, nr, i64),
               "kv_tokens": cut(rk, nr, i64)}
    return {"first_scheduled_s": fs, "prefill_done_s": pdn, "first_token_s": ftk, "finish_s": fin,
            "backlog": backlog, "iterations": int(si[fcfs.I_NITER]),
            "busy_s": float(sf[fcfs.F_BUSY]), "mixed_iterations": int(si[fcfs.I_MIXED]),
            "tokens_served": int(si[fcfs.I_TOKS]), "records": rec, "end_s": float(sf[fcfs.F_T]),
            "n_blocked": int(si[fcfs.I_NBLOCKED]), "n_arrived": int(si[fcfs.I_NA]),
            "covered": int(si[fcfs.I_COVERED])}


REQUEST_COLUMNS = ("arrival_s", "prompt_tokens", "output_tokens", "first_scheduled_s", "prefill_done_s",
                   "first_token_s", "finish_s")


def run_fcfs_segments(chunks, *, b_max, k_cap, mixed, chunked, chunk_long, prefill_first, tau_b, ks, horizon, retire,
                      rows, progress=None) -> dict:
    """:func:`run_fcfs` fed its arrivals chunk by chunk, handing back finished requests: memory bounded by the
    requests in the system plus a chunk, not by the run's length.

    ``chunks`` yields ``(arrival_s, prompt_tokens, output_tokens)`` arrays, the times sorted and each chunk's
    after the previous one's.  The kernel runs with open segments (:data:`fluidq.kernel.fcfs.C_OPEN`): when it
    could need an arrival beyond those it holds it stops, and between two calls this driver hands the backlog
    rows so far to ``rows(t_s, requests, tokens)`` (in time order, each row once), hands every request that
    will not change any more (finished, or never schedulable) to ``retire(columns)`` (a dict of arrays named
    as :data:`REQUEST_COLUMNS`), renumbers the rest (request ids, prefill queue positions, decoder slots and
    the heap's slots, all in their order) and appends the next chunk.  The kernel's rules are untouched, so
    every request's times and every backlog row are those of :func:`run_fcfs` on the concatenated arrivals
    (tests/sim/test_summary_stream.py checks it).  At the end the requests still in the system are handed
    back unfinished.  Each hand-back appends at least as many new arrivals as it keeps requests, so the copies
    cost O(1) per request and the most requests held at once (``held_max`` in the returned dict) is at most
    about twice the requests in the system plus a chunk.  When the run is unstable the requests in the system
    grow without bound, and so does the memory (about 400 bytes per request in the system, measured at 1.2
    lambda*: the kept requests, as many new arrivals and the copies made while renumbering).  Returns the scalars of
    :func:`run_fcfs`'s dict (no arrays) and ``held_max``.
    """
    from . import fcfs

    ensure_compiled()
    i64, f64 = np.int64, np.float64
    tau, lazy, cfg, cf, si, sf = _setup(b_max=b_max, k_cap=k_cap, mixed=mixed, chunked=chunked,
                                        chunk_long=chunk_long, prefill_first=prefill_first, tau_b=tau_b, ks=ks,
                                        horizon=horizon, record=0, progress=progress, open_segments=1)
    it = iter(chunks)
    empty_f, empty_i = np.empty(0, f64), np.empty(0, i64)
    cols = {"arrival_s": empty_f, "prompt_tokens": empty_i, "output_tokens": empty_i}
    cols.update({k: empty_f for k in REQUEST_COLUMNS[3:]})
    pq = cum = dq = val = hin = empty_i
    bufs = [np.empty(64, i64), np.empty(64, i64), np.empty(64, f64), np.empty(64, i64), np.empty(64, i64),
            empty_f, empty_i, empty_i, empty_i, empty_f, empty_i, empty_i]
    gone = 0  # requests handed back (every one was admitted)
    held_max = 0  # the most requests held at once (in the system or not yet admitted)

    def hand_back_rows():
        nb = int(si[fcfs.I_NB])
        if nb:
            rows(bufs[2][:nb].copy(), bufs[3][:nb].copy(), bufs[4][:nb].copy())
        si[fcfs.I_NB] = 0

    def add_chunk():
        """Renumber the live requests, hand back the rest, append the next chunk (or close the run)."""
        nonlocal cols, pq, cum, dq, val, hin, gone, held_max
        n = cols["arrival_s"].size
        na, npq, ph, pscan = (int(si[k]) for k in (fcfs.I_NA, fcfs.I_NPQ, fcfs.I_PH, fcfs.I_PSCAN))
        ut, bq, fresh, nh = (int(si[k]) for k in (fcfs.I_UT, fcfs.I_BQ, fcfs.I_FRESH, fcfs.I_NH))
        q0 = min(ph, pscan)
        live = val[:ut] >= 0
        held = np.zeros(na, dtype=bool)  # admitted requests still in the system
        held[pq[q0:npq]] = True
        held[dq[:ut][live]] = True
        adm = np.flatnonzero(held).astype(i64)
        out = ~held
        if out.any():
            retire({k: v[:na][out] for k, v in cols.items()})
            gone += int(out.sum())
        keep = np.concatenate([adm, np.arange(na, n, dtype=i64)])
        new_id = np.full(n, -1, dtype=i64)
        new_id[keep] = np.arange(keep.size, dtype=i64)
        rank = np.cumsum(live) - 1
        parts = []  # at least as many new arrivals as requests kept: the copies cost O(1) per request
        while sum(x[0].size for x in parts) < max(keep.size, 1):
            nxt = next(it, None)
            if nxt is None:
                cfg[fcfs.C_OPEN] = 0
                break
            parts.append([np.ascontiguousarray(x, dtype=t) for x, t in zip(nxt, (f64, i64, i64))])
        a, p, d = ([x[i] for x in parts] for i in range(3))
        a, p, d = (np.concatenate(x) if x else np.empty(0, t) for x, t in zip((a, p, d), (f64, i64, i64)))
        m = a.size
        cols = {"arrival_s": np.concatenate([cols["arrival_s"][keep], a]),
                "prompt_tokens": np.concatenate([cols["prompt_tokens"][keep], p]),
                "output_tokens": np.concatenate([cols["output_tokens"][keep], d]),
                **{k: np.concatenate([cols[k][keep], np.full(m, np.nan)]) for k in REQUEST_COLUMNS[3:]}}
        size = keep.size + m
        pq2, cum2, dq2 = np.empty(size, i64), np.empty(size, i64), np.empty(size, i64)
        val2, hin2 = np.full(size, -1, dtype=i64), np.zeros(size, dtype=i64)
        k = npq - q0
        pq2[:k] = new_id[pq[q0:npq]]
        cum2[:k] = cum[q0:npq]
        u = int(live.sum())
        dq2[:u] = new_id[dq[:ut][live]]
        val2[:u] = val[:ut][live]
        hin2[:u] = hin[:ut][live]
        if nh:
            bufs[1][:nh] = rank[bufs[1][:nh]]
        pq, cum, dq, val, hin = pq2, cum2, dq2, val2, hin2
        held_max = max(held_max, size)
        si[fcfs.I_NA] = adm.size
        si[fcfs.I_NPQ], si[fcfs.I_PH], si[fcfs.I_PSCAN] = k, ph - q0, pscan - q0
        si[fcfs.I_UT], si[fcfs.I_BQ], si[fcfs.I_FRESH] = u, int(live[:bq].sum()), int(live[:fresh].sum())

    uncompiled = not compiled()
    while True:
        state = [cols["arrival_s"], cols["prompt_tokens"], cols["output_tokens"], tau, cfg, cf, si, sf,
                 cols["first_scheduled_s"], cols["prefill_done_s"], cols["first_token_s"], cols["finish_s"],
                 pq, cum, dq, val, hin]
        if uncompiled:  # plain Python indexes lists ~5x faster than numpy arrays: lists for a segment, arrays back
            ls = [x.tolist() for x in state]
            status, out = _drive(ls, [b.tolist() for b in bufs], lazy, progress, gone)
            for x, y in zip(state, ls):
                x[:] = y
            bufs = [np.asarray(y, dtype=b.dtype) for y, b in zip(out, bufs)]
        else:
            status, bufs = _drive(state, bufs, lazy, progress, gone)
        if status == fcfs.STATUS_DONE:
            break
        hand_back_rows()  # STATUS_MORE
        add_chunk()
    hand_back_rows()
    n_arrived = gone + int(si[fcfs.I_NA])
    if cols["arrival_s"].size:
        retire(cols)
    return {"iterations": int(si[fcfs.I_NITER]), "busy_s": float(sf[fcfs.F_BUSY]),
            "mixed_iterations": int(si[fcfs.I_MIXED]), "tokens_served": int(si[fcfs.I_TOKS]),
            "end_s": float(sf[fcfs.F_T]), "n_blocked": int(si[fcfs.I_NBLOCKED]), "n_arrived": n_arrived,
            "held_max": held_max, "covered": int(si[fcfs.I_COVERED])}


def _vllm_rules(paged, most_recent, swap_s_per_token, prefix_caching) -> bool:
    """Whether a KV run follows vLLM's own rules (paged blocks, the most recent request the victim, recompute, no
    prefix caching): the kernel version compiled with the other branches folded away.  One test for the version
    compiled (``ensure_compiled_kv``) and the one called (``_run_kv``'s ``feat``), so they cannot drift apart."""
    return bool(paged and most_recent and swap_s_per_token is None and not prefix_caching)


def run_fcfs_kv(arr, P, D, *, b_max, k_cap, mixed, chunked, chunk_long, prefill_first, tau_b, ks, horizon, record,
                kv_cap, block_size=1, paged=False, whole_prompt=True, most_recent=False, emit_at_prefill=False,
                swap_s_per_token=None, prefix_caching=False, progress=None, compose_table=None,
                async_scheduling=False, engine_k_max=None) -> dict:
    """Simulate one engine with a KV cache under a built-in FCFS scheduler (:mod:`fluidq.kernel.kv`).

    The arguments of :func:`run_fcfs` (``tau_b`` a full table: a list or array indexed by tokens), and
    the memory: ``kv_cap`` tokens; ``paged=False`` the default token rules, else blocks of
    ``block_size`` tokens with ``whole_prompt`` (else incremental) reservation and ``most_recent`` (else
    last in arrival order) victims; recompute preemption, or with ``swap_s_per_token`` (seconds per KV token
    moved) swap preemption; ``prefix_caching`` (paged, recompute); ``emit_at_prefill``: the iteration
    completing a prefill gives the first token.  ``compose_table`` (a composition batch time's
    ``kernel_table(max_batch_tokens=...)``) charges each batch from its composition (:func:`fluidq.kernel.compose.chunks_s`, one
    prefill chunk at a time, as lockstep ranks need) instead of
    ``tau_b``; ``async_scheduling`` forms each batch while the one before runs (vLLM's async scheduling, as
    :class:`fluidq.kernel.step.EngineRun` models it: the batch sees the arrivals up to the start of the batch before,
    and requests finished in that batch hold their slots of the engine's ``engine_k_max`` and their KV through it).
    Returns the dict of :func:`fluidq.kernel.step.run_generic`.
    """
    from . import kv as K

    if not isinstance(tau_b, (list, tuple, np.ndarray)):
        raise TypeError("run_fcfs_kv needs a full batch-time table (a list or array indexed by tokens)")
    if compiled():
        ensure_compiled_kv(composed=compose_table is not None or bool(async_scheduling),
                           vllm=_vllm_rules(paged, most_recent, swap_s_per_token, prefix_caching))
    else:
        warn_if_uncompiled()
    arr = np.ascontiguousarray(arr, dtype=np.float64)
    P = np.ascontiguousarray(P, dtype=np.int64)
    D = np.ascontiguousarray(D, dtype=np.int64)
    return _run_kv(K, arr, P, D, b_max=b_max, k_cap=k_cap, mixed=mixed, chunked=chunked, chunk_long=chunk_long,
                   prefill_first=prefill_first, tau_b=tau_b, ks=ks, horizon=horizon, record=record, kv_cap=kv_cap,
                   block_size=block_size, paged=paged, whole_prompt=whole_prompt, most_recent=most_recent,
                   emit_at_prefill=emit_at_prefill, swap_s_per_token=swap_s_per_token,
                   prefix_caching=prefix_caching, progress=progress, compose_table=compose_table,
                   async_scheduling=async_scheduling, engine_k_max=engine_k_max)


_ready_kv = set()


def ensure_compiled_kv(composed: bool = False, vllm: bool = False) -> None:
    """Compile (or load from the cache) the KV kernel's signature for plain runs or, with ``composed``, the one
    for a composition batch time or async scheduling (kv.py's ``mode``: each compiled apart, so that a plain
    run carries none of their branches); with ``vllm`` the one for vLLM's rules alone (paged, most recent victim,
    recompute, no prefix caching: kv.py's ``feat``), else the one for every memory; with a note if that is slow."""
    if (composed, vllm) in _ready_kv:
        return
    _ready_kv.add((composed, vllm))
    from . import kv as K

    with compile_note("the KV-cache simulation kernel" + (" (composed batch times / async scheduling)"
                                                           if composed else "") + (" (vLLM's rules)" if vllm else "")):
        _run_kv(K, np.array([0.0, 0.5]), np.array([2, 3], np.int64), np.array([2, 1], np.int64), b_max=4, k_cap=2,
                mixed=True, chunked=True, chunk_long=False, prefill_first=True, tau_b=[math.nan, 1.0, 1.0, 1.0, 1.0],
                ks=1e-3, horizon=math.inf, record=True, kv_cap=8, block_size=2, paged=True, whole_prompt=True,
                most_recent=True, emit_at_prefill=False, swap_s_per_token=None, prefix_caching=not vllm, progress=None,
                async_scheduling=composed)


def _cut_own(a, k):
    """``a[:k]`` as an array of its own, its spare room freed: ``a`` shrunk in place (a ``realloc``, no copy) when it
    owns its memory and only the caller's name refers to it, else copied.  (Copying the backlog's three columns
    cost ~3 ms of a ~30 ms KV run at n = 200k, 2026-12-06.)"""
    if a.flags.owndata and a.flags.c_contiguous and a.ndim == 1 and sys.getrefcount(a) <= 3:
        # (the references: the caller's name, this argument, getrefcount's own)
        a.resize(k, refcheck=False)
        return a
    return a[:k].copy()


def _run_kv(K, arr, P, D, *, b_max, k_cap, mixed, chunked, chunk_long, prefill_first, tau_b, ks, horizon, record,
            kv_cap, block_size, paged, whole_prompt, most_recent, emit_at_prefill, swap_s_per_token, prefix_caching,
            progress, compose_table=None, async_scheduling=False, engine_k_max=None):
    n = arr.size
    i64, f64 = np.int64, np.float64
    tau = np.ascontiguousarray(np.asarray(tau_b, dtype=f64)[:b_max + 1])
    k_cap = min(k_cap, 1 << 62)
    w_size = min(b_max, k_cap) + 1
    never = (1 << 62) if (chunked or chunk_long) else b_max
    bs = int(block_size) if paged else 1
    cfg = np.zeros(K.N_CFG, dtype=i64)
    caching = bool(prefix_caching and paged)
    # (prefix caching) the most blocks one request can hold, plus room: bounds the freed-block queue's growth
    maxblk = int(((P + D + bs - 1) // bs).max()) + 2 if caching and n else 0
    cfg[:] = [b_max, k_cap, mixed, chunked, chunk_long, prefill_first, record, progress is not None, paged, bs,
              whole_prompt, most_recent, emit_at_prefill, min(int(kv_cap), 1 << 62), w_size, never,
              swap_s_per_token is not None, caching, maxblk, compose_table is not None, bool(async_scheduling),
              -1 if engine_k_max is None else min(int(engine_k_max), 1 << 62),
              bs.bit_length() - 1 if bs & (bs - 1) == 0 else -1]
    ct = np.zeros(16) if compose_table is None else np.ascontiguousarray(compose_table, dtype=f64)
    cf = np.array([horizon, ks, 0.0 if swap_s_per_token is None else swap_s_per_token], dtype=f64)
    si = np.zeros(K.N_SI, dtype=i64)
    si[K.I_FREE] = int(kv_cap) // bs
    sf = np.zeros(K.N_SF, dtype=f64)
    sf[K.F_TSEEN] = np.nan  # (async scheduling) no batch before: the scheduler sees the arrivals up to now
    # the arrays of a feature the run does not use (swap, prefix caching, async scheduling, the most recent victim's
    # stack, the record's high-water marks) get one slot: kv.py reads them only under their flag.  Filling ~30
    # request-sized arrays was a tenth of a run's CPU time (n = 200k, 2026-12-06).
    swap = swap_s_per_token is not None
    m1 = n + 1

    def sized(use, fill=None, dtype=i64):
        k = m1 if use else 1
        return np.empty(k, dtype=dtype) if fill is None else np.full(k, fill, dtype=dtype)

    pc = P.copy()
    rc, pf, dc, kv, adm, npre, isbl = (np.zeros(n, dtype=i64) for _ in range(7))
    hwm = np.zeros(n if record and paged else 1, dtype=i64)
    st = np.zeros(n, dtype=np.int8)
    nbk = np.full(n, -1, dtype=i64)
    fs, pdn, ftk, fin = (np.full(n, np.nan) for _ in range(4))
    dl, pl, ql, pend, bpr, bpm, bd, bl, run, fl = (np.empty(m1, dtype=i64) for _ in range(10))
    sr, sq = sized(paged and most_recent), sized(paged and most_recent)
    lg = sized(async_scheduling)
    pos_d, pos_p = np.empty(m1, dtype=i64), np.empty(m1, dtype=i64)  # (written when a request enters a list)
    lp = np.zeros(K.N_LP, dtype=i64)
    gb, fr = np.zeros(m1, dtype=i64), np.empty(m1, dtype=i64)
    cv = np.zeros(m1, dtype=np.int8)  # 1: a covered decoder (kv.py: no heap entry while an older one bounds it)
    cnt = np.zeros(bs, dtype=i64)
    swq, shl = sized(swap), sized(swap, 0)
    stamp, cup, qpos, qn = (sized(caching, 0) for _ in range(4))
    qs = np.array([int(kv_cap) // bs, 0, 0], dtype=i64)  # never-used blocks, queue head, queue end
    qe = np.empty((64, 4), dtype=i64)  # the freed blocks (prefix caching): request, index, generation, taken
    # the heap: room for three pushes per request (what kv.py asks per request in the system), so that it seldom
    # grows (kv.step is plain Python: each growth is one more call of the compiled loop); pages are touched as used
    hf, hr = np.empty(3 * n + 66, dtype=i64), np.empty(3 * n + 66, dtype=i64)
    bt, bn, bw = np.empty(2 * n + 64, f64), np.empty(2 * n + 64, i64), np.empty(2 * n + 64, i64)
    m = 64 if record else 0
    RF, RI = np.empty((m, 2), f64), np.empty((m, K.N_RI), i64)
    state = (arr, P, D, tau, cfg, cf, si, sf, pc, rc, pf, dc, kv, nbk, adm, npre, hwm, isbl, st, fs, pdn, ftk, fin,
             dl, pl, ql, pos_d, pos_p, lp, pend, bpr, bpm, bd, bl, run, fl, sr, sq, gb, cv, cnt, fr, swq, shl, stamp,
             cup, qpos, qn, qs, ct, lg, None if compose_table is None and not async_scheduling else 1,
             None if _vllm_rules(paged, most_recent, swap_s_per_token, prefix_caching) else 1)
    while True:
        status, qe, hf, hr, bt, bn, bw, RF, RI = K.step(*state, qe, hf, hr, bt, bn, bw, RF, RI)
        if status == K.STATUS_DONE:
            break
        t = float(sf[K.F_T])
        progress(t, int(si[K.I_NA]))
        sf[K.F_NEXT] = t + 1.0 + 0.02 * t
    nb, nr = int(si[K.I_NB]), int(si[K.I_NR])
    rec = None
    if record:
        rec = {"t_s": RF[:nr, K.R_T].copy(), "prefill_tokens": RI[:nr, K.R_X].copy(),
               "decode_tokens": RI[:nr, K.R_S].copy(), "requests": RI[:nr, K.R_Q].copy(),
               "batch_s": RF[:nr, K.R_B].copy(), "demand": RI[:nr, K.R_D].copy(), "kv_tokens": RI[:nr, K.R_K].copy(),
               "kv_used": RI[:nr, K.R_U].copy()}
        if paged:
            rec.update(resident=RI[:nr, K.R_RES].copy(), waiting=RI[:nr, K.R_WAIT].copy(),
                       useful_tokens=RI[:nr, K.R_USE].copy())
    bt = _cut_own(bt, nb)
    bn = _cut_own(bn, nb)
    bw = _cut_own(bw, nb)
    return {"first_scheduled_s": fs, "prefill_done_s": pdn, "first_token_s": ftk, "finish_s": fin,
            "backlog": (bt, bn, bw), "iterations": int(si[K.I_NITER]),
            "busy_s": float(sf[K.F_BUSY]), "mixed_iterations": int(si[K.I_MIXED]),
            "tokens_served": int(si[K.I_TOKS]), "records": rec, "end_s": float(sf[K.F_T]),
            "n_blocked": int(si[K.I_NBLOCKED]), "n_arrived": int(si[K.I_NA]), "preemptions_per_request": npre,
            "preemptions": int(si[K.I_PREEMPT]), "wasted_tokens": int(si[K.I_WASTED]),
            "swap_tokens": int(si[K.I_SWT]),
            "rejected": int(si[K.I_REJECTED]), "peak_kv_tokens": int(si[K.I_PEAK]), "batches": None,
            "examined": int(si[K.I_EXAMINED])}
