"""The optional encoder backbone: off the default path, and (slow, with the extra) trains and round-trips."""
import subprocess
import sys

import numpy as np
import pytest

from fluidq.predict.encoder import EncoderBackbone, encoder_available


def test_importing_the_encoder_module_does_not_import_torch():
    out = subprocess.run([sys.executable, "-c", "import sys, fluidq.predict.encoder; print('torch' in sys.modules)"],
                         capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_backbone_round_trips_its_description():
    b = EncoderBackbone.from_dict(EncoderBackbone(batch_size=8).to_dict())
    assert b.batch_size == 8 and b.device == "cpu"


@pytest.mark.slow
@pytest.mark.skipif(not encoder_available(), reason="needs the [encoder] extra")
def test_encoder_ranker_learns_and_saves(tmp_path):
    from fluidq.predict import LengthRanker, evaluate_ranker, load_lengths

    ds = load_lengths("alpaca_eval")
    L = ds.of("gpt4")
    tr, te = ds.split(0.3, rng=0)
    tr, te = tr[np.isfinite(L[tr])][:300], te[np.isfinite(L[te])][:150]
    rk = LengthRanker.fit([ds.prompts[i] for i in tr], L[tr], backbone=EncoderBackbone(), rng=0)
    ev = evaluate_ranker(rk, [ds.prompts[i] for i in te], L[te])
    assert ev.tau_b > ev.baseline_tau_b + 0.1
    again = LengthRanker.load(rk.save(tmp_path / "enc.npz"))
    p = [ds.prompts[i] for i in te[:10]]
    assert np.allclose(again.score(p), rk.score(p))
