"""``fluidq validate --help`` says when --run needs peer_sim_config.json: it said "a parallel run needs" it, while a
TP1 run whose vllm_meta.json records neither the KV cache nor the GPU memory is refused without it (the GPU memory
then comes from its npu_mem.mem_size).  The help is checked against the refusal itself, so the two cannot drift."""
import re

import run_variants as rv
from fluidq.errors import DataError
from fluidq.testing.cli import run_cli
from fluidq.validate.cases import case_for_run


def _help(capsys) -> str:
    rc, out, _ = run_cli(["validate", "--help"], capsys)
    assert rc == 0
    return " ".join(out.split())  # argparse wraps lines


def test_the_help_names_every_source_of_the_gpu_memory_the_refusal_names(tmp_path, capsys):
    folder = rv.make("no-memory", tmp_path / "run")  # TP1, no kv_cache, no device memory, no peer_sim_config.json
    try:
        case_for_run(folder)
    except DataError as exc:
        msg = str(exc)
    else:
        raise AssertionError("a run with no KV cache and no GPU memory was read")
    fields = re.findall(r"[a-z_]+(?:\.[a-z_]+)+", msg.split(":", 1)[1])  # kv_cache.num_gpu_blocks, npu_mem.mem_size...
    assert {"kv_cache.num_gpu_blocks", "hardware.device_total_memory_bytes", "npu_mem.mem_size"} <= set(fields), msg
    text = _help(capsys)
    for f in ("kv_cache.num_gpu_blocks", "num_kv_tokens", "hardware.device_total_memory_bytes", "npu_mem.mem_size",
              "peer_sim_config.json", "vllm_meta.json"):
        assert f in text, f
    # and it no longer says peer_sim_config.json is for parallel runs only
    assert "TP1" in text and "a parallel run needs peer_sim_config.json" not in text
