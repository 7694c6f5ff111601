"""Paper Fig. 8 (reference §1): the batch sequences of the four schedulers, token by token."""
import pytest

from fluidq.policies import QueueView, RequestState, batch_violations, resolve_policy

EXPECTED = {
    "vllm": (4, "[Ad Bd Cd] [Dp Ep] [Ad Bd Cd Dd] [Bd Cd Ed] [Bd]"),
    "orca": (5, "[Ad Bd Cd] [Ad Bd Cd Dp Ep] [Bd Cd Dd Ed] [Bd]"),
    "fastertransformer": (4, "[Ad Bd Cd] [Ad Bd Cd] [Bd Cd] [Bd] [Dp Ep] [Dd Ed]"),
    "sarathi": (4, "[Ad Bd Cd] [Ad Bd Cd Dp] [Bd Cd Dd Ep] [Bd Ed]"),
}


def canonical(batch, names):
    """Order tokens as the paper writes them: by request letter, decode before prefill of others."""
    toks = [(names[r], "d") for r in batch.decode] + [(names[r], "p") for r, n in batch.prefill for _ in range(n)]
    return "[" + " ".join(f"{a}{k}" for a, k in sorted(toks)) + "]"


def run_fig8(policy_name):
    b_max, want = EXPECTED[policy_name]
    pol = resolve_policy(policy_name)
    # A, B, C decoding with 2, 4, 3 tokens left; D, E (1 prefill + 1 decode) arrive during batch 1
    res = [RequestState(rid=i, arrival_s=float(i), prompt_tokens=1, prefilled=1, output_tokens=n)
           for i, n in enumerate((2, 4, 3))]
    names = {0: "A", 1: "B", 2: "C", 3: "D", 4: "E"}
    out = []
    for step in range(20):
        live = [r for r in res if r.demand > 0]
        if not live:
            break
        view = QueueView(requests=tuple(live), now_s=float(step), b_max=b_max)
        batch = pol.select(view)
        assert batch_violations(batch, view) == []
        out.append(canonical(batch, names))
        for rid, n in batch.prefill:
            res[rid].prefilled += n
        for rid in batch.decode:
            res[rid].decoded += 1
        if step == 0:
            res += [RequestState(rid=i, arrival_s=10.0 + i, prompt_tokens=1, output_tokens=1) for i in (3, 4)]
    return " ".join(out), want


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fig8_batch_sequence(name):
    got, want = run_fig8(name)
    assert got == want
