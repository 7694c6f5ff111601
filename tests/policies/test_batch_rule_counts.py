"""The batch rule as a function of queue counts (``fluidq.dtmc.rules``) agrees with ``Scheduler.select``
on random queues (issue 14).

The count chains call these functions -- ``dtmc/build.py`` (``build_dtmc``), ``dtmc/symbolic_chain.py``
(``symbolic_dtmc``) and ``dtmc/llm_network.py`` (the JSQ chain of two engines) -- so this property holds
the batches of all three to the policy protocol for fixed prompts: from ``(n_p, n_d, j)`` the rule gives
the decode tokens, the prefill tokens, the prompts that finish their prefill and the head prompt's new
progress; ``select`` on concrete residents with those counts (decoders oldest, FCFS) must form the same
batch.  The other builders (``dtmc/finite.py``, ``ordered.py``, ``threshold.py``, the kernel's FCFS runs,
the network simulator's skipping path) write the rule themselves: ``docs/developer/architecture.md``
("Issue 14 status") says which tests hold each.
"""
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from fluidq.dtmc.rules import decode_tokens, fixed_prefill, prefill_budget
from fluidq.policies import POLICY_NAMES, QueueView, RequestState, resolve_policy


def _view(n_p, n_d, j, vp, b):
    rs = [RequestState(rid=i, arrival_s=float(i), prompt_tokens=vp, prefilled=vp, output_tokens=10 ** 6)
          for i in range(n_d)]
    rs += [RequestState(rid=n_d + i, arrival_s=float(n_d + i), prompt_tokens=vp, prefilled=j if i == 0 else 0,
                        output_tokens=10 ** 6) for i in range(n_p)]
    return QueueView(requests=tuple(rs), now_s=0.0, b_max=b)


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


@st.composite
def queues(draw):
    name = draw(st.sampled_from(list(POLICY_NAMES)))
    pol = resolve_policy(name)
    b = draw(st.integers(1, 64))
    vp = draw(st.integers(1, 80 if pol.chunked else b))  # a non-chunking scheduler's prompts fit (check_fixed_prompt)
    n_p = draw(st.integers(0, 12))
    n_d = draw(st.integers(0, 70))
    j = draw(st.integers(0, vp - 1)) if (pol.chunked and vp > 1 and n_p > 0) else 0
    return pol, b, vp, n_p, n_d, j


@settings(max_examples=400, deadline=None)
@given(queues())
def test_the_count_rule_forms_the_batch_select_forms(q):
    pol, b, vp, n_p, n_d, j = q
    J = vp if (pol.chunked and vp > 1) else 1
    NP, ND, JJ = np.array([n_p]), np.array([n_d]), np.array([j])
    D0, B = prefill_budget(pol, b, NP, ND)
    K, T, jn = fixed_prefill(pol, vp, J, NP, JJ, B)
    D = decode_tokens(D0, ND, T, b)
    view = _view(n_p, n_d, j, vp, b)
    batch = pol.select(view)
    done, head = _after(view, batch)
    case = (pol.name, b, vp, n_p, n_d, j)
    assert batch.decode_tokens == int(D[0]), case
    assert batch.prefill_tokens == int(T[0]), case
    assert done == int(K[0]), case
    assert head == int(jn[0]), case
    assert not batch.blocked, case
