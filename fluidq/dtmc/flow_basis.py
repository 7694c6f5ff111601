"""The load basis of an engine whose batch time reads the batch composition (issue 16).

A :class:`~fluidq.batchtime.composition.Composition` batch time (an operator-profile iteration model: the
engines of ``fluidq check --profile-dir`` and :func:`fluidq.validate.deployment.deployment_engine`) answers
``t(b)`` as one prefill chunk of ``b`` tokens with no context: it counts no decode cost, so at the engine's
capacity point ``t(b)`` is 0.50-0.83 of the iteration time (tests/validation/test_deployment_tb_bound.py)
and a capacity from ``b / t(b)`` overstates what the engine serves.  Nor is it a lower bound on every
iteration of ``b`` tokens (one chunk's causal attention can cost more than the decodes it stands for), so no
Theorem-2 bound is read from it either.  Such an engine's load is read against
vLLM's flow balance instead (:func:`fluidq.validate.predict.predict_capacity`, what ``fluidq capacity
--profile-dir`` prints and ``fluidq check --profile-dir --load`` reads): one function,
:func:`flow_balance_capacity`, that ``check_stability``, ``stability_threshold``, the fluid verdicts and
:func:`fluidq.dtmc.load_basis.load_basis` (the lambda* of every face's ``--load``) all call.

It lives in ``fluidq.dtmc``, not ``fluidq.capacity``, because it reads :func:`fluidq.validate.predict.predict_capacity`
and ``fluidq.validate`` imports ``fluidq.capacity``: that import from ``fluidq.capacity`` would close a cycle between
sibling sub-packages, which ``lint-imports``' ``acyclic`` contract forbids (:mod:`fluidq.dtmc.load_basis` says more).
"""
from __future__ import annotations

import numpy as np

__all__ = ["FLOW_BALANCE_BAND", "KV_ESTIMATE_BAND", "N_LENGTH_ROWS", "estimate_band", "flow_balance_capacity",
           "is_composition", "length_rows"]

#: ``(low, high)``: where a verdict read against the flow-balance capacity is decided (stable below ``low``
#: times it, unstable above ``high`` times it, unknown between, critical within the tolerance of 1).  The
#: flow balance is a fluid estimate, not a bound: against seeded simulations of the same engine it is within
#: the simulated 95 % interval at 100+100 and 0.97 of its low end at 300+200 (Llama-3.1-8B, RTX PRO 6000
#: folder, tests/validation/test_flow_balance_vs_simulation.py), and tests/stability/test_flow_basis.py holds
#: both ends to simulation.  Where the KV cache binds the band is
#: :data:`fluidq.stability.KV_ESTIMATE_BAND` (recompute preemptions move the served rate further).
FLOW_BALANCE_BAND = (0.95, 1.05)

#: ``(low, high)`` of a capacity estimate where the KV cache binds (``fluidq.stability.KV_ESTIMATE_BAND``, whose
#: comment gives the measurements behind it)
KV_ESTIMATE_BAND = (0.8, 1.25)


def estimate_band(pred) -> tuple:
    """The ``(low, high)`` band a flow-balance capacity ``pred`` is decided outside: :data:`KV_ESTIMATE_BAND`
    when the KV cache binds, else :data:`FLOW_BALANCE_BAND`."""
    return KV_ESTIMATE_BAND if pred.binding == "kv_cache" else FLOW_BALANCE_BAND


def is_composition(engine) -> bool:
    """Whether ``engine``'s batch time reads the batch composition (``t(b)`` is then one prefill chunk with no
    decode cost, not the iteration time)."""
    return getattr(engine.batch_time, "kind", None) == "composition"


#: rows drawn (seeded) from a workload's length distributions when it has no trace and its lengths vary
N_LENGTH_ROWS = 4096


