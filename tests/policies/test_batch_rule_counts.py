"""The batch rule as functions of queue counts (``fluidq.policies.batch_rule``) on random queues (issue 14).

``Scheduler.select`` and the count chains call the same functions (``budgets``, ``take_prompts`` or its
closed form ``fixed_prefill_counts``, ``decode_tokens``), so a test that compared the two alone would pass
whatever the rule said.  Both are therefore held to :func:`_reference`, the per-request loop ``select`` ran
before the rule moved (a transcription of Li, Dai, Peng, arXiv:2504.07347, §4 Table 1, and §6 for
``k_max``), written here and nowhere else:

* the count rule on ``(n_p, n_d, j)`` with fixed prompts of ``vp`` tokens, with and without ``k_max``,
  for the five named schedulers and for every ``(priority, mixed, chunked, chunk_long_prompts)``
  combination (head-of-line whole prompts, chunked prefill, long prompts chunked, prompts never scheduled);
* ``select`` on random residents (random prompt lengths and progress, random order of arrival, ``k_max``
  from the engine or the scheduler): the same batch, request by request, as the reference.

The chain builders call the count form (``dtmc/build.py``, ``symbolic_chain.py``, ``llm_network.py``,
``finite.py``, ``llm_rybko.py``, the renewal cycles of ``threshold.py`` and ``vllm_queue.py`` through
``whole_prompts`` and ``fits``), so this holds their batches too.
``test_a_one_line_mutation_of_the_rule_fails`` checks the property can fail.
"""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fluidq.policies import POLICY_NAMES, Batch, QueueView, RequestState, Scheduler, resolve_policy
from fluidq.policies import batch_rule
from fluidq.policies.batch_rule import budgets, decode_tokens, fixed_prefill_counts


def _reference(pol, view):
    """The batch the scheduler forms, one request at a time (``Scheduler.select`` before issue 14)."""
    b_max, k_max = pol.budgets(view)
    ordered = pol.order.order(view.requests, view.now_s)
    pre = [r for r in ordered if r.prefilled < r.prompt_tokens]
    dec = [r for r in ordered if r.prefilled >= r.prompt_tokens and r.decoded < r.output_tokens]
    budget, slots = b_max, k_max
    prefill, decode, blocked = [], [], []

    def take_decode():
        nonlocal budget, slots
        for r in dec:
            if budget < 1 or slots < 1:
                break
            decode.append(r.rid)
            budget -= 1
            slots -= 1

    def take_prefill():
        nonlocal budget, slots
        for r in pre:
            if budget < 1 or slots < 1:
                break
            need = r.prompt_tokens - r.prefilled
            if need <= budget:
                prefill.append((r.rid, need))
                budget -= need
                slots -= 1
            elif pol.chunked or (pol.chunk_long_prompts and need > b_max):
                prefill.append((r.rid, budget))
                budget = 0
                slots -= 1
            elif need > b_max:
                blocked.append(r.rid)
            else:
                break

    if pol.mixed:
        first, second = (take_prefill, take_decode) if pol.priority == "prefill" else (take_decode, take_prefill)
        first()
        second()
    elif pol.priority == "prefill":
        take_prefill()
        if not prefill:
            take_decode()
    elif dec:
        take_decode()
    else:
        take_prefill()
    return Batch(prefill=tuple(prefill), decode=tuple(decode), blocked=tuple(blocked))


def _view(n_p, n_d, j, vp, b, k=None):
    rs = [RequestState(rid=i, arrival_s=float(i), prompt_tokens=vp, prefilled=vp, output_tokens=10 ** 6)
          for i in range(n_d)]
    rs += [RequestState(rid=n_d + i, arrival_s=float(n_d + i), prompt_tokens=vp, prefilled=j if i == 0 else 0,
                        output_tokens=10 ** 6) for i in range(n_p)]
    return QueueView(requests=tuple(rs), now_s=0.0, b_max=b, k_max=k)


def _after(view, batch):
    """(prompts finishing prefill, head prompt's progress after the batch: 0 when no prompt is left)."""
    chunk = dict(batch.prefill)
    done, head = 0, None
    for r in view.requests:
        if r.prefilled >= r.prompt_tokens:
            continue
        got = r.prefilled + chunk.get(r.rid, 0)
        if got >= r.prompt_tokens:
            done += 1
        elif head is None:
            head = got
    return done, (0 if head is None else head)


