"""The operator-profile iteration model evaluated inside the compiled kernel.

:meth:`fluidq.batchtime.operators.IterationModel.kernel_table` packs a model's fitted tables (the per-layer
linear and once-per-iteration times by tokens, the LM head and sampler by sequences, the attention grids)
into one float64 array; :func:`batch_s` computes from it what :meth:`IterationModel.time` computes for a
batch, from the batch's aggregates: the prefill tokens ``C``, the causal-attention work
``sum c_i (k_i + c_i / 2)`` of its chunks, their number, the decoders and the sum of their contexts.  The
arithmetic is the Python path's, operation for operation: ``numpy.interp`` with :func:`_interp1`'s linear
extrapolation, scipy's ``RegularGridInterpolator`` (linear, extrapolating: the two-dimensional Cython
path's ``((v (1 - y0)) (1 - y1))`` products, the n-dimensional path's products of weights), the clamps at 0
and 16 tokens of context, and :meth:`IterationModel.stage_us`'s sums, so the two give the same seconds
(``tests/kernel/test_compose_table.py`` holds them equal on random compositions of every shipped model).

The parallel terms -- tensor-parallel all-reduces, MoE experts (with expert parallelism's all-to-alls), pipeline
sends -- depend on the batch's tokens ``b`` alone: the table holds them per batch size, computed by the model's own
callables up to the engine's token budget, and :func:`time_shape` adds them where
:meth:`IterationModel.stage_us` does (``n_layers x (linear + attention + comm)``, plus ``n_moe_layers x experts``;
with ``pp`` stages the period ``pp x`` the slowest stage).  :func:`chunks_s` takes the batch's chunks themselves,
for data-parallel MoE ranks in lockstep (:class:`fluidq.validate.deployment.LockstepRanks`: the slowest rank's
time after each chunk went to the least loaded rank); ``tests/kernel/test_compose_parallel.py`` holds these equal
too (Vidur Llama-2-70B TP2, the Qwen3-30B-A3B MoE profile on one GPU and DP2 + EP2, Llama-3.1-8B in 2 and 3
stages, lockstep DP2 and DP4).
"""
# ruff: noqa: N806
from __future__ import annotations

import math

# the header of the flat table, from the one place that writes it (fluidq.batchtime.operators._kernel_table)
from ..batchtime.operators import (KT_COMM, KT_DEC, KT_DECX, KT_DP, KT_FDEC, KT_KIND, KT_LAYERS, KT_LIN, KT_MIX,
                                   KT_MOE, KT_NB, KT_NMOE, KT_ONCE, KT_OVERHEAD, KT_PP, KT_PRE, KT_PSEQ, KT_SCRATCH,
                                   KT_SEND, KT_SEQ)
from ._jit import jit

__all__ = ["batch_s", "chunks_s", "time_shape"]


@jit(inline="always", _nrt=False)
def _interval(ct, a, n, x):
    """The interval ``i`` of the ascending axis ``ct[a:a + n]`` holding ``x`` (``x_i <= x < x_{i+1}``), clipped
    to ``0 .. n - 2`` (extrapolation uses the end intervals), as scipy's ``find_interval_ascending``."""
    if x >= ct[a + n - 1]:
        return n - 2
    if x < ct[a]:
        return 0
    lo = 0
    hi = n - 1
    while hi - lo > 1:  # ct[a + lo] <= x < ct[a + hi]
        mid = (lo + hi) // 2
        if x < ct[a + mid]:
            hi = mid
        else:
            lo = mid
    return lo


@jit(inline="always", _nrt=False)
def _div(a, b):
    """``a / b`` as IEEE (numpy) divides, also by zero (``inf`` with ``a``'s sign, ``nan`` for ``0 / 0``); plain
    Python and numba raise there.  (The Vidur profile's token axis ends with a repeated point: beyond it the
    Python model's linear extrapolation is ``inf`` or ``nan``, and so is this.)"""
    if b != 0.0:
        return a / b
    if a != a or a == 0.0:
        return math.nan
    return math.inf if (a > 0.0) == (math.copysign(1.0, b) > 0.0) else -math.inf


