"""The ``--gpu`` (roofline) engine is vLLM's: the iteration that completes a prefill emits the first output
token (``prefill_emits_token``), as :func:`fluidq.validate.replay.vllm_engine` and the flow balance of
:func:`fluidq.validate.predict.predict_capacity` (``m_d - 1`` decode iterations) already take it (issue 16)."""
import argparse
import json

import numpy as np
import pytest

from fluidq import Poisson, Workload, simulate
from fluidq.capacity import max_throughput
from fluidq.cli.commands._roofline_args import roofline_engine
from fluidq.testing.cli import run_cli


def _args(**kw):
    base = dict(model="Llama-3.1-8B", model_config=None, gpu="H100", tensor_parallel_size=1,
                gpu_memory_utilization=0.9, gpu_memory_gib=None)
    base.update(kw)
    return argparse.Namespace(**base)


def test_roofline_engine_emits_with_the_prefill():
    eng, _ = roofline_engine(_args(), b_max=2048, k_max=256, kv_capacity=None)
    assert eng.prefill_emits_token is True
    assert eng.request_work(100.0, 100.0) == (100.0, 99.0)


def test_one_token_request_finishes_with_its_prefill():
    """A request of one output token leaves with its prefill's iteration: its latency is its TTFT (the
    paper's engine would need one more iteration)."""
    eng, _ = roofline_engine(_args(), b_max=2048, k_max=256, kv_capacity=None)
    wl = Workload(arrival=Poisson(rate_per_s=0.5), prompt_tokens=200, output_tokens=1)
    res = simulate(eng, wl, policy="vllm", horizon_s=60.0, rng=3)
    r = res.requests
    done = np.isfinite(r["finish_s"])
    assert done.sum() > 5
    assert np.array_equal(r["finish_s"][done], r["first_token_s"][done])
    assert np.array_equal(r["first_token_s"][done], r["prefill_done_s"][done])
    paper = simulate(eng.with_(prefill_emits_token=False), wl, policy="vllm", horizon_s=60.0, rng=3).requests
    ok = np.isfinite(paper["finish_s"])
    assert np.all(paper["finish_s"][ok] > paper["prefill_done_s"][ok])


def test_capacity_gpu_region_counts_m_d_minus_one(capsys):
    rc, out, _ = run_cli(["capacity", "--model", "Llama-3.1-8B", "--gpu", "H100", "--input-len", "100",
                          "--output-len", "100", "--json"], capsys)
    d = json.loads(out)
    reg = d["stability_region"]
    assert rc == 0 and reg["requests_per_s"] == pytest.approx(reg["tokens_per_s"] / 199.0, rel=1e-9)
    eng, _ = roofline_engine(_args(), b_max=2048, k_max=256, kv_capacity=d["inputs"]["kv_capacity_tokens"])
    wl = Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=100, output_tokens=100)
    assert reg["requests_per_s"] == pytest.approx(max_throughput(eng, wl).requests_per_s, rel=1e-9)
    # the flow balance (vLLM's m_d - 1 decode iterations) and the region now count the same work per request
    assert d["requests_per_s"] == pytest.approx(reg["requests_per_s"], rel=0.02)