def _counts(rule, pol, b, vp, n_p, n_d, j, k, vector):
    """``(D, T, K, jn, U)`` of the count rule; ``vector``: through one-state numpy arrays (the chains' form)."""
    J = vp if ((pol.chunked or pol.chunk_long_prompts) and vp > 1) else 1
    if vector:
        n_p, n_d, j = np.array([n_p]), np.array([n_d]), np.array([j])
    D0, B, S = rule.budgets(pol, b, n_p, n_d, k)
    K, T, jn, U = rule.fixed_prefill_counts(pol, vp, J, n_p, j, B, S, b_max=b)
    D = rule.decode_tokens(D0, n_d, T, b, k, U, pol.mixed)
    return tuple(int(np.ravel(x)[0]) for x in (D, T, K, jn, U))


_RULES = [(p, m, c, cl) for p in ("prefill", "decode") for m in (False, True) for c in (False, True)
          for cl in (False, True) if not (c and cl)]


@st.composite
def count_queues(draw, with_k):
    if draw(st.booleans()):
        pol = resolve_policy(draw(st.sampled_from(list(POLICY_NAMES))))
    else:
        p, m, c, cl = draw(st.sampled_from(_RULES))
        pol = Scheduler(name="custom", priority=p, mixed=m, chunked=c, chunk_long_prompts=cl)
    b = draw(st.integers(1, 64))
    vp = draw(st.integers(1, 80))  # above b too: chunked, chunked as long prompts, or never scheduled
    n_p = draw(st.integers(0, 12))
    n_d = draw(st.integers(0, 70))
    tracks_j = (pol.chunked or (pol.chunk_long_prompts and vp > b)) and vp > 1 and n_p > 0
    j = draw(st.integers(0, vp - 1)) if tracks_j else 0
    k = draw(st.one_of(st.none(), st.integers(1, 20))) if with_k else None
    return pol, b, vp, n_p, n_d, j, k


def _check_counts(q, rule=batch_rule, vector=True):
    pol, b, vp, n_p, n_d, j, k = q
    D, T, K, jn, U = _counts(rule, pol, b, vp, n_p, n_d, j, k, vector)
    view = _view(n_p, n_d, j, vp, b, k)
    ref = _reference(pol, view)
    done, head = _after(view, ref)
    case = (pol.describe(), b, vp, n_p, n_d, j, k)
    assert ref.decode_tokens == D, case
    assert ref.prefill_tokens == T, case
    assert done == K, case
    assert head == jn, case
    assert len(ref.prefill) == U, case


@settings(max_examples=400, deadline=None)
@given(count_queues(with_k=False))
def test_the_count_rule_forms_the_reference_batch(q):
    _check_counts(q)


@settings(max_examples=400, deadline=None)
@given(count_queues(with_k=True))
def test_the_count_rule_with_k_max_forms_the_reference_batch(q):
    _check_counts(q)


@settings(max_examples=200, deadline=None)
@given(count_queues(with_k=True))
def test_the_count_rule_on_python_integers_is_the_vectorised_rule(q):
    pol, b, vp, n_p, n_d, j, k = q
    assert _counts(batch_rule, pol, b, vp, n_p, n_d, j, k, False) == _counts(batch_rule, pol, b, vp, n_p, n_d,
                                                                             j, k, True)


@st.composite
def resident_queues(draw):
    if draw(st.booleans()):
        pol = resolve_policy(draw(st.sampled_from(list(POLICY_NAMES))))
    else:
        p, m, c, cl = draw(st.sampled_from(_RULES))
        pol = Scheduler(name="custom", priority=p, mixed=m, chunked=c, chunk_long_prompts=cl)
    if draw(st.booleans()):
        pol = pol.with_(k_max=draw(st.integers(1, 12)))
    b = draw(st.integers(1, 48))
    n = draw(st.integers(0, 25))
    rs = []
    for i in range(n):
        p = draw(st.integers(1, 70))
        started = draw(st.integers(0, 2))
        prefilled = p if started == 2 else (draw(st.integers(0, p - 1)) if started == 1 else 0)
        out = draw(st.integers(1, 6))
        decoded = draw(st.integers(0, out - 1)) if prefilled >= p else 0
        rs.append(RequestState(rid=i, arrival_s=draw(st.floats(0.0, 100.0)), prompt_tokens=p,
                               prefilled=prefilled, output_tokens=out, decoded=decoded))
    rs.sort(key=lambda r: r.arrival_s)
    k = draw(st.one_of(st.none(), st.integers(1, 16)))
    return pol, QueueView(requests=tuple(rs), now_s=100.0, b_max=b, k_max=k)