@jit(_nrt=False)
def _interp1(ct, o, x):
    """``fluidq.batchtime.operators._interp1`` (``numpy.interp`` inside, linear beyond both ends, >= 0 below)."""
    n = int(ct[o])
    X = o + 1
    Y = o + 1 + n
    if x > ct[X + n - 1]:
        s = _div(ct[Y + n - 1] - ct[Y + n - 2], ct[X + n - 1] - ct[X + n - 2])
        return ct[Y + n - 1] + s * (x - ct[X + n - 1])
    if x < ct[X]:
        s = _div(ct[Y + 1] - ct[Y], ct[X + 1] - ct[X])
        v = ct[Y] + s * (x - ct[X])
        return v if (v > 0.0 or v != v) else 0.0  # (numpy.maximum keeps a nan)
    if x == ct[X + n - 1]:
        return ct[Y + n - 1]
    j = _interval(ct, X, n, x)
    if ct[X + j] == x:
        return ct[Y + j]
    slope = (ct[Y + j + 1] - ct[Y + j]) / (ct[X + j + 1] - ct[X + j])
    return slope * (x - ct[X + j]) + ct[Y + j]


@jit(_nrt=False)
def _grid2(ct, o, x0, x1):
    """A two-dimensional ``_Grid`` (scipy's ``evaluate_linear_2d``), clamped at 0."""
    n0 = int(ct[o + 1])
    n1 = int(ct[o + 2])
    A0 = o + 3
    A1 = A0 + n0
    V = A1 + n1
    i0 = _interval(ct, A0, n0, x0)
    i1 = _interval(ct, A1, n1, x1)
    y0 = (x0 - ct[A0 + i0]) / (ct[A0 + i0 + 1] - ct[A0 + i0])
    y1 = (x1 - ct[A1 + i1]) / (ct[A1 + i1 + 1] - ct[A1 + i1])
    r = 0.0
    r = r + ct[V + i0 * n1 + i1] * (1 - y0) * (1 - y1)
    r = r + ct[V + i0 * n1 + i1 + 1] * (1 - y0) * y1
    r = r + ct[V + (i0 + 1) * n1 + i1] * y0 * (1 - y1)
    r = r + ct[V + (i0 + 1) * n1 + i1 + 1] * y0 * y1
    return r if (r > 0.0 or r != r) else 0.0


@jit(_nrt=False)
def _grid4(ct, o, x0, x1, x2, x3):
    """A four-dimensional ``_Grid`` (scipy's ``_evaluate_linear``: the vertices in ``itertools.product`` order,
    each value times the product of its weights, summed from 0), clamped at 0."""
    n0 = int(ct[o + 1])
    n1 = int(ct[o + 2])
    n2 = int(ct[o + 3])
    n3 = int(ct[o + 4])
    A0 = o + 5
    A1 = A0 + n0
    A2 = A1 + n1
    A3 = A2 + n2
    V = A3 + n3
    i0 = _interval(ct, A0, n0, x0)
    i1 = _interval(ct, A1, n1, x1)
    i2 = _interval(ct, A2, n2, x2)
    i3 = _interval(ct, A3, n3, x3)
    y0 = (x0 - ct[A0 + i0]) / (ct[A0 + i0 + 1] - ct[A0 + i0])
    y1 = (x1 - ct[A1 + i1]) / (ct[A1 + i1 + 1] - ct[A1 + i1])
    y2 = (x2 - ct[A2 + i2]) / (ct[A2 + i2 + 1] - ct[A2 + i2])
    y3 = (x3 - ct[A3 + i3]) / (ct[A3 + i3 + 1] - ct[A3 + i3])
    r = 0.0
    for v in range(16):  # bit 3 is the first axis: the last axis varies fastest
        b0 = (v >> 3) & 1
        b1 = (v >> 2) & 1
        b2 = (v >> 1) & 1
        b3 = v & 1
        w = 1.0
        w = w * (y0 if b0 else 1 - y0)
        w = w * (y1 if b1 else 1 - y1)
        w = w * (y2 if b2 else 1 - y2)
        w = w * (y3 if b3 else 1 - y3)
        r = r + ct[V + (((i0 + b0) * n1 + i1 + b1) * n2 + i2 + b2) * n3 + i3 + b3] * w
    return r if (r > 0.0 or r != r) else 0.0


