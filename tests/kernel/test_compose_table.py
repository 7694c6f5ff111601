"""The compiled evaluation of the operator-profile iteration model (:mod:`fluidq.kernel.compose`) gives the
seconds of ``IterationModel.time`` exactly (``==``, not a tolerance) on thousands of random batch compositions,
for every shipped single-GPU operator profile (the two LLMServingSim Llama-3.1-8B profiles of the validation,
the Vidur Llama-2-7B profile), in the prefill-only, decode-only and mixed regimes, inside and beyond the tables
(Vidur's token axis ends with a repeated point: beyond it both give the same ``inf``/``nan``).  Run uncompiled
(``NUMBA_DISABLE_JIT=1``, in a child process) it gives the same values.
"""
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__)
DATA = HERE.resolve().parents[2] / "validation" / "data"


def _models():
    from fluidq.batchtime.operators import lss_iteration_model, vidur_iteration_model

    v7 = DATA / "vidur" / "a100" / "meta-llama" / "Llama-2-7b-hf"
    return {"lss-rtx4090": lss_iteration_model(DATA / "llmservingsim" / "RTX4090_Llama-3.1-8B", n_layers=32),
            "lss-rtxpro6000": lss_iteration_model(DATA / "llmservingsim" / "RTXPRO6000_Llama-3.1-8B", n_layers=32,
                                                  overhead_us=7.5),
            "vidur-7b": vidur_iteration_model(v7 / "mlp.csv.gz", v7 / "attention_subset.csv.gz", n_layers=32,
                                              per_seq_us=3.0, decode_batching_overhead=0.1)}


def _compositions(seed, n=3000):
    """Random batches: 0-3 prefill chunks with prior context, 0-299 decoders, at four scales."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        nc = int(rng.integers(0, 4))
        nd = int(rng.integers(0, 300)) if rng.random() < 0.8 else 0
        if nc == 0 and nd == 0:
            nd = 1
        scale = int(rng.choice([16, 600, 5000, 40000]))
        chunks = [(int(rng.integers(1, scale)), int(rng.integers(0, 3 * scale))) for _ in range(nc)]
        out.append((chunks, [int(v) for v in rng.integers(0, 4 * scale, nd)]))
    return out


def _kernel_values(model, comps):
    from fluidq.kernel.compose import batch_s

    ct = model.kernel_table()
    vals = []
    for chunks, ctxs in comps:
        C = sum(c for c, _ in chunks)
        work = 0.0
        for c, k in chunks:
            work += c * (k + c / 2.0)
        vals.append(batch_s(ct, C, work, len(chunks), len(ctxs), sum(ctxs)))
    return np.array(vals)


def _arrays():
    models = _models()
    return {name: _kernel_values(m, _compositions(i)) for i, (name, m) in enumerate(models.items())}


@pytest.fixture(scope="module")
def models():
    if not (DATA / "llmservingsim").is_dir():
        pytest.skip("validation/data is not present (not a source checkout)")
    return _models()


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (Vidur beyond its token axis: inf - inf in numpy too)
def test_compiled_evaluation_equals_the_python_model(models):
    for i, (name, m) in enumerate(models.items()):
        comps = _compositions(i)
        py = np.array([m.time(ch, dc) for ch, dc in comps])
        kb = _kernel_values(m, comps)
        np.testing.assert_array_equal(kb, py, err_msg=name)  # (nan == nan for assert_array_equal)
        finite = np.isfinite(py)
        assert finite.mean() > 0.5 and np.all(py[finite] > 0), name  # (Vidur: nan above 4096 tokens)
        # every regime of the attention tables was hit
        kinds = {(bool(ch), bool(dc)) for ch, dc in comps}
        assert kinds == {(True, False), (False, True), (True, True)}


def test_models_the_kernel_does_not_evaluate_have_no_table(models):
    from fluidq import Affine
    from fluidq.batchtime.composition import Composition
    from fluidq.batchtime.operators import FittedIterationModel, lss_iteration_model
    from fluidq.models import load_model

    assert Composition(model=models["lss-rtx4090"]).kernel_table() is not None
    assert Composition(model=FittedIterationModel(Affine(c=0.01, a=1e-5))).kernel_table() is None
    qwen = DATA / "llmservingsim" / "RTXPRO6000_Qwen3-30B-A3B-Instruct-2507"
    moe = lss_iteration_model(qwen, n_layers=48, facts=load_model("Qwen/Qwen3-30B-A3B-Instruct-2507"))
    assert moe.kernel_table() is None  # MoE experts are tabulated per batch size: they need the batches' bound
    assert moe.kernel_table(max_batch_tokens=512) is not None  # (tests/kernel/test_compose_parallel.py)


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_uncompiled_evaluation_agrees(models, uncompiled_agrees):
    uncompiled_agrees(HERE, _arrays())


if __name__ == "__main__":
    import warnings

    from fluidq.kernel import compiled

    warnings.simplefilter("ignore", RuntimeWarning)
    print(f"compiled={compiled()}")
    np.savez(sys.argv[1], **_arrays())
