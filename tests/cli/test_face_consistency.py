"""One deployment, every face, the same answer (h-consist): deployments drawn by
validation/tools/face_consistency.py (``--seed 20261207``), none a shipped case.

A sliding-window model's planned KV cache depends on the context its requests hold
(:meth:`fluidq.models.KVCapacityEstimate.tokens_at_context`).  ``fluidq check`` and ``simulate`` size it at the
workload's mean context ``--input-len + --output-len / 2`` (the laws' means with ``--geometric``) and, with a
``--trace``, at the tokens vLLM logs (docs/reference/roofline.md); ``fluidq capacity`` took the mean of its 4,096
geometric draws, and with a ``--trace`` the trace's mean context -- so its region and load-basis lines named a
figure that ``check --load`` does not read.  Drawn deployment 12 (Gemma-3-27B on 2 x RTX 6000 Ada, geometric 539 +
1,949 tokens, ``max_num_seqs`` 19, ``max_num_batched_tokens`` 2,222, ``gpu_memory_utilization`` 0.73): capacity's
cache 43,664 tokens and load basis 0.1059 req/s, check's 44,336 and 0.1073 (1.3 % apart, where capacity says "check
--load reads 0.1059"); with a trace, capacity 45,024 against check's logged 32,448 tokens.  Now both read one cache.
"""
import json

import numpy as np
import pytest

from fluidq.models import kv_capacity_estimate, load_gpu, load_model
from fluidq.testing.cli import run_cli

#: drawn deployments 12 and 10 of the audit (windowed models; fixed lengths would not tell the contexts apart)
DRAWN = {
    "d12-gemma3-27b": ("Gemma-3-27B", "RTX-6000-Ada", 2, 19, 2222, 0.73, 539, 1949),
    "d10-gpt-oss-120b": ("GPT-OSS-120B", "H200-NVL-141GB", 2, 31, 1433, 0.85, 4481, 829),
}


def _flags(model, gpu, tp, k, b, util):
    return ["--model", model, "--gpu", gpu, "--tensor-parallel-size", str(tp), "--max-num-seqs", str(k),
            "--max-num-batched-tokens", str(b), "--gpu-memory-utilization", str(util)]


def _json(argv, capsys):
    rc, out, err = run_cli(list(argv) + ["--json"], capsys)
    assert rc in (0, None), err
    d = json.loads(out)
    return d[0] if isinstance(d, list) else d


def _faces(flags, capsys):
    cap = _json(["capacity", *flags], capsys)
    chk = _json(["check", "--load", "1", "--method", "analytic", "--policy", "vllm-chunked", *flags], capsys)
    return cap, chk


@pytest.mark.parametrize("name", sorted(DRAWN))
def test_geometric_capacity_sizes_the_cache_check_reads(name, capsys):
    """Fails before: d12's caches 43,664 / 44,336 tokens and load bases 0.1059 / 0.1073 req/s; d10's caches
    4,978,064 / 4,976,048 (its basis the same: max_num_seqs binds)."""
    model, gpu, tp, k, b, util, p, o = DRAWN[name]
    flags = _flags(model, gpu, tp, k, b, util) + ["--input-len", str(p), "--output-len", str(o), "--geometric"]
    cap, chk = _faces(flags, capsys)
    assert cap["inputs"]["kv_capacity_tokens"] == chk["inputs"]["engine"]["kv_capacity_tokens"]
    assert cap["load_basis_requests_per_s"] == pytest.approx(chk["inputs"]["arrival_rate_per_s"], rel=1e-9)
    # and that cache is the planner's at the laws' mean context, p + o / 2 (independently of either face)
    est = kv_capacity_estimate(load_model(model), gpu_memory_gib=load_gpu(gpu).memory_gib,
                               gpu_memory_utilization=util, tensor_parallel_size=tp, max_num_batched_tokens=b,
                               max_num_seqs=k)
    assert cap["inputs"]["kv_capacity_tokens"] == est.tokens_at_context(p + o / 2) != est.tokens


def test_trace_capacity_takes_the_logged_tokens_as_check_does(tmp_path, capsys):
    """With a ``--trace`` a windowed model's cache is the tokens vLLM logs (a lower bound), on every face, as
    docs/reference/roofline.md says; fails before (capacity took the trace's mean context: 45,024 against 32,448)."""
    model, gpu, tp, k, b, util, p, o = DRAWN["d12-gemma3-27b"]
    rng = np.random.default_rng(12)
    n = 200
    rows = ["arrival_s,prompt_tokens,output_tokens"] + [
        f"{t:.4f},{a},{c}" for t, a, c in zip(np.cumsum(rng.exponential(10.0, n)), rng.geometric(1 / p, n),
                                              rng.geometric(1 / o, n))]
    trace = tmp_path / "d12.csv"
    trace.write_text("\n".join(rows) + "\n")
    flags = _flags(model, gpu, tp, k, b, util) + ["--trace", str(trace)]
    cap, chk = _faces(flags, capsys)
    est = kv_capacity_estimate(load_model(model), gpu_memory_gib=load_gpu(gpu).memory_gib,
                               gpu_memory_utilization=util, tensor_parallel_size=tp, max_num_batched_tokens=b,
                               max_num_seqs=k)
    assert cap["inputs"]["kv_capacity_tokens"] == chk["inputs"]["engine"]["kv_capacity_tokens"] == est.tokens
    assert cap["load_basis_requests_per_s"] == pytest.approx(chk["inputs"]["arrival_rate_per_s"], rel=1e-9)


@pytest.mark.parametrize("lengths", ["geometric", "fixed"])
def test_sweep_point_reads_the_cache_capacity_and_check_read(lengths, capsys):
    """A sweep's roofline point (drawn deployment 12 at the sweep's ``gpu_memory_utilization`` 0.9): its row's
    headline and load basis are ``fluidq capacity``'s and ``check --load``'s.  The geometric case fails before: the
    point's engine took the logged tokens and its headline the lengths' mean context, so the row's load basis was
    not check's (0.1137 against 0.1149 req/s); with fixed lengths ``max_num_seqs`` binds on both caches and the
    basis was the same (kept as a guard)."""
    from fluidq.sweep.analyses import capacity as sweep_capacity

    model, gpu, tp, k, b, _, p, o = DRAWN["d12-gemma3-27b"]
    point = {"gpu": gpu, "model": model, "tensor_parallel_size": tp, "b_max": b, "k_max": k, "prompt_tokens": p,
             "output_tokens": o, "lengths": lengths}
    row = sweep_capacity(point)
    flags = _flags(model, gpu, tp, k, b, 0.9) + ["--input-len", str(p), "--output-len", str(o)]
    cap, chk = _faces(flags + (["--geometric"] if lengths == "geometric" else []), capsys)
    assert row["requests_per_s"] == pytest.approx(cap["requests_per_s"], rel=1e-9)
    assert row["load_basis_requests_per_s"] == pytest.approx(chk["inputs"]["arrival_rate_per_s"], rel=1e-9)
    assert row["load_basis_requests_per_s"] == pytest.approx(cap["load_basis_requests_per_s"], rel=1e-9)
