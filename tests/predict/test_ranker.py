"""The default PARS predictor: tau_b, held-out quality, save/load, bad input, no torch."""
import subprocess
import sys

import numpy as np
import pytest

from fluidq.errors import DataError, ParameterError, ParameterTypeError
from fluidq.predict import (HashedNgrams, LengthRanker, evaluate_ranker, kendall_tau, load_lengths,
                            scores_with_tau)


def test_tau_of_a_perfect_scorer_is_one():
    L = np.random.default_rng(0).integers(1, 400, 200).astype(float)    # with ties
    assert kendall_tau(L, L) == pytest.approx(1.0)
    assert kendall_tau(np.log(L), L) == pytest.approx(1.0)
    assert kendall_tau(-L, L) == pytest.approx(-1.0)


def _synthetic(n, rng):
    """Prompts whose response length depends on words in them (a learnable signal)."""
    topics = {"essay": 400, "story": 300, "explain": 150, "list": 80, "name": 10, "yes": 3}
    fill = ["the", "a", "please", "about", "my", "cat", "river", "city", "code", "data"]
    prompts, L = [], []
    for _ in range(n):
        t = rng.choice(list(topics))
        words = [t] + list(rng.choice(fill, size=rng.integers(3, 20)))
        rng.shuffle(words)
        prompts.append(" ".join(words))
        L.append(topics[t] * rng.uniform(0.7, 1.3))
    return prompts, np.array(L)


def test_learns_a_word_signal_that_prompt_length_misses():
    rng = np.random.default_rng(5)
    p, L = _synthetic(600, rng)
    rk = LengthRanker.fit(p[:400], L[:400], rng=1)
    ev = evaluate_ranker(rk, p[400:], L[400:])
    assert ev.tau_b > 0.6
    assert abs(ev.baseline_tau_b) < 0.2


def test_beats_prompt_length_on_held_out_alpacaeval():
    ds = load_lengths("alpaca_eval")
    taus, base = [], []
    for seed, model in enumerate(["gpt4_1106_preview", "llama-2-70b-chat-hf", "Mixtral-8x7B-Instruct-v0.1"]):
        L = ds.of(model)
        tr, te = ds.split(0.3, rng=seed)
        tr, te = tr[np.isfinite(L[tr])], te[np.isfinite(L[te])]
        rk = LengthRanker.fit([ds.prompts[i] for i in tr], L[tr], rng=seed)
        ev = evaluate_ranker(rk, [ds.prompts[i] for i in te], L[te], model=model)
        taus.append(ev.tau_b)
        base.append(ev.baseline_tau_b)
    # tau_b on ~240 held-out prompts has a standard error below 0.05: ask for a clear margin
    assert min(t - b for t, b in zip(taus, base)) > 0.15, (taus, base)


def test_save_load_round_trip_without_pickle(tmp_path):
    rng = np.random.default_rng(2)
    p, L = _synthetic(200, rng)
    rk = LengthRanker.fit(p, L, rng=0, backbone=HashedNgrams(n_bits=12))
    path = rk.save(tmp_path / "ranker.npz")
    again = LengthRanker.load(path)
    assert np.allclose(rk.score(p), again.score(p))
    assert again.backbone.n_bits == 12
    with np.load(path, allow_pickle=False) as z:     # loads with pickle disabled
        assert "header" in z.files
    (tmp_path / "bad.npz").write_bytes(b"not a zip")
    with pytest.raises(DataError):
        LengthRanker.load(tmp_path / "bad.npz")


def test_bad_input():
    with pytest.raises(ParameterError):
        LengthRanker.fit([], [])
    with pytest.raises(ParameterTypeError):
        LengthRanker.fit("one prompt", [3])
    with pytest.raises(ParameterError, match="one length per prompt"):
        LengthRanker.fit(["a", "b"], [1, 2, 3])
    with pytest.raises(DataError, match="no training pair"):
        LengthRanker.fit(["a b", "c d", "e f"], [5, 5, 5])
    rk = LengthRanker.fit(["short", "a much longer prompt here"], [1, 100], rng=0)
    with pytest.raises(ParameterError):
        rk.score([])


def test_scores_with_tau_hits_the_requested_tau():
    L = np.random.default_rng(0).lognormal(5, 1, 4000)
    for tau in (0.3, 0.6, 0.9):
        got = [kendall_tau(scores_with_tau(L, tau, rng=s), L) for s in range(5)]
        m, se = np.mean(got), np.std(got, ddof=1) / np.sqrt(len(got))
        assert abs(m - tau) < 4 * se + 0.01
    with pytest.raises(ParameterError):
        scores_with_tau(L, 0.0)


def test_default_path_does_not_import_torch():
    code = ("import sys, fluidq.predict as p; r = p.LengthRanker.fit(['a b', 'c d e f g'], [1, 50], rng=0); "
            "r.score(['x']); import fluidq.policies.latency; print('torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_evaluation_faces(tmp_path):
    p = ["a b", "c d e f", "g h i j k l m", "n o"]
    rk = LengthRanker.fit(p, [1, 10, 100, 2], rng=0)
    ev = evaluate_ranker(rk, p, [1, 10, 100, 2], model="toy")
    d = ev.to_dict()
    assert d["model"] == "toy" and -1 <= d["tau_b"] <= 1
    assert ev.plot(path=tmp_path / "ev.png").endswith("ev.png")