@settings(max_examples=500, deadline=None)
@given(resident_queues())
def test_select_forms_the_reference_batch_on_random_residents(q):
    pol, view = q
    assert pol.select(view) == _reference(pol, view), (pol.describe(), pol.k_max, view)


def test_the_property_covers_k_max_head_of_line_and_long_prompts():
    """Cases the random search must be able to reach, pinned: each differs from the rule without them."""
    vllm, ft = resolve_policy("vllm"), resolve_policy("fastertransformer")
    # head-of-line: 3 prompts of 5 with budget 12 -> 2 whole prompts, the third waits
    _check_counts((vllm, 12, 5, 3, 4, 0, None))
    assert _counts(batch_rule, vllm, 12, 5, 3, 4, 0, None, True)[:3] == (0, 10, 2)
    # k_max: Sarathi with 6 decoders and k_max 4 decodes 4 and prefills nothing
    sar = resolve_policy("sarathi")
    _check_counts((sar, 32, 3, 5, 6, 0, 4))
    assert _counts(batch_rule, sar, 32, 3, 5, 6, 0, 4, True)[:2] == (4, 0)
    # Orca: prefill first takes 2 slots of k_max 3, decode gets the last one
    orca = resolve_policy("orca")
    _check_counts((orca, 32, 4, 2, 9, 0, 3))
    assert _counts(batch_rule, orca, 32, 4, 2, 9, 0, 3, True)[:2] == (1, 8)
    # long prompts chunked: vLLM with chunk_long_prompts and prompts of 20 > b = 8
    long_vllm = vllm.with_(chunk_long_prompts=True)
    _check_counts((long_vllm, 8, 20, 2, 3, 16, None))
    assert _counts(batch_rule, long_vllm, 8, 20, 2, 3, 16, None, True)[:4] == (0, 8, 1, 4)
    # never scheduled: vLLM decodes while the only prompts are longer than b (they are reported)
    view = _view(2, 3, 0, 20, 8)
    assert vllm.select(view).blocked == (3, 4) and vllm.select(view).decode_tokens == 3
    assert _counts(batch_rule, vllm, 8, 20, 2, 3, 0, None, True)[:2] == (3, 0)
    _check_counts((ft, 8, 20, 2, 0, 0, None))


class _Mutant:
    """``batch_rule`` with one line changed; the rest is the module's."""

    def __init__(self, **changed):
        self.__dict__.update(changed)

    def __getattr__(self, name):
        return getattr(batch_rule, name)


def _orca_budget_minus_one(pol, b, NP, ND, k=None):
    D0, B, S = budgets(pol, b, NP, ND, k)
    if pol.priority == "prefill" and pol.mixed:
        B = B - 1  # the mutation: Orca's prefill budget one token short
    return D0, B, S


def _k_max_ignored_by_decode(D0, ND, T, b, k=None, U=0, mixed=True):
    return decode_tokens(D0, ND, T, b, None, U, mixed)  # the mutation: decode forgets k_max


