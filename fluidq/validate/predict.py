"""Capacity of a decode-first, chunked-prefill engine from its iteration model, with the binding limit.

Fluid argument (the single-engine model of Li, Dai, Peng, arXiv:2504.07347, with a batch-size
limit and a KV-cache limit added).  Under overload the engine keeps ``N`` requests decoding; each
iteration gives every one of them a decode token and fills the rest of the token budget with prompt
chunks.  In flow balance ``lam_it = N / (m_d - 1)`` requests finish per iteration (the first output
token comes with the prefill).  Three limits cap ``N``:

* ``k_max`` (``max_num_seqs``) caps the *running* requests, prefilling ones included: a request holds a
  slot for its ``n_c`` prefill iterations and ``m_d - 1`` decode iterations, so
  ``N <= k_max (m_d - 1) / (m_d - 1 + n_c)``;
* the KV cache: a decoding request holds its prompt and the tokens generated so far; averaged over
  the iterations it spends decoding (length-biased: long requests are resident longer) this is
  ``kv_bar = sum_i o_i (p_i + o_i/2) / sum_i o_i`` (in whole blocks: ``ceil(context / B)`` averaged over the decode
  iterations, ``h`` blocks), and the cache keeps free the room below the waiting head's prompt (vLLM admits a
  request only when its whole prompt fits; the head is length-biased, the room uniform below it:
  ``s = E[pb^2] / (2 E[pb])`` blocks, ``pb = ceil(p / B)``), so ``N <= (C // B - s) / h``.  Admitting whenever a prompt fits lets the residents outgrow the
  cache, and vLLM then preempts the newest one and recomputes it: ``r`` preemptions per request, each a prompt
  and its generated tokens prefilled again (:func:`_kv_victims`, a renewal argument over the gaps between finishes,
  in whole blocks), counted in the prompt work of the iteration after a finish: a victim waits at the head of the
  queue, nothing behind it is admitted, and only a finish frees its room, so it comes back with that finish (the
  token the iteration completing a recomputation gives, vLLM's rule, is left out: under 0.5 % where the count of
  preemptions is right, see :func:`_kv_victims`).  The cache binds, and preempts, not only while ``N`` of the mean
  context exceeds it: ``max_num_seqs``' residents age as a cohort and outgrow it for a share of their decode life
  (:func:`_cache_binding_share`: 1 where even the young cohort fills the cache, 1/2 where the mean context just fits,
  0 once they fit at full context), and the preemptions are the full cache's times that share, ``N`` the lesser of
  the two limits: so the capacity is continuous where the binding limit passes from the cache to ``max_num_seqs``
  (before 2026-12-07, h-kvjump, it jumped there, +18 % for +1.7 % of cache on a synthetic 13B folder);
* the token budget: ``N (1 + m_p/(m_d - 1)) <= b_max``.

With ``N = min`` of the three, the capacity is ``lam_it / E[t_iter]`` requests per second (``x (m_p +
m_d)`` tokens), ``t_iter`` an iteration of ``N`` decodes and that iteration's prompt chunks, folded into
one chunk as the iteration models fold a batch (their causal attention work kept).  Where the budget
binds every iteration is full (``b_max - N`` prompt tokens); otherwise a request is admitted when a
resident finishes, the finishes per iteration are Poisson (mean ``lam_it``), and the prompts queue
FCFS for at most ``b_max - N`` tokens an iteration (:func:`_admitted_iteration_s`).  So prompts
sharing an iteration share its fixed and below-the-roof cost; a prompt alone pays it.  When the
budget binds this reduces to the ``b_max / t(b_max)`` bound of Theorem 2 at the workload's decode
context, in batch tokens; the tokens/s reported count each request's ``m_p + m_d`` (its first output token
comes with the prefill, one batch token fewer), so they are that bound times ``(m_p + m_d) / (m_p + m_d - 1)``.
With one output token per request nothing decodes (``N = 0``) and the limits bound the prompts prefilling at
once.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from ..errors import ParameterError
from ..results import plain

__all__ = ["CapacityPrediction", "predict_capacity", "simulate_capacity"]


@dataclass(frozen=True, kw_only=True)
class CapacityPrediction:
    """Predicted capacity and which limit binds.

    Attributes
    ----------
    tokens_per_s, requests_per_s : float
        Predicted maximum served rate.
    residents : float
        ``N``, the requests resident in the engine at saturation.
    binding : str
        ``"kv_cache"``, ``"k_max"`` or ``"token_budget"``.
    limits : dict
        ``N`` allowed by each limit.
    decode_iteration_s : float
        ``t_dec(N)``: a decode-only iteration at saturation.
    iteration_s : float or None
        The iteration at its flow-balance composition (``N`` decodes and their prompts' tokens), the
        engine's mean iteration time at the capacity operating point (fluid method only).
    reason : str
        The argument in words.
    """

    tokens_per_s: float
    requests_per_s: float
    residents: float
    binding: str
    limits: dict
    decode_iteration_s: float
    mean_context_tokens: float
    reason: str
    inputs: dict = field(default_factory=dict, repr=False)
    method: str = "fluid"
    ci: tuple | None = None
    replications: tuple = ()
    iteration_s: float | None = None
    #: the fraction of the workload's requests whose prompt and output do not fit the KV cache (never served;
    #: left out of the capacity, which is that of the others, and named in ``reason``)
    never_served_fraction: float = 0.0

    def to_dict(self):
        return plain({"tokens_per_s": self.tokens_per_s, "requests_per_s": self.requests_per_s,
                      "residents": self.residents, "binding": self.binding, "limits": self.limits,
                      "decode_iteration_s": self.decode_iteration_s,
                      "mean_context_tokens": self.mean_context_tokens, "reason": self.reason,
                      "inputs": self.inputs, "method": self.method, "ci": self.ci,
                      "replications": list(self.replications), "iteration_s": self.iteration_s})


def predict_capacity(model, input_tokens, output_tokens, *, b_max: int, k_max: int | None,
                     kv_capacity_tokens: int | None, block_size: int = 16) -> CapacityPrediction:
    """Predicted capacity of an engine (see the module docstring).

    Parameters
    ----------
    model : IterationModel
        Whole-iteration time from operator profiles.
    input_tokens, output_tokens : array_like
        The workload's request lengths (an empirical sample).
    b_max : int
        Token budget per iteration.
    k_max : int or None
        Batch-size limit.
    kv_capacity_tokens : int or None
        KV-cache capacity in tokens.
    block_size : int
        KV block size in tokens: the KV limit, the admission slack and the preemptions are counted in whole blocks.
        Requests whose prompt and output do not fit the cache are left out (the reason says how many); none
        fitting raises :class:`~fluidq.errors.ParameterError` naming ``kv_capacity_tokens``.

    Returns
    -------
    CapacityPrediction

    References
    ----------
    Li, Dai, Peng, "Throughput-Optimal Scheduling Algorithms for LLM Inference and AI Agents",
    arXiv:2504.07347 (Theorem 2: the token-budget bound; section 6: the batch-size limit k_max).
    Ao et al., arXiv:2504.11320 (memory-constrained scheduling: a KV limit on the residents).
    """
    p = np.asarray(input_tokens, dtype=float)
    o = np.asarray(output_tokens, dtype=float)
    if p.size == 0 or p.shape != o.shape:
        raise ParameterError("input_tokens", p.shape, "two non-empty arrays of equal length")
    B = max(1, int(block_size))
    refused, never = "", 0.0
    if kv_capacity_tokens is not None:
        # a request whose prompt and output do not fit the whole cache is never served (vLLM cannot admit it or
        # keeps preempting it): none fitting is an error, a few are left out of the workload and said so
        cap_blocks = int(kv_capacity_tokens) // B
        fits = np.ceil(np.maximum(p + o, 1.0) / B) <= cap_blocks
        if not fits.any():
            raise ParameterError("kv_capacity_tokens", kv_capacity_tokens,
                                 f"room for at least one request ({cap_blocks} blocks of {B} tokens)",
                                 f"the shortest prompt + output is {int((p + o).min())} tokens: the engine serves "
                                 "nothing")
        if not fits.all():
            refused = (f"; {int((~fits).sum())} of {p.size} requests ({100 * (~fits).mean():.1f} %) do not fit the "
                       f"{kv_capacity_tokens}-token cache with their output and are left out (never served)")
            never = float((~fits).mean())
            p, o = p[fits], o[fits]
    mp, md = float(p.mean()), float(o.mean())
    kv_bar = float((o * (p + o / 2.0)).sum() / o.sum())
    # the first output token comes with the prefill; ``m_d - 1`` decode iterations follow
    mdec = max(md - 1.0, 0.0)
    uniq, counts = np.unique(p, return_counts=True)
    w = counts / counts.sum()

    def chunks(room):
        """Mean iterations a prompt spends prefilling (chunks of at most ``room`` tokens)."""
        return float((np.ceil(uniq / max(1.0, room)) * w).sum())

    # decoding residents N allowed by each limit; max_num_seqs counts the prefilling requests too: a
    # request holds a slot for its n_c prefill iterations and m_d - 1 decode iterations, so in flow
    # balance N = k_max (m_d - 1) / (m_d - 1 + n_c) of the k_max running requests are decoding
    limits = {"token_budget": b_max * mdec / (mp + mdec) if mdec > 0 else 1.0}
    if k_max is not None:
        n_k = float(k_max)
        for _ in range(20):  # n_c depends on the room b_max - N the decodes leave
            n_k = k_max * mdec / (mdec + chunks(b_max - n_k)) if mdec > 0 else 1.0
        limits["k_max"] = n_k
    if kv_capacity_tokens is not None:
        # in whole blocks: the free room the waiting head leaves (below its prompt's blocks, the head
        # length-biased): E[pb^2] / (2 E[pb]) blocks; a decoding resident holds ceil(context / B) blocks, averaged
        # over its decode iterations (length-biased as kv_bar)
        pb = np.ceil(np.maximum(p, 1.0) / B)
        slack = float((pb * pb).mean() / (2.0 * pb.mean()))
        # (the decode iterations j = 1 .. o-1 hold p + j tokens: for B = 1 this is kv_bar, weighted by o - 1)
        dec_it = np.maximum(o - 1.0, 0.0)
        held = (float((_block_sum(p + dec_it, B) - _block_sum(p, B)).sum() / dec_it.sum()) if dec_it.sum() > 0
                else float(pb.mean()))
        limits["kv_cache"] = max(0.0, cap_blocks - slack) / max(held, 1e-9)
    share = 1.0  # the share of the residents' decode life in which the cache binds (_cache_binding_share)
    if mdec > 0:
        binding = min(limits, key=limits.get)
        if kv_capacity_tokens is not None and "k_max" in limits and binding in ("kv_cache", "k_max"):
            # max_num_seqs' residents that fit the cache at their MEAN context still outgrow it as they age
            # together: the cache binds (and preempts) for a share of their decode life, 0 only where they all hold
            # their full contexts (issue 16 / 20, h-kvjump: the flow balance jumped +18 % where the mean crossed)
            share = _cache_binding_share(limits["k_max"], held, slack, cap_blocks, dec_it, B)
            if share > 0:
                binding = "kv_cache"
        N = max(1.0, min(limits[binding], limits.get("k_max", math.inf)))
        lam_it = N / mdec  # requests completing per iteration
        if binding == "token_budget":  # (N held at 1 for very short outputs: the prompts still fit the budget)
            lam_it = min(lam_it, max(1.0, b_max - N) / mp) if mp > 0 else lam_it
    else:
        # one output token each: it comes with the prefill, so nothing decodes (N = 0) and the limits are on the
        # requests prefilling at once -- the budget's b_max / m_p per iteration, max_num_seqs' k_max over the n_c
        # iterations each holds a slot, the cache's residents of prompt context over the same n_c iterations
        n_c0 = chunks(b_max)
        limits = {"token_budget": b_max / mp if mp > 0 else math.inf}
        if k_max is not None:
            limits["k_max"] = k_max / n_c0
        if kv_capacity_tokens is not None:
            limits["kv_cache"] = float(kv_capacity_tokens) / (mp + (block_size - 1) / 2.0) / n_c0
        binding = min(limits, key=limits.get)
        N, lam_it = 0.0, limits[binding]
    X = lam_it * mp  # prompt tokens per iteration in flow balance
    room = max(1.0, b_max - N)
    n_c = chunks(room)
    t_dec = float(model.decode_only(N, kv_bar))
    # The iteration's time at the flow-balance operating point: N decodes and the prompt chunks of that
    # iteration, folded into one chunk as the iteration models fold a batch's chunks (IterationModel.time:
    # the chunks' causal attention work sum c (k + c/2) kept, kv_eff = work/C - C/2), the LM head for the
    # decodes and the chunks.  Prompts sharing an iteration share its fixed and below-the-roof cost (before
    # 2026-12-06 each prompt's delta was taken alone over a decode-only iteration: at Llama-3.1-8B/H100 one
    # 100-token prompt adds 1.51 ms to 256 decodes, each further 100 tokens 2.37 ms).
    pre = 0.0
    if binding == "token_budget" or N == 0:  # every iteration holds N decodes and X prompt tokens (b_max - N)
        work = 0.0
        for pi, wi in zip(uniq, w):
            done, rem = 0.0, pi
            while rem > 0:
                c = min(rem, room)
                work += wi * c * (done + c / 2.0)
                rem -= c
                done += c
        kv_eff = max(0.0, work / mp - X / 2.0) if mp > 0 else 0.0
        t_iter = float(model.time_shape(X, kv_eff, N, kv_bar, n_emit=N + lam_it * n_c))
    elif binding == "kv_cache":
        # recompute preemption (the engine's own rules, not a run): the admitted set outgrows the cache, and each
        # preempted request prefills its prompt and generated tokens again, with a finish (_kv_victims)
        pre, redo, first = _kv_victims(p, mdec, N, block_size=B, outputs=o)
        pre *= share  # preemptions only while the cache binds (1 where it binds at every phase)
        t_iter = _admitted_iteration_s(model, p, N, kv_bar, lam_it, room, redo=pre, redo_tokens=redo,
                                       redo_first=first)
    else:
        t_iter = _admitted_iteration_s(model, p, N, kv_bar, lam_it, room)
    e_delta = (t_iter - t_dec) / lam_it  # what each prompt adds, at the operating point
    per_request = t_iter / lam_it
    lam = 1.0 / per_request
    words = {"kv_cache": f"the KV cache ({kv_capacity_tokens} tokens) holds N = {N:.1f} decoding requests of mean "
                         f"context {kv_bar:.0f} tokens, {pre:.2f} recompute preemptions per request"
                         + ("" if share >= 1 else
                            f" (max_num_seqs' residents outgrow the cache for {100 * share:.0f} % of their decode "
                            "life: the preemptions of a full cache that share of the time)"),
             "k_max": f"max_num_seqs = {k_max} caps the running requests, prefilling ones included: "
                      f"N = {N:.1f} decode while {lam_it * n_c:.1f} prefill",
             "token_budget": f"the token budget b_max = {b_max} is filled with N = {N:.1f} decodes and "
                             f"{X:.0f} prompt tokens"}
    others = ", ".join(f"{k} allows {v:.1f}" for k, v in limits.items() if k != binding)
    reason = (f"{words[binding]} ({others}); a decode iteration takes {t_dec * 1e3:.2f} ms, one with its "
              f"{X:.0f} prompt tokens {t_iter * 1e3:.2f} ms (each prompt adds {e_delta * 1e3:.2f} ms){refused}")
    return CapacityPrediction(tokens_per_s=lam * (mp + md), requests_per_s=lam, residents=N, binding=binding,
                              limits=limits, decode_iteration_s=t_dec, mean_context_tokens=kv_bar, reason=reason,
                              iteration_s=t_iter, never_served_fraction=never,
                              inputs={"b_max": b_max, "k_max": k_max, "kv_capacity_tokens": kv_capacity_tokens,
                                      "m_p": mp, "m_d": md, "model": model.source})



def _cache_binding_share(n_k, held, slack, cap_blocks, dec_it, B) -> float:
    """The share of the decode life of ``max_num_seqs``' residents in which they do not fit the KV cache: where the
    cache binds (and preempts) although ``n_k``, the decoding residents ``max_num_seqs`` allows, fit it at their
    mean context (issue 16 / 20, h-kvjump).

    The residents age together.  An engine that starts under overload admits them in a burst (as fast as the token
    budget takes their prompts), and with one admission per finish the burst keeps its shape: the residents cross
    their decode lives together, holding ``held`` blocks on average but fewer when the cohort is young and more when
    it is old.  Taken as one cohort at a common phase ``u`` (uniform on [0, 1]) of their decode lives, each holding
    its prompt and ``u`` of its decode tokens (weighted by decode iterations, as ``held``), they need
    ``n_k (held + (u - 1/2) d / B) + slack`` blocks, ``d = sum(dec^2) / sum(dec)`` the length-biased decode tokens:
    linear in ``u``, its mean the KV limit's ``n_k held + slack``.  The share is the ``u`` at which that exceeds the
    cache: 1 where even the young cohort fills it, 1/2 where the mean context just fits (where the flow balance
    switched from the KV limit to ``max_num_seqs`` with a jump before), 0 once ``n_k`` residents fit at full
    context.  Measured against seeded ``fluidq.simulate`` runs (validation/RESULTS.md, 2026-12-07, h-kvjump):
    800 + 250 fixed lengths, ``max_num_seqs`` 128, the simulated preemptions per request fall from 0.22 at 96-105k
    tokens to 0 at 130k, this share from 1 at 103.4k to 0 at 135.2k; with lognormal lengths (sigma 0.5) they
    fall over 110-140k, narrower than the ramp's 102-142k (random lengths mix the cohort's phases)."""
    if not dec_it.sum() > 0 or n_k <= 0:
        return 1.0
    d = float((dec_it * dec_it).sum() / dec_it.sum())  # the decode tokens of a resident, length-biased
    width = n_k * d / B  # blocks between the young and the old cohort
    if width <= 0:
        return 1.0 if n_k * held + slack > cap_blocks else 0.0
    return float(min(1.0, max(0.0, 0.5 + (n_k * held + slack - cap_blocks) / width)))


def _kv_victims(prompts, mdec, N, *, block_size: int = 1, outputs=None):
    """``(r, a, q)``: recompute preemptions per finished request, the generated tokens each victim recomputes
    with its prompt, and the probability that a finish is followed by at least one preemption (``r`` counts the
    ones that follow), in vLLM's block rules when the KV cache binds (no watermark; a request is admitted as soon as
    its whole prompt fits the free blocks; the most recently admitted request is preempted when the residents'
    next tokens do not fit).

    A renewal argument over the gaps between finishes (no run read).  A finish frees its request's blocks and the
    waiting requests are admitted head-of-line while their whole prompts fit, so the free room left after the
    admissions is below the prompt ``p`` of the request that stopped them: taken uniform on ``[0, p)``.  That request
    is length-biased (with the room spread wider than a prompt, a prompt stops the admissions with probability
    proportional to its length), so the room left averages ``E[p^2] / (2 E[p])`` tokens -- the slack that
    :func:`predict_capacity` takes off the cache.  Until the next finish the ``N`` residents grow by one token each
    per iteration, and the finishes among ``N`` residents of mean ``g = m_d - 1`` decode iterations are Poisson
    (``N / g`` per iteration), so the growth ``G`` before the next finish is exponential with mean ``g`` tokens.
    The room runs out first with probability ``q = E_len[P(G > U p)] = g E[1 - exp(-p/g)] / E[p]``.  The victim is
    the newest resident (``a = g / N`` tokens generated on average: one gap's worth), an unbiased prompt; it frees
    ``p + a`` and, the growth left being exponential again, a further victim follows with probability
    ``E[exp(-(p + a)/g)]``: ``r = q / (1 - E[exp(-(p + a)/g)])`` preemptions per finish, i.e. per request, each
    prefilling ``p + a`` tokens again.  Checked against seeded stationary simulations of 14 random engines
    (tests/validation/test_kv_preemption_capacity.py; validation/RESULTS.md 2026-12-06): the simulated rates
    0.03-2.7 per request, the formula's within about 30 % of them.

    All of it is counted in whole blocks of ``block_size`` tokens (the default 1 is the token argument above): a
    prompt needs ``pb = ceil(p / B)`` blocks, the room and the growth are in blocks (the growth between finishes
    averages ``gb = E[ceil((p + o) / B) - ceil(p / B)]`` blocks, given ``outputs``, else ``g / B``), a victim frees
    ``ceil((p + a) / B)``.  With ``gb = 0`` (every output stays in its prompt's last block) nothing is preempted.
    The victims never free more than the growth they relieve plus one victim's overshoot, so ``r`` is capped at
    ``q + gb / E[ceil((p + a) / B)]``: with prompts far shorter than the outputs the renewal sum otherwise runs away
    (1-token prompts, 200-token outputs: 96 per request against 1.2 simulated).

    Who the victims are (measured 2026-12-06, h-short16: ``fluidq.simulate`` of the six short-prompt engines of
    test_kv_preemption_capacity.py and the 20 / 300 edge, the generic path with the memory rules instrumented, one
    replication each, the middle half of the iterations): the cache is 96-100 % used in blocks (94 % in tokens at
    20 / 300: the partial last blocks, counted in ``held``); the head of the queue is a preempted request in
    76-100 % of the iterations, needing 5-29 blocks; 53-93 % of the victims had been preempted before, carrying 45-216
    generated tokens, and the simulated engines preempt 1.6-10 times per request, against the 9-38 young victims
    (``g / N``, 1-36 tokens) taken here.  The newest resident is the victim, but it is mostly a re-admitted victim:
    preempted, it waits at the head, its whole context reserved, so nothing younger is admitted until a finish frees
    room; that finish re-admits it (and the victims behind it) and the growth before the next finish preempts it
    again.  The victims' age is not derived here.  What the capacity needs of them is (1) the tokens recomputed per
    request, ``r (p + a)``, which block conservation fixes whoever the victims are -- they free the blocks the
    growth needs beyond the room, the renewal count ``r E[ceil((p + a) / B)]`` -- so ``a`` is taken as what those
    blocks hold when the victims are not young: whole blocks, the last one half full,
    ``ceil((p + a) / B) B - (B - 1) / 2 - p`` (at least ``g / N``; unchanged for ``B = 1``); tokens recomputed per
    request, simulated / formula with ``a = g / N`` / formula now: 552 / 430 / 445 at prompts 5 / outputs 514,
    2034 / 1991 / 2020 at 28 / 2237, 1166 / 1170 / 1179 at 63 / 1275, 75 / 25 / 102 at 1 / 200, 150 / 196 / 220 at
    20 / 300; and (2) when: the victims come back with a finish (a share ``q`` of the finishes bring at least one;
    :func:`_admitted_iteration_s`), not as separate arrivals -- the simulated engines run 1.3-2.4 iterations with
    prompt work per finish, the separate arrivals took 11-39, each paying an iteration's prefill step (about 10 ms
    on the RTX 4090 model).  Where every request has the same length (the 20 / 300 edge) the finishes come in cohorts
    rather than Poisson, and the formula is still -9.9 % there (xfail in test_kv_capacity_edges.py).

    The token a recomputation gives is not counted (2026-12-07, h-kvtoken16).  vLLM v1 keeps the token sampled for
    every scheduled request but a partial prefill, so the iteration in which a victim's recomputation (its prompt
    and its ``a`` generated tokens) catches up samples token ``a + 1`` (``Engine.prefill_emits_token``; fluidq's
    engine since 2fc8e60), and the decode iteration that would have held ``p + a`` tokens is not run.  Per request,
    with ``r`` preemptions: ``m_d - 1 - r`` decode iterations (``lam_it = N / (m_d - 1 - r)``) and ``r
    ceil((p + a) / B)`` block-iterations fewer held while decoding (a higher mean held, a lower ``N``).  That
    depends on the count ``r`` itself, which this renewal argument does not get right where the victims are
    re-admitted old ones (above): counted with its ``r`` (a few rounds with ``a = g / N``) it moves the 14 scored
    engines by -0.06 to +0.34 % (mean |error| 0.80 -> 0.86 %; the simulated engine moved -0.10 to +0.52 % with the
    rule; the count there within 10 % of the simulated one on 10 of them, 3.60 against 2.63 and
    up to 2 x on three under 0.1 per request), the six short-prompt engines by +0.2 to +1.4 % (mean
    |error| 2.20 -> 2.75 %) and the edges by +4.0 % (1 / 200) and +1.6 % (20 / 300), where the simulated engine
    moved +0.7 and -0.05 %: there ``r`` is 12 and 9 against 1.24 and 1.50 simulated.  With the simulated count the
    edges move +0.45 and +0.26 points only (-8.0 -> -7.6 %, -9.8 -> -9.6 %).  On the shipped cases it moves the
    formula +0.1 to +0.5 points, each away from the measured (RTX 4090 +0.28 -> +0.37 %, Vidur 70B TP2 +4.06 ->
    +4.52 %, Vidur 7B +0.94 -> +1.03 %).  Immaterial where the count is right and an amplified count error where
    it is not, so the formula leaves it out (validation/RESULTS.md, 2026-12-07).

    Why the count is 6-10 x high where every request has the same short prompt (measured 2026-12-07, h-kvcount16:
    the 1 / 200 and 20 / 300 edges of test_kv_capacity_edges.py instrumented as above, one replication each;
    validation/RESULTS.md): the engine is not in the stationary state this argument assumes but runs a cycle of
    period ``m_d`` -- requests admitted together cross their block boundaries together and finish together, and the
    room a finishing cohort frees is taken at once by a new cohort of 1-2-block prompts, up to ``max_num_seqs``
    (256 residents in 23 % and 14 % of the iterations, the residents swinging 62-256 and 48-256 about the
    formula's 184 and 169).  The victims are a cohort's newest members, preempted in bursts at a block boundary (a
    tenth of the iterations holds 57-64 % of the preemptions; 52 and 76 generated tokens, 3.7 and 6.3 blocks), so
    they give back 0.44 and 0.54 of the growth ``gb`` (12 and 18 blocks; 0.86-0.95 on the random-length
    short-prompt engines, where the premise above holds): vLLM serves the running requests' next blocks before it
    admits anyone, so a finish's blocks feed the next iteration's growth first, and at the edges a finisher's blocks
    ``E[ceil((p + o) / B)]`` are only 1.2 and 2.0 iterations' growth (22-279 on the other test engines).  It is the
    capacity's miss: with the simulated ``r`` and ``a`` (1.24 / 52.4 and 1.50 / 76.0) substituted here the edges
    are +0.4 and -1.4 % of their simulations instead of -8.0 and -9.8 % (the tokens recomputed per request 66 and
    144 against 102 and 220).  Not derived here: the share the victims give back under the growth-first order,
    their size (a cohort's member's), and the cycle's shape.
    """
    p = np.maximum(np.asarray(prompts, dtype=float), 1.0)
    g = max(float(mdec), 1e-9)
    a = g / max(float(N), 1.0)
    B = max(1, int(block_size))
    pb = np.ceil(p / B)  # blocks a prompt needs to be admitted
    if outputs is None:
        gb = g / B if B > 1 else g
    else:  # the blocks a request adds while decoding, averaged: none when its output stays in its last prompt block
        o = np.asarray(outputs, dtype=float)
        gb = float(np.mean(np.ceil(np.maximum(p + o, 1.0) / B) - pb))
    if gb <= 0:
        return 0.0, a, 0.0
    vb = np.ceil((p + a) / B)  # blocks a victim frees
    q = float(gb * np.mean(-np.expm1(-pb / gb)) / pb.mean())
    again = float(np.mean(np.exp(-vb / gb)))
    r = q / max(1e-9, 1.0 - again)
    # never more victims than the growth they relieve: gb blocks between finishes, the last victim overshooting
    r = min(r, q + gb / float(vb.mean()))
    if B > 1:
        # what a victim recomputes: the blocks counted above (vb, those of the newest resident, the same count
        # r rests on) with the last one at its mean fill, (B - 1) / 2 tokens short of full, rather than the
        # 1-2 generated tokens of a just-admitted one.  A stand-in, not a derivation of the victims' age: in
        # simulation they carry 45-216 generated tokens (validation/RESULTS.md, h-short16); it moved the 1 / 200
        # edge +2.0 -> -7.3 % and Vidur 70B TP2 +1.7 -> +4.1 %, and improved the short-prompt engines
        a = max(a, float(np.mean(vb * B - (B - 1) / 2.0 - p)))
    return r, a, q


def _block_sum(n, B):
    """``sum_{L=1}^{n} ceil(L / B)`` for each ``n``: the block-iterations a context growing to ``n`` tokens holds."""
    n = np.asarray(n, dtype=float)
    k, rem = np.floor(n / B), np.mod(n, B)
    return B * k * (k + 1) / 2.0 + rem * (k + 1)


def _admitted_iteration_s(model, prompts, N, kv_bar, lam_it, room, iterations: int = 4000, seed: int = 0,
                          redo: float = 0.0, redo_tokens: float = 0.0, redo_first: float = 1.0) -> float:
    """Mean iteration time when ``max_num_seqs`` or the KV cache binds: a request is admitted when one of the
    ``N`` residents finishes, and the finishes among many residents in one iteration are Poisson (mean
    ``lam_it``), so the iteration holds a random number of prompts.  Their tokens queue FCFS and each iteration
    takes at most ``room`` of them (chunked prefill, the rest carried over); the iteration's chunks are folded
    as :meth:`IterationModel.time` folds them.  A fixed-seed recursion over ``iterations`` iterations (the
    prompt lengths drawn from the sample), so the answer is a deterministic function of its inputs.

    With recompute preemption (``redo`` preemptions per finish, each prefilling a prompt and ``redo_tokens``
    generated tokens again) the victims come back with a finish: a victim waits at the head of the queue with its
    whole context reserved and only a finish frees room, so each finish brings its new prompt and, with
    probability ``redo_first``, one victim and a geometric number more (mean ``redo`` in all), in the same
    iteration, ahead of the new prompt (they arrived earlier).  Before 2026-12-06 (h-short16) each victim was a
    Poisson arrival of its own, ``lam_it (1 + redo)`` prompts an iteration, which with many young victims put
    prompt work (and its fixed cost) in nearly every iteration: -10 to -18 % capacity where ``p << m_d``."""
    from collections import deque

    rng = np.random.default_rng(seed)
    if redo > 0:
        # the victims come back with the finish that frees their room (see _kv_victims): per finish (Poisson,
        # lam_it an iteration) none with probability 1 - q1, else 1 + a geometric number (continuation c), mean
        # q1 / (1 - c) = redo; in the iteration after the finish, the victims (older arrivals) ahead of the new prompt
        f = rng.poisson(lam_it, iterations)
        # the new prompts are the draws the recursion makes without preemptions (the same stream), the victims come
        # from a stream of their own: as redo -> 0 the answer tends to the one without preemptions, so the capacity
        # is continuous where the cache stops binding (h-kvjump; before, the victims' draws shifted the new
        # prompts' and moved the answer up to 2.7 % at redo -> 0 with lognormal prompts)
        new = rng.choice(np.asarray(prompts, dtype=float), size=int(f.sum()) + 1)
        rv = np.random.default_rng([seed, 1])
        q1 = min(max(redo_first, 1e-12), redo)
        cont = 1.0 - q1 / redo
        nv = np.where(rv.random(int(f.sum())) < q1, rv.geometric(1.0 - cont, int(f.sum())), 0)
        k = np.zeros(iterations, dtype=np.int64)
        np.add.at(k, np.repeat(np.arange(iterations), f), 1 + nv)
        draws = np.empty(int(k.sum()) + 1)
        fresh = np.zeros(draws.size, dtype=bool)
        fresh[np.cumsum(1 + nv) - 1] = True  # each finish's entries: its victims, then one new prompt
        fresh[-1] = True
        draws[fresh] = new
        draws[~fresh] = rv.choice(np.asarray(prompts, dtype=float), size=int((~fresh).sum())) + redo_tokens
    else:
        k = rng.poisson(lam_it, iterations)
        draws = rng.choice(np.asarray(prompts, dtype=float), size=int(k.sum()) + 1)
    C = np.zeros(iterations)
    work = np.zeros(iterations)
    chunks = np.zeros(iterations)
    queue, j = deque(), 0  # [remaining, done] per prompt, FCFS
    for i in range(iterations):
        for _ in range(k[i]):
            queue.append([draws[j], 0.0])
            j += 1
        left = room
        while queue and left > 0:
            q = queue[0]
            c = min(q[0], left)
            work[i] += c * (q[1] + c / 2.0)
            C[i] += c
            chunks[i] += 1
            q[0] -= c
            q[1] += c
            left -= c
            if q[0] <= 0:
                queue.popleft()
    kv_eff = np.where(C > 0, np.maximum(0.0, work / np.maximum(C, 1e-12) - C / 2.0), 0.0)
    t = np.asarray(model.time_shape(C, kv_eff, np.full(iterations, N), np.full(iterations, kv_bar),
                                    n_emit=N + chunks), dtype=float)
    return float(t[iterations // 10:].mean())  # the first tenth (an empty queue at the start) left out

def _ticks(sim, kv_capacity_tokens, tick_s: float = 1.0) -> dict:
    """A simulation's iterations as vLLM's periodic log: per tick ``(t - tick, t]`` the useful tokens
    served per second (split into prompt and generated tokens), and ``running``, ``waiting``, KV use (%) as left by the tick's last iteration."""
    it = sim.iterations
    end = it["t_s"] + it["batch_s"]
    t = np.arange(tick_s, float(end[-1]) + tick_s, tick_s)
    k = np.searchsorted(end, t, side="right")  # iterations ending at or before each tick
    cum = np.concatenate([[0.0], np.cumsum(it["useful_tokens"])])
    tok = np.diff(np.concatenate([[0.0], cum[k]])) / tick_s
    # the split vLLM's log makes: generated tokens are the decodes (the first tokens a prefill emits are counted
    # with the prompt tokens here, a few per iteration); the sum is the useful tokens either way
    dec = np.minimum(np.asarray(it["decode_tokens"], dtype=float), np.asarray(it["useful_tokens"], dtype=float))
    cdec = np.concatenate([[0.0], np.cumsum(dec)])
    gen = np.diff(np.concatenate([[0.0], cdec[k]])) / tick_s
    last = np.maximum(k - 1, 0)
    ts = {"t": t, "prompt_throughput": tok - gen, "gen_throughput": gen,
          "running": np.where(k > 0, it["resident"][last], 0.0), "waiting": np.where(k > 0, it["waiting"][last], 0.0)}
    if kv_capacity_tokens is not None and "kv_used" in it and it["kv_used"] is not None:
        ts["kv_cache_pct"] = np.where(k > 0, 100.0 * np.asarray(it["kv_used"], dtype=float)[last] / kv_capacity_tokens,
                                      0.0)
    return ts


#: ``simulate_capacity`` reads a capacity only from a saturated engine: the 95 % interval of the served tokens/s
#: below this share of the offered tokens/s (at the default 1.5 x overload a right fluid guess serves 2/3 of it).
#: A shallow queue serves less than a deep one: offered 1.2 x the capacity of a constant-time engine (0.83 served)
#: the estimate was 1.8 % low; Qwen3-30B-A3B DP4 lockstep at 1000 / 200 tokens offered 29,376 tokens/s served
#: 22,921 (0.78), 7.7 % below the 24,840 served at 1.5 x and 24,708 at 36,000 (2026-12-07), so 0.75, not 0.8
SATURATED_SHARE = 0.75
#: without a given arrival rate, how many times ``simulate_capacity`` doubles an offered rate that did not saturate
#: the engine (up to 8 x the first, 12 x the fluid capacity at the default overload) before it says so
MAX_RAISES = 3


def simulate_capacity(model, input_tokens, output_tokens, *, b_max: int, k_max: int | None,
                      kv_capacity_tokens: int | None, block_size: int = 16, prefix_caching: bool = False,
                      arrival_rate: float | None = None, overload: float = 1.5, n_requests: int | None = None,
                      replications: int = 5, seed: int = 2024,
                      fluid: CapacityPrediction | None = None, order: str = "random",
                      async_scheduling: bool = False) -> CapacityPrediction:
    """Served tokens/s of :func:`fluidq.simulate` on the deployment's vLLM engine under overload, no run read.

    The engine is :func:`~fluidq.validate.replay.vllm_engine` (the iteration model's batch time by
    composition, vLLM's block KV cache, FCFS admission, recompute preemption).  Each of
    ``replications`` seeded replications sends requests as a Poisson stream, either a benchmark's,
    ``arrival_rate`` (its ``--request-rate``) with the given requests each sent once in a seeded random
    order (``n_requests=None``: the benchmark's finite request set), or ``n_requests`` (default 2000)
    drawn with replacement from the length sample at ``arrival_rate``, or without one at ``overload``
    x the fluid capacity (:func:`predict_capacity`), the engine's stationary saturated throughput.  A capacity
    needs a saturated engine: the served tokens/s (its 95 % interval) clearly below the offered tokens/s
    (:data:`SATURATED_SHARE`).  Without ``arrival_rate``, an offered rate that does not saturate it (a fluid
    guess that is low for this engine) is doubled and the replications run again, at most :data:`MAX_RAISES`
    times; with a given ``arrival_rate``, or past the cap, the answer says it is not saturated (``reason``,
    ``inputs["saturated"]``): then it is the offered rate, a lower bound of the capacity.
    ``order="given"`` sends a benchmark's requests in the order given, as a benchmark client sends its
    request list (vLLM's ``vllm bench serve``; LLMServingSim's bench runner: dataset row ``N`` as request
    ``bench-N`` at the row's arrival offset; only the Poisson gaps are drawn); ``"random"`` (default) a seeded permutation.  The simulation is logged as vLLM logs a run (1 s ticks of served
    tokens, ``running``, ``waiting``, KV use; :func:`_ticks`) and read by the very estimator that reads
    a measured run, :func:`~fluidq.validate.runs.capacity_regimes`: every tick with requests waiting after
    the start-up ramp (the ramp and the final drain left out), the binding limit diagnosed on them.  Useful tokens
    only: recomputation after a preemption is work, not throughput.  What the fluid formula averages
    (recompute after preemption and admission under a whole-prompt reservation, by a renewal argument)
    or leaves out is counted here event by event: those, the real prefill/decode mix of each iteration, and (with
    :class:`~fluidq.validate.deployment.LockstepRanks` as ``model``) the slowest rank's stall.

    Returns
    -------
    CapacityPrediction
        ``method="simulate"``; ``tokens_per_s`` the mean over the replications that reached the
        binding limit, ``ci`` its 95 % Student-t interval, ``replications`` each one's tokens/s,
        ``binding`` the limit the simulated log shows, ``residents`` the mean of ``running`` over the
        steady ticks; ``inputs`` state the arrivals, windows and replications.
    """
    from .._validate import integer, real
    from ..sim.core import simulate
    from .replay import vllm_engine
    from .runs import capacity_regimes

    overload = real("overload", overload, positive=True)
    if arrival_rate is None and overload <= 1.0:
        raise ParameterError("overload", overload, "> 1 (arrivals faster than the capacity keep a queue)")
    if arrival_rate is not None:
        arrival_rate = real("arrival_rate", arrival_rate, positive=True)
    n_requests = integer("n_requests", n_requests, minimum=20, maximum=10 ** 7, allow_none=True)
    if kv_capacity_tokens is None:  # the paged memory model logs residents and waiting requests
        raise ParameterError("kv_capacity_tokens", None, "vLLM's KV cache in tokens (every vLLM engine has one)")
    replications = integer("replications", replications, minimum=2, maximum=1000)
    if order not in ("random", "given"):
        raise ParameterError("order", order, '"random" (a seeded permutation of the requests) or "given" (the '
                             "benchmark's own order)")
    if order == "given" and not (n_requests is None and arrival_rate is not None):
        raise ParameterError("order", order, '"random" without a benchmark (arrival_rate and n_requests=None)',
                             "only a benchmark's own requests have an order to keep")
    p = np.asarray(input_tokens, dtype=float)
    o = np.asarray(output_tokens, dtype=float)
    if fluid is None:
        fluid = predict_capacity(model, p, o, b_max=b_max, k_max=k_max, kv_capacity_tokens=kv_capacity_tokens,
                                 block_size=block_size)
    pk, ok = p.astype(np.int64), o.astype(np.int64)
    once = n_requests is None and arrival_rate is not None  # a benchmark: its own requests, each once
    if once:
        if pk.size < 20:
            raise ParameterError("n_requests", None, "a number of requests to draw from the lengths",
                                 f"the {pk.size} given lengths are too few to be a benchmark's requests")
        n_requests = int(pk.size)
    elif n_requests is None:
        n_requests = 2000
    lam = arrival_rate if arrival_rate is not None else overload * fluid.requests_per_s
    eng = vllm_engine(model, b_max=b_max, k_max=k_max, kv_capacity_tokens=kv_capacity_tokens,
                      block_size=block_size, prefix_caching=prefix_caching, async_scheduling=bool(async_scheduling))
    from scipy import stats

    tok_per_req = float(p.mean() + o.mean())

    def run(lam):
        est, res, windows, bind, preempt = [], [], [], [], 0
        for g in np.random.SeedSequence(int(seed)).spawn(replications):
            rng = np.random.default_rng(g)
            arr = np.cumsum(rng.exponential(1.0 / lam, n_requests))
            arr -= arr[0]
            # the arrivals are drawn first, so "given" and "random" see the same Poisson gaps
            idx = (np.arange(pk.size) if order == "given" else rng.permutation(pk.size)) if once \
                else rng.integers(0, pk.size, n_requests)
            sim = simulate(eng, {"arrival_s": arr, "prompt_tokens": pk[idx], "output_tokens": ok[idx]},
                           "vllm-chunked", n_requests=n_requests, record_iterations=True)
            preempt += int(sim.preemptions)
            ts = _ticks(sim, kv_capacity_tokens)
            # min_ticks=1: one replication's window may be short; the interval comes from the replications.
            # Every tick with a queue (min_stretch_s = unseen_limit_s = 0, the rule before the measured side's
            # saturated stretches of 2026-12-07): whether a replication saturated is this function's own check
            # (served < SATURATED_SHARE x offered), and every simulated capacity stays as it was (the shipped
            # cases' simulated benchmarks under the stretch rule: RTX PRO 6000 Llama 8101 -> 8136, Qwen3 7733 -> 7234)
            reg = capacity_regimes(ts, max_num_seqs=k_max if k_max is not None else 10 ** 12, min_ticks=1,
                                   min_stretch_s=0, unseen_limit_s=0)
            st = reg["steady"]
            if not np.isfinite(st["tokens_per_s"]):  # no steady state long enough in this replication
                continue
            est.append(st["tokens_per_s"])
            hold = (ts["t"] >= st["window_s"][0]) & (ts["t"] <= st["window_s"][1]) & (ts["waiting"] > 0)
            res.append(float(ts["running"][hold].mean()))
            windows.append(st["window_s"])
            bind.append(reg["binding"])
        if len(est) < 2:
            return None
        est_a = np.asarray(est)
        mean = float(est_a.mean())
        half = float(stats.t.ppf(0.975, est_a.size - 1) * est_a.std(ddof=1) / np.sqrt(est_a.size))
        # saturated: the whole interval clearly below what is offered (a queue that only holds under the binding
        # limit now and then serves about the offered rate, not the engine's capacity)
        return {"est": est, "res": res, "windows": windows, "bind": bind, "preempt": preempt, "mean": mean,
                "half": half, "saturated": mean + half < SATURATED_SHARE * lam * tok_per_req}

    offered = [lam]
    out = run(lam)
    # without a given rate, the first guess (overload x the fluid capacity) may be below the engine's capacity
    # (a fluid formula that is low for this engine): offer twice as much, at most MAX_RAISES times
    while arrival_rate is None and (out is None or not out["saturated"]) and len(offered) <= MAX_RAISES:
        lam *= 2.0
        offered.append(lam)
        out = run(lam)
    if out is None:
        raise RuntimeError(f"simulate_capacity: fewer than 2 of {replications} replications reached a binding limit "
                           f"at {lam:.3g} req/s; raise the arrival rate (or overload) or n_requests")
    est, res, windows, bind, preempt, mean, half = (out[k] for k in ("est", "res", "windows", "bind", "preempt",
                                                                      "mean", "half"))
    binding = max(bind, key=bind.count)  # the most frequent, a tie to the first replication's (no set order)
    raised = (f", raised {len(offered) - 1} time{'s' if len(offered) > 2 else ''} from {offered[0]:.3g} req/s, where "
              "the served rate was not clearly below the offered one" if len(offered) > 1 else "")
    how = (f"the {n_requests} given requests in {'their given' if order == 'given' else 'a random'} order, "
           f"Poisson at {lam:.3g} req/s (given)" if once
           else f"{n_requests} requests drawn from the length sample, Poisson at {lam:.3g} req/s (given)"
           if arrival_rate is not None
           else f"{n_requests} requests drawn from the length sample, Poisson at {lam:.3g} req/s ({overload:g} x the "
                f"fluid capacity{raised})")
    offered_tok = lam * tok_per_req
    unsat = "" if out["saturated"] else (
        f"; NOT SATURATED: the engine served {mean:.0f} tokens/s (95 % CI up to {mean + half:.0f}) of the "
        f"{offered_tok:.0f} offered, not below {SATURATED_SHARE:g} x offered, so this is the offered rate, a lower "
        "bound of the capacity, not the capacity" + (" (give a higher arrival rate)" if arrival_rate is not None else
                                                     f" (offered up to {2 ** MAX_RAISES} x the first guess)"))
    reason = (f"fluidq.simulate of vLLM's engine, {how}{unsat}; "
              f"served tokens/s over the 1 s ticks with requests waiting after the ramp (binding: {binding} in "
              f"{bind.count(binding)} of {len(bind)}), {len(est)} of {replications} seeded replications, 95 % CI "
              f"{mean - half:.0f}-{mean + half:.0f} tokens/s, {preempt} preemptions in all; the fluid formula "
              f"gives {fluid.tokens_per_s:.0f} tokens/s: {fluid.reason}")
    return CapacityPrediction(tokens_per_s=mean, requests_per_s=mean / tok_per_req, residents=float(np.mean(res)),
                              binding=binding, limits=fluid.limits, decode_iteration_s=fluid.decode_iteration_s,
                              mean_context_tokens=fluid.mean_context_tokens, reason=reason,
                              inputs={**fluid.inputs, "arrival_rate": lam, "arrival_rate_given": arrival_rate is not None,
                                      "overload": None if arrival_rate is not None else overload,
                                      "n_requests": n_requests, "requests_each_once": once,
                                      "replications": replications, "seed": int(seed),
                                      "windows_s": windows, "preemptions": preempt,
                                      "fluid_tokens_per_s": fluid.tokens_per_s, "fluid_binding": fluid.binding,
                                      "saturated": bool(out["saturated"]), "offered_rates": tuple(offered)},
                              method="simulate", ci=(mean - half, mean + half), replications=tuple(est))
