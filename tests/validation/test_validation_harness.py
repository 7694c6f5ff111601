"""The GPU harness in CPU mode (tiny Llama-shaped model) writes runs that `fluidq validate` ingests."""
import importlib.util
import json
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# torch (and transformers) are in the [gpu] extra, not in [test]: without them these checks are skipped.  The logic
# they check is the harness's own torch model and KV cache (validation/gpu/harness.py) serving real forward passes,
# so a numpy stand-in would test a different engine; fluidq's ingestion of harness runs without torch is held by
# the shipped runs' tests (read_run in tests/validation/test_validation_runs.py and its neighbours).
NO_TORCH = ("torch is not installed (it is in the [gpu] extra, not [test]): the GPU harness in CPU mode, a tiny "
            "Llama-shaped torch model served with continuous batching, cannot run")
NO_TRANSFORMERS = ("transformers is not installed (the [gpu] extra): the harness's transformers backend "
                   "(LlamaForCausalLM's own forward) cannot run")


def _harness():
    spec = importlib.util.spec_from_file_location("fluidq_gpu_harness", ROOT / "validation" / "gpu" / "harness.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _run(tmp_path, backend):
    h = _harness()
    rc = h.main(["--mode", "cpu", "--backend", backend, "--out", str(tmp_path), "--loads", "0.8,1.2",
                 "--schedulers", "sarathi,vllm,fluidq:vllm", "--horizon", "0.6", "--drain", "0.3"])
    assert rc == 0
    (session,) = [p.parent for p in tmp_path.rglob("harness_meta.json")]
    return session


def _check(tmp_path, session):
    import fluidq
    from fluidq.validate.runs import read_run

    meta = json.loads((session / "harness_meta.json").read_text())
    assert meta["runs"] == ["sarathi_load0.8", "sarathi_load1.2", "vllm_load0.8", "vllm_load1.2",
                            "fluidq-vllm_load0.8", "fluidq-vllm_load1.2"]
    assert len(meta["batch_time_table"]["seconds"]) == len(meta["batch_time_table"]["tokens"]) > 10
    for r in meta["runs"]:
        run = read_run(session / r)
        assert len(run) > 0 and (run.first_token_s >= run.arrival_s).all()
        assert (run.last_token_s >= run.first_token_s).all()
        assert run.max_num_seqs == meta["k_max"]
        assert run.meta["harness"]["scheduler"] in ("sarathi", "vllm", "fluidq:vllm")
    res = fluidq.validate(tmp_path / "report", case="gpu-harness", harness_dir=tmp_path)
    qs = [r.quantity for r in res.rows]
    assert not [r for r in res.rows if r.status == "skip"]
    assert any(q.startswith("capacity, sarathi at load 1.2") for q in qs)
    assert any(q.startswith("backlog growth, vllm at load 0.8") for q in qs)
    assert sum(q.startswith("in-run iteration times") for q in qs) == 6
    # fluidq's own vanilla-vLLM scheduler object drove two of the runs: not work-conserving, no target
    (cap,) = [r for r in res.rows if r.quantity.startswith("capacity, fluidq:vllm at load 1.2")]
    assert cap.status == "info"


def test_cpu_harness_plain_torch_is_ingested(tmp_path):
    # the harness writes six runs (3 schedulers x 2 loads) and a batch-time table that fluidq.validate reads
    pytest.importorskip("torch", reason=NO_TORCH)
    _check(tmp_path, _run(tmp_path, "torch"))


@pytest.mark.slow
def test_cpu_harness_transformers_model_is_ingested(tmp_path):
    pytest.importorskip("torch", reason=NO_TORCH)
    pytest.importorskip("transformers", reason=NO_TRANSFORMERS)
    _check(tmp_path, _run(tmp_path, "transformers"))


def _engine(backend):
    # the harness's packed engine: chunked prefill through its KV cache must equal a one-shot prefill
    torch = pytest.importorskip("torch", reason=NO_TORCH)
    if backend == "transformers":
        pytest.importorskip("transformers", reason=NO_TRANSFORMERS)
    h = _harness()
    pre = h.PRESETS["cpu"]
    return torch, h.Engine(pre["model"], dtype="float32", device="cpu", slots=4, max_len=64, backend=backend)


def test_packed_engine_chunked_equals_one_shot():
    # the harness's KV cache is consistent: a prompt prefilled in chunks and then decoded, next to
    # another request, gives the logits of the same tokens prefilled at once in a fresh slot
    torch, eng = _engine("torch")
    g = torch.Generator().manual_seed(3)
    ids = torch.randint(0, 256, (12,), generator=g)
    other = torch.randint(0, 256, (5,), generator=g)
    eng.step([(0, 0, 7), (1, 0, 5)], ids=torch.cat([ids[:7], other]))
    eng.step([(0, 7, 3), (1, 5, 1)], ids=torch.cat([ids[7:10], ids[:1]]))
    dec = eng.step([(0, 10, 1)], ids=ids[10:11], return_logits=True)
    once = eng.step([(2, 0, 11)], ids=ids[:11], return_logits=True)
    assert torch.allclose(dec[0], once[0], atol=1e-5)


@pytest.mark.slow
def test_packed_engine_matches_transformers_forward():
    # with the transformers backend the engine computes LlamaForCausalLM's own logits
    torch, eng = _engine("transformers")
    g = torch.Generator().manual_seed(5)
    ids = torch.randint(0, 256, (11,), generator=g)
    eng.step([(0, 0, 7)], ids=ids[:7])
    eng.step([(0, 7, 3)], ids=ids[7:10])
    dec = eng.step([(0, 10, 1)], ids=ids[10:11], return_logits=True)
    with torch.no_grad():
        ref = eng.model(ids[None]).logits[0, -1]
    assert torch.allclose(dec[0], ref, atol=1e-4)
