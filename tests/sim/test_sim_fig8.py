"""Paper Fig. 8 (reference §1) through the simulator: batch sequences, both kernels."""
import numpy as np
import pytest

from fluidq import Affine, Engine
from fluidq.policies import RequestState
from fluidq.sim import simulate

EXPECTED = {
    "vllm": (4, "[Ad Bd Cd] [Dp Ep] [Ad Bd Cd Dd] [Bd Cd Ed] [Bd]"),
    "orca": (5, "[Ad Bd Cd] [Ad Bd Cd Dp Ep] [Bd Cd Dd Ed] [Bd]"),
    "fastertransformer": (4, "[Ad Bd Cd] [Ad Bd Cd] [Bd Cd] [Bd] [Dp Ep] [Dd Ed]"),
    "sarathi": (4, "[Ad Bd Cd] [Ad Bd Cd Dp] [Bd Cd Dd Ep] [Bd Ed]"),
}
NAMES = "ABCDE"


def canonical(batch):
    toks = [(NAMES[r], "d") for r in batch.decode] + [(NAMES[r], "p") for r, n in batch.prefill for _ in range(n)]
    return "[" + " ".join(f"{a}{k}" for a, k in sorted(toks)) + "]"


def counts(seq):
    """(prefill tokens, decode tokens) per batch of a paper-notation sequence."""
    out = []
    for b in seq.split("] ["):
        toks = b.strip("[]").split()
        out.append((sum(t.endswith("p") for t in toks), sum(t.endswith("d") for t in toks)))
    return out


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fig8_from_initial_state(name):
    b_max, want = EXPECTED[name]
    eng = Engine(batch_time=Affine(c=1.0, a=0.0), b_max=b_max)  # every batch takes 1 s
    init = [RequestState(rid=i, arrival_s=0.0, prompt_tokens=1, prefilled=1, output_tokens=n)
            for i, n in enumerate((2, 4, 3))]
    de = {"arrival_s": [0.5, 0.5], "prompt_tokens": [1, 1], "output_tokens": [1, 1]}  # during batch 1
    r = simulate(eng, de, name, n_requests=2, initial=init, record_batches=True, check_batches=True)
    assert " ".join(canonical(b) for b in r.batches) == want
    assert r.n_finished == 5


@pytest.mark.parametrize("name", sorted(EXPECTED))
@pytest.mark.parametrize("method", ["fast", "generic"])
def test_fig8_from_arrivals(name, method):
    """A, B, C arrive at 0 (one prompt token each); after their prefill batch the figure's sequence follows."""
    b_max, want = EXPECTED[name]
    eng = Engine(batch_time=Affine(c=1.0, a=0.0), b_max=b_max)
    w = {"arrival_s": [0.0, 0.0, 0.0, 1.5, 1.5], "prompt_tokens": [1] * 5, "output_tokens": [2, 4, 3, 1, 1]}
    r = simulate(eng, w, name, n_requests=5, record_iterations=True, method=method)
    it = r.iterations
    got = list(zip(it["prefill_tokens"].tolist(), it["decode_tokens"].tolist()))
    assert got == [(3, 0)] + counts(want)
    # finish times: the batch (1-based, after the prefill batch) in which each letter's last token appears
    batches = want.split("] [")
    last = {c: max(i for i, b in enumerate(batches) if f"{c}d" in b) + 2 for c in NAMES}
    assert r.requests["finish_s"].tolist() == [float(last[c]) for c in NAMES]
    assert np.all(r.requests["first_token_s"] <= r.requests["finish_s"])