@jit(_nrt=False)
def time_shape(ct, pc, kp, nd, kd, n_emit):
    """``IterationModel.time_shape(pc, kp, nd, kd, n_emit)`` (one pipeline stage) in seconds."""
    b = pc + nd
    if not b > 0:
        return 0.0
    kvv = kd if nd > 0 else 0.0
    att = 0.0
    if ct[KT_KIND] == 1.0:  # LLMServingSim: decode, prefill or mixed grid (16 tokens of context at least)
        k16 = kvv if kvv > 16.0 else 16.0
        if pc == 0 and nd > 0:
            att = _grid2(ct, int(ct[KT_DEC]), nd, k16)
        elif pc > 0 and nd == 0:
            att = _grid2(ct, int(ct[KT_PRE]), pc, kp)
        elif pc > 0 and nd > 0:
            if ct[KT_MIX] >= 0:
                att = _grid4(ct, int(ct[KT_MIX]), pc, kp, nd, k16)
            else:
                att = _grid2(ct, int(ct[KT_PRE]), pc, kp) + _grid2(ct, int(ct[KT_DEC]), nd, kvv)
    else:  # Vidur: decode (times the batching overhead), its extras, prefill
        if nd > 0:
            att = att + _grid2(ct, int(ct[KT_DEC]), nd, kvv) * ((1.0 + ct[KT_FDEC]) if nd > 1 else 1.0)
            if ct[KT_DECX] >= 0:
                att = att + _grid2(ct, int(ct[KT_DECX]), nd, kvv)
        if pc > 0:
            att = att + _grid2(ct, int(ct[KT_PRE]), pc, kp)
    layer = _interp1(ct, int(ct[KT_LIN]), b) + att
    j = 0
    if ct[KT_NB] > 0:  # the per-batch-size terms: entry j at b = j / dp tokens
        jf = b * ct[KT_DP]
        j = int(jf)
        if j != jf or j >= ct[KT_NB]:  # (off the table: a batch the engine cannot form)
            return math.nan
    if ct[KT_COMM] >= 0:  # tensor-parallel all-reduces, per layer
        layer = layer + ct[int(ct[KT_COMM]) + j]
    layers = ct[KT_LAYERS] * layer
    if ct[KT_MOE] >= 0:  # the experts of the MoE layers
        layers = layers + ct[KT_NMOE] * ct[int(ct[KT_MOE]) + j]
    first = _interp1(ct, int(ct[KT_ONCE]), b) + ct[KT_OVERHEAD]
    ne = n_emit if n_emit > 1.0 else 1.0
    last = _interp1(ct, int(ct[KT_PSEQ]), ne) if ct[KT_PSEQ] >= 0 else ct[KT_SEQ]
    pp = ct[KT_PP]
    if not pp > 1.0:
        return (layers + first + last) * 1e-6
    # pp stages (IterationModel.stage_us): the first adds `first`, the last `last` instead of the send; the
    # period is pp x the slowest (numpy's max: a nan wins)
    send = ct[int(ct[KT_SEND]) + j]
    mid = layers / pp + send
    top = mid + first
    if pp > 2.0:
        top = _max(top, mid)
    top = _max(top, mid - send + last)
    return (pp * top) * 1e-6


@jit(inline="always", _nrt=False)
def _max(a, b):
    """numpy's ``maximum`` of two floats (a nan in either gives nan)."""
    if a != a:
        return a
    if b != b or b > a:
        return b
    return a


