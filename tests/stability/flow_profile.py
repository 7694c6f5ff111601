"""The synthetic operator-profile folder of tests/stability/test_flow_basis.py (linear operator times in the
LLMServingSim layout), imported by name there and from tests/cli (tests/conftest.py puts tests/stability on
sys.path)."""
import shutil
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
META = ROOT / "validation" / "data" / "llmservingsim" / "RTX4090_Llama-3.1-8B"  # profile_meta.yaml: the model facts


def write_profile(folder: Path) -> Path:
    """A synthetic operator-profile folder: linear per-operator times (microseconds) on power-of-two grids."""
    folder.mkdir(parents=True, exist_ok=True)
    shutil.copy(META / "profile_meta.yaml", folder)
    shutil.copy(META / "peer_sim_config.json", folder)
    toks = [2 ** i for i in range(12)]
    ops = {"act_fn": (1.0, 0.002), "down_proj": (4.0, 0.010), "embedding": (1.0, 0.001),
           "final_layernorm": (1.0, 0.001), "gate_up_proj": (6.0, 0.020), "layernorm": (1.0, 0.001),
           "o_proj": (2.0, 0.004), "qkv_proj": (3.0, 0.006), "rotary_emb": (1.0, 0.001)}
    rows = ["layer,tokens,time_us"] + [f"{op},{t},{a + b * t:.6g}" for op, (a, b) in ops.items() for t in toks]
    (folder / "profile_tp1_dense.csv").write_text("\n".join(rows) + "\n")
    rows = ["layer,sequences,time_us"] + [f"{op},{n},{a + b * n:.6g}" for op, (a, b) in
                                          (("lm_head", (200.0, 1.0)), ("sampler", (20.0, 0.2))) for n in toks[:9]]
    (folder / "profile_tp1_per_sequence.csv").write_text("\n".join(rows) + "\n")
    kvs = [16 * 2 ** i for i in range(11)]
    rows = ["prefill_chunk,kv_prefill,n_decode,kv_decode,time_us"]
    rows += [f"0,0,{nd},{kv},{5 + 0.002 * nd * kv:.6g}" for nd in toks[:9] for kv in kvs]
    rows += [f"{c},{kp},0,0,{8 + 0.0004 * c * (kp + c / 2):.6g}" for c in kvs[:8] for kp in [0] + kvs]
    (folder / "profile_tp1_attention.csv").write_text("\n".join(rows) + "\n")
    return folder