def length_rows(workload):
    """The prompt and output lengths the flow balance reads: a trace's rows when the workload carries one
    (as ``fluidq check --trace``); the one fixed pair when both lengths are fixed; else
    :data:`N_LENGTH_ROWS` rows drawn from the length distributions with a fixed seed.  The flow balance is not
    linear in the lengths (the slack of whole-prompt admission reads ``E[p^2]``, a long prompt's chunks share
    fewer iterations), so the means alone overstate the capacity of varied lengths: geometric prompts and
    outputs of mean 100 on a profile engine serve 0.85 of the means' answer (second reading, 2026-12-06)."""
    from ..workload.lengths import Fixed

    if workload.trace is not None:
        return (np.asarray(workload.trace.prompt_tokens, dtype=float),
                np.asarray(workload.trace.output_tokens, dtype=float))
    lp, lo = workload.prompt_tokens, workload.output_tokens
    if all(isinstance(x, (int, np.integer, Fixed)) for x in (lp, lo)):
        return np.array([workload.mean_prompt_tokens]), np.array([workload.mean_output_tokens])
    rng = np.random.default_rng(0)
    draw = (lambda x: np.full(N_LENGTH_ROWS, float(x)) if isinstance(x, (int, np.integer))
            else np.asarray(x.sample(rng, N_LENGTH_ROWS), dtype=float))
    return draw(lp), draw(lo)


#: the old private name (other modules imported it before it was public)
_lengths = length_rows


def flow_balance_capacity(engine, workload, *, n_engines: int = 1):
    """vLLM's flow-balance capacity of ``engine`` for ``workload``'s lengths, or ``None`` when the engine's
    batch time does not read the batch composition (its ``b / t(b)`` is then the basis).

    The engine's own budgets go in: ``b_max`` (``max_num_batched_tokens``), ``k_max`` (``max_num_seqs``), its
    KV cache and block size.  The flow balance counts ``m_d - 1`` decode iterations per request (the first
    token comes with the prefill, vLLM's rule); an engine whose prefill emits no token runs ``m_d`` of them,
    so its outputs are read one token longer.  ``n_engines`` identical engines behind a router serve
    ``n_engines`` times one engine's rate.

    Returns
    -------
    CapacityPrediction or None
        :class:`~fluidq.validate.predict.CapacityPrediction`: ``requests_per_s`` (all engines) is the basis;
        ``tokens_per_s`` counts ``m_p + m_d`` per request; ``binding`` names the limit that binds.
    """
    if not is_composition(engine) or not callable(getattr(engine.batch_time.model, "decode_only", None)):
        return None  # (an iteration model without decode_only() has no flow balance: t(b) stays the basis)
    from ..validate.predict import predict_capacity

    p, o = length_rows(workload)
    if not engine.prefill_emits_token:
        o = o + 1.0
    block = int(getattr(engine.memory, "block_size", 1) or 1)
    pred = predict_capacity(engine.batch_time.model, p, o, b_max=engine.b_max, k_max=engine.k_max,
                            kv_capacity_tokens=engine.kv_capacity_tokens, block_size=block)
    return engine_totals(pred, engine, p, o, n_engines)


def engine_totals(pred, engine, p, o, n_engines: int):
    """``pred`` (one engine's flow balance on prompts ``p`` and outputs ``o``, the outputs one token longer when the
    engine's prefill emits no token) as the answer counts it: tokens/s of the request's own ``m_p + m_d``, and
    ``n_engines`` identical engines serving ``n_engines`` times one engine's rate.  (The flow-balance and the
    KV-rules bases, :mod:`fluidq.dtmc.kv_basis`, both finish so.)"""
    from dataclasses import replace

    if not engine.prefill_emits_token:
        pred = replace(pred, tokens_per_s=pred.requests_per_s * float(p.mean() + o.mean() - 1.0))
    if n_engines != 1:
        pred = replace(pred, tokens_per_s=n_engines * pred.tokens_per_s, requests_per_s=n_engines * pred.requests_per_s,
                       residents=n_engines * pred.residents)
    return pred