def _head_of_line_skips(pol, vp, head_positions, NP, JJ, B, S=None, b_max=None):
    K, T, jn, U = fixed_prefill_counts(pol, vp, head_positions, NP, JJ, B, S, b_max)
    if not pol.chunked and not pol.chunk_long_prompts:
        K = np.minimum(NP, np.maximum(B // vp, 1))  # the mutation: a whole prompt that does not fit is taken
        T, U = K * vp, K
    return K, T, jn, U


@pytest.mark.parametrize("mutant, with_k", [
    (_Mutant(budgets=_orca_budget_minus_one), False),
    (_Mutant(decode_tokens=_k_max_ignored_by_decode), True),
    (_Mutant(fixed_prefill_counts=_head_of_line_skips), False),
], ids=["orca-budget", "k_max-decode", "head-of-line"])
def test_a_one_line_mutation_of_the_rule_fails(mutant, with_k):
    """The property search finds a counterexample to each mutated rule (a test that cannot fail proves
    nothing)."""
    failures = []

    @settings(max_examples=400, deadline=None, database=None)
    @given(count_queues(with_k=with_k))
    def prop(q):
        _check_counts(q, rule=mutant)

    try:
        prop()
    except AssertionError as e:
        failures.append(e)
    except ExceptionGroup as g:  # several distinct counterexamples come as a group: all must be assertions
        _, rest = g.split(AssertionError)
        assert rest is None, f"the mutated rule raised, not failed: {rest!r}"
        failures.append(g)
    assert failures, "the mutated rule passed the property test"


def test_select_k_max_is_the_smaller_of_engine_and_scheduler():
    pol = resolve_policy("sarathi").with_(k_max=3)
    view = _view(0, 9, 0, 4, 32, k=5)
    assert pol.select(view).decode_tokens == 3
    assert resolve_policy("sarathi").select(view).decode_tokens == 5
    assert math.isinf(resolve_policy("sarathi").budgets(_view(0, 1, 0, 4, 32))[1])


@pytest.mark.parametrize("k", [None, 0, 1, 3, 7])
@pytest.mark.parametrize("priority", ["prefill", "decode"])
@pytest.mark.parametrize("mixed", [True, False])
def test_the_integer_core_the_kernels_inline_is_the_array_rule(priority, mixed, k):
    """``budget_split`` / ``decode_after_prefill`` (compiled into fluidq/kernel) equal ``budgets`` /
    ``decode_tokens`` on arrays, over a grid of counts, prefill tokens and slots used."""
    pol = Scheduler(name="t", priority=priority, mixed=mixed, chunked=True)
    b = 6
    NP, ND = (a.ravel() for a in np.meshgrid(np.arange(4), np.arange(9)))
    D0, B, S = budgets(pol, b, NP, ND, k)
    kk = batch_rule.NO_CAP if k is None else k
    for i in range(len(NP)):
        d0, bb, ss = batch_rule.budget_split(priority == "prefill", mixed, b, int(NP[i]), int(ND[i]), kk)
        assert (d0 < 0) == (D0 is None)
        assert d0 < 0 or d0 == D0[i]
        assert bb == B[i]
        assert S is None or ss == S[i]  # no k_max: S is not read (the slots never bind)
        for T in range(bb + 1):
            for U in range(min(T, 3) + 1):
                want = decode_tokens(None, ND[i:i + 1], np.array([T]), b, k, np.array([U]), mixed)[0]
                assert batch_rule.decode_after_prefill(mixed, int(ND[i]), b, kk, T, U) == want


def _take_one_reference(need, budget, b_max, chunked, chunk_long):
    """The per-prompt step as take_prompts wrote it before take_one (kept here as the reference)."""
    if need <= budget:
        return need
    if chunked or (chunk_long and need > b_max):
        return budget
    if not (need <= b_max or chunked or chunk_long):
        return batch_rule.TAKE_SKIP
    return batch_rule.TAKE_STOP


def test_take_one_is_the_per_prompt_step_compiled_and_not():
    """``take_one`` (the step the compiled prefill walks inline) equals the pre-move rule on every small
    case, plain and compiled by numba; and ``take_prompts`` is a walk of it."""
    from fluidq.kernel._jit import jit

    compiled = jit(batch_rule.take_one)
    for chunked in (False, True):
        for chunk_long in (False, True):
            for b_max in (1, 4, 7):
                for budget in range(1, b_max + 1):
                    for need in range(1, 12):
                        want = _take_one_reference(need, budget, b_max, chunked, chunk_long)
                        assert batch_rule.take_one(need, budget, b_max, chunked, chunk_long) == want
                        assert compiled(need, budget, b_max, chunked, chunk_long) == want
    pol = Scheduler(name="t", priority="decode", mixed=True, chunked=False)
    assert batch_rule.take_prompts(pol, [3, 9, 2], 6, None, 10) == ([(0, 3)], [])  # head-of-line at 9
    assert batch_rule.take_prompts(pol, [3, 9, 2], 6, None, 7) == ([(0, 3), (2, 2)], [1])  # 9 > b_max: skipped
