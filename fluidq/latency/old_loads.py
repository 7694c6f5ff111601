"""Loads given in the unit ``compare_orderings`` read until 2026-12-06, converted to today's load basis.

Until 2026-12-06 :func:`fluidq.latency.compare_orderings` read a load as a fraction of ``b_max / t(b_max)`` of the
engine *without* its KV cache, over the workload's mean tokens per request (:func:`old_unit`).  Since 2026-12-07 it
reads loads on the load basis of ``fluidq check --load`` (:func:`fluidq.dtmc.load_basis.load_basis`: the KV rules'
capacity where the cache binds), so the same number asks for another arrival rate.  :func:`old_loads` gives, for
loads set in the old unit, today's loads with the *same* arrival rates, to the last bit, so that an experiment set
up before the change (the claims table, the sweep pages, ``examples/latency_orderings.py``) reruns as it was made;
:func:`load_words` says one in words ("load L of the KV basis B req/s = R req/s (old load x)").
"""
from __future__ import annotations

import math

import numpy as np

__all__ = ["BASIS_WORDS", "load_words", "old_loads", "old_unit"]

#: the load bases' names as a page says them
BASIS_WORDS = {"kv_rules": "KV basis", "max_throughput": "max-throughput basis", "flow_balance": "flow-balance basis"}
#: how far (ulps) a converted load may be moved so that ``load x basis`` is the old rate to the last bit
_ULPS = 8


def old_unit(eng, w) -> float:
    """The old unit in requests/s: the token capacity ``b_max / t(b_max)`` of ``eng`` without its KV cache
    (:func:`fluidq.capacity.full_batch_rate`) over the workload ``w``'s mean tokens per request."""
    from ..capacity import full_batch_rate

    return full_batch_rate(eng.with_(kv_capacity_tokens=None) if eng.kv_capacity_tokens is not None else eng,
                           w)[0] / w.mean_tokens


def old_loads(eng, w, olds) -> list:
    """Today's loads of ``eng`` and ``w`` (fractions of :func:`~fluidq.dtmc.load_basis.load_basis`, what
    ``compare_orderings`` reads) with the arrival rates the old loads ``olds`` had: one dict per load, with
    ``old_load``, ``load``, ``basis`` (its name), ``basis_req_s`` and ``rate_req_s`` (``old_load x old_unit``).
    The load is moved by at most a few ulps so that ``load x basis`` (the rate ``compare_orderings`` makes of it)
    is the old rate to the last bit."""
    from ..dtmc.load_basis import load_basis

    lb = load_basis(eng, w)
    b, u = lb.requests_per_s, old_unit(eng, w)
    out = []
    for x in olds:
        r = float(x) * u
        ld = r / b
        for _ in range(_ULPS):
            if ld * b == r:
                break
            ld = float(np.nextafter(ld, math.inf if ld * b < r else -math.inf))
        out.append({"old_load": float(x), "load": float(ld), "basis": lb.basis, "basis_req_s": b, "rate_req_s": r})
    return out


def load_words(d, old=True) -> str:
    """"load L of the KV basis B req/s = R req/s" (and, with ``old``, the old load it replaces) for a dict of
    :func:`old_loads`."""
    return (f"load {d['load']:.4g} of the {BASIS_WORDS.get(d['basis'], d['basis'])} {d['basis_req_s']:.4g} req/s = "
            f"{d['rate_req_s']:.4g} req/s" + (f" (old load {d['old_load']:g})" if old else ""))
