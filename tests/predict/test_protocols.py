"""Issue 18's check of the default ranker under the protocols of docs/explanation/pars.md
("Evaluation protocols"): models held out and prompts held out (B), against a ranker that saw every
prompt (A, ``LengthRanker.pretrained()``), from the shipped AlpacaEval table."""
import numpy as np
import pytest

from fluidq.errors import DataError
from fluidq.predict import LengthRanker, kendall_tau, load_lengths

# the development models (validation/tools/pars_uniboost_claims.DEV_MODELS): the default ranker's
# settings were chosen on these; the models ranked below chose nothing
DEV = ("gpt4", "gpt4_0613", "gpt4_0613_concise", "gpt4_0613_verbose", "gpt4_1106_preview",
       "gpt-4o-2024-05-13", "gpt-3.5-turbo-0613", "claude-2.1", "llama-2-7b-chat-hf",
       "llama-2-13b-chat-hf", "llama-2-70b-chat-hf")


def _splits(n, k=3, seed=5):
    for child in np.random.SeedSequence(seed).spawn(k):
        perm = np.random.default_rng(child).permutation(n)
        m = round(0.25 * n)
        yield np.sort(perm[m:]), np.sort(perm[:m])


# Protocol B: trained on the 11 development models' pooled lengths of 75 % of the prompts, ranking a
# held-out model's lengths on the other 25 %. Measured 2026-12-06 over these 3 splits, with the
# n-gram scaling (ngram_scale=1): Qwen1.5-72B 0.460 / 0.457 / 0.440 (mean 0.452, sd 0.011), Mistral-7B
# 0.479 / 0.427 / 0.469 (mean 0.458, sd 0.028); without it 0.441 and 0.449. The floor 0.39 is some 3
# standard errors of the 3-split mean below the lower of them.
# Protocol A on the same models (every prompt in training, the development models' pooled lengths):
# 0.723 and 0.661 (0.710 and 0.653 without the scaling), 0.2-0.27 above B: the ranker has memorised the prompts, so A measures how much
# the models agree, not the ranker; the test holds that gap, which the docs state.
@pytest.mark.parametrize("model", ["Qwen1.5-72B-Chat", "Mistral-7B-Instruct-v0.2"])
def test_models_and_prompts_held_out_floor_and_the_gap_to_seen_prompts(model):
    ds = load_lengths("alpaca_eval")
    P = ds.prompts
    D = np.column_stack([ds.of(m) for m in DEV])
    L = ds.of(model)
    taus = []
    for tr, te in _splits(len(P)):
        s = LengthRanker.fit([P[i] for i in tr], D[tr]).score([P[i] for i in te])
        taus.append(kendall_tau(s, L[te]))
    b = float(np.mean(taus))
    assert b >= 0.39, taus
    seen = kendall_tau(LengthRanker.fit(list(P), D).score(list(P)), L)
    assert seen >= b + 0.15, (seen, b)


def test_pretrained_is_the_default_fit_on_every_prompt_pooled_over_every_model():
    ds = load_lengths("alpaca_eval")
    rk = LengthRanker.pretrained()
    assert rk.info["method"] == "cues" and rk.info["n_models"] == len(ds.models) == 24
    assert rk.info["pretrained"]["n_prompts"] == len(ds) == 805
    ref = LengthRanker.fit(list(ds.prompts), np.column_stack([ds.of(m) for m in ds.models]))
    assert np.array_equal(rk.weights, ref.weights) and np.array_equal(rk.tail_weights, ref.tail_weights)
    p = ["Write a 1000-word essay on the history of Rome.", "Answer yes or no: is 7 prime?"]
    s = rk.score(p)
    assert s[0] > s[1]
    g = LengthRanker.pretrained("gsm8k", unit="chars")
    assert g.info["pretrained"] == {"data": "gsm8k", "unit": "chars", "n_prompts": 1319,
                                    "models": list(load_lengths("gsm8k").models)}


def test_pretrained_names_a_missing_table():
    with pytest.raises(DataError, match="no such file"):
        LengthRanker.pretrained("/nonexistent/lengths.jsonl")


def _claims_tool():
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[2] / "validation" / "tools" / "pars_uniboost_claims.py"
    spec = importlib.util.spec_from_file_location("fluidq_pars_claims", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_the_claims_table_renders_every_protocol_also_read_back_from_json():
    import json

    tool = _claims_tool()
    cell = {"tau_b": [0.4, 0.42], "mean": 0.41, "half_width": 0.02, "sd": 0.014}
    one = {"tau_b": [0.62], "mean": 0.62, "half_width": float("nan"), "sd": float("nan")}
    Q = {"dev_to_held": {"A": one, "A_target": one, "B": cell, "C": cell, "C_pool": cell},
         "folds": {k: cell for k in ("A", "A_target", "B", "C", "C_pool")}, "folds_models": [["m1"], ["m2"]]}
    for q in (Q, json.loads(json.dumps(tool.plain(Q)))):       # NaN is written as null
        text = "\n".join(tool.render_protocols(q))
        rows = [ln for ln in text.splitlines() if ln.startswith("| ")]
        assert [r.split(" | ")[0] for r in rows[1:]] == ["| C", "| C_pool", "| B", "| A", "| A_target"]
        assert "0.620 (no split: every prompt)" in text and "0.410 ± 0.02 (sd 0.014)" in text
        assert "Model folds: 1: m1; 2: m2" in text
    assert "B) 0.410 ± 0.02" in tool._protocol_note(Q) and "0.620, which measures" in tool._protocol_note(Q)