@jit(_nrt=False)
def batch_s(ct, C, work, n_chunks, nd, kv_sum):
    """``IterationModel.time(chunks, contexts)``: ``C`` prefill tokens in ``n_chunks`` chunks of causal-attention
    work ``sum c (k + c/2)``, ``nd`` decoders whose contexts sum to ``kv_sum`` (all integers; the sums are
    exact in float64 below 2**53, so their order does not matter)."""
    Cf = float(C)
    kv_eff = 0.0
    if Cf > 0:
        kv_eff = work / Cf - Cf / 2.0
        if not kv_eff > 0.0:
            kv_eff = 0.0
    ndf = float(nd)
    kvd = float(kv_sum) / ndf if nd > 0 else 0.0
    return time_shape(ct, Cf, kv_eff, ndf, kvd, ndf + n_chunks)


@jit(_nrt=False)
def chunks_s(ct, bpm, bpr, kv, npf, nd, kv_sum):
    """The seconds of a batch given its prefill chunks -- ``bpm[:npf]`` tokens each, for the requests ``bpr[:npf]``
    holding ``kv[bpr[j]]`` tokens of KV before -- and ``nd`` decoders whose contexts sum to ``kv_sum``: one
    engine's :meth:`IterationModel.time` (:func:`batch_s` of the chunks' aggregates), or with ``ct[KT_DP] = dp >
    1`` :meth:`fluidq.validate.deployment.LockstepRanks.time`: the decoders shared evenly (``nd / dp`` each), the
    chunks in descending ``(tokens, KV)`` order each to the least loaded rank (the first of equal loads), the
    slowest rank's time.  The rank loads live in the table's scratch space (``4 dp`` values)."""
    if ct[KT_DP] <= 1.0:
        C = 0
        cw = 0.0
        nch = 0
        for j in range(npf):
            m = bpm[j]
            if m > 0:
                C += m
                cw += m * (kv[bpr[j]] + m / 2.0)
                nch += 1
        return batch_s(ct, C, cw, nch, nd, kv_sum)
    dp = int(ct[KT_DP])
    S = int(ct[KT_SCRATCH])
    LOAD, CT, WK, NC = S, S + dp, S + 2 * dp, S + 3 * dp
    ndr = float(nd) / float(dp)
    kvd = float(kv_sum) / float(nd) if nd > 0 else 0.0
    for r in range(dp):
        ct[LOAD + r] = ndr
        ct[CT + r] = 0.0
        ct[WK + r] = 0.0
        ct[NC + r] = 0.0
    pc_prev = math.inf  # the chunks from the largest (tokens, KV) down; equal pairs are interchangeable
    pk_prev = math.inf
    while True:
        c = -1.0
        k = -1.0
        mult = 0
        for j in range(npf):
            cj = float(bpm[j])
            if not cj > 0.0:
                continue
            kj = float(kv[bpr[j]])
            if cj > pc_prev or (cj == pc_prev and kj >= pk_prev):
                continue  # (at or above the last pair placed)
            if cj > c or (cj == c and kj > k):
                c = cj
                k = kj
                mult = 1
            elif cj == c and kj == k:
                mult += 1
        if mult == 0:
            break
        for _ in range(mult):
            r = 0
            for q in range(1, dp):
                if ct[LOAD + q] < ct[LOAD + r]:
                    r = q
            ct[LOAD + r] += c
            ct[CT + r] += c
            ct[WK + r] += c * (k + c / 2.0)
            ct[NC + r] += 1.0
        pc_prev = c
        pk_prev = k
    worst = 0.0
    for r in range(dp):
        Cr = ct[CT + r]
        kv_eff = 0.0
        if Cr > 0.0:
            kv_eff = ct[WK + r] / Cr - Cr / 2.0
            if not kv_eff > 0.0:
                kv_eff = 0.0
        v = time_shape(ct, Cr, kv_eff, ndr, kvd, ndr + ct[NC + r])
        if v > worst:
            worst = v
    return worst
