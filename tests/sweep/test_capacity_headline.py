"""The sweep's ``capacity`` analysis and ``fluidq capacity`` give one headline for one deployment (h-user6b).

Before, a ``gpu``/``model`` point's ``requests_per_s`` was :func:`fluidq.max_throughput`'s (b/t(b) at the batch the
mean request footprints allow: 0.4233 req/s for Gemma-2-9B on an A10G at 2000 + 100 tokens) where ``fluidq capacity
--gpu`` says 0.2970 (vLLM's flow balance with the KV cache's rules) and the load basis of ``check`` 0.3002.  Now the
headline is the capacity line's, named by ``capacity_basis``; max_throughput and the load basis keep their columns.
"""
import json

import pytest

from fluidq.dtmc.load_basis import load_basis
from fluidq.sweep.analyses import capacity, point_engine, point_load_basis
from fluidq.testing.cli import run_cli

#: KV-bound roofline deployments (none is a shipped validation case): the cache binds in vLLM's flow balance
POINTS = [
    {"gpu": "A10G", "model": "Mistral-7B-v0.1", "prompt_tokens": 3000, "output_tokens": 200},
    {"gpu": "A10G", "model": "Qwen2.5-7B", "prompt_tokens": 1500, "output_tokens": 150, "engines": 2},
]


def _cli(point, capsys):
    flags = ["capacity", "--gpu", point["gpu"], "--model", point["model"], "--prompt", str(point["prompt_tokens"]),
             "--output", str(point["output_tokens"]), "--engines", str(point.get("engines", 1)), "--json"]
    rc, out, err = run_cli(flags, capsys)
    assert rc in (0, None), err
    return json.loads(out)


@pytest.mark.parametrize("point", POINTS, ids=lambda p: f"{p['model']}-{p['prompt_tokens']}")
def test_a_roofline_points_headline_is_fluidq_capacitys(point, capsys):
    """Fails before: the row's requests_per_s was max_throughput's (1.251 req/s against the command's 0.8406 for
    Mistral-7B-v0.1 at 3000 + 200).  The two faces call one function with the same arguments, so the tolerance is
    round-off (1e-12); max_throughput stays in its own column, above the headline where the cache binds."""
    row = capacity(point)
    cli = _cli(point, capsys)
    assert cli["binding"] == "kv_cache"
    assert row["capacity_basis"] == "vllm_roofline"
    assert row["requests_per_s"] == pytest.approx(cli["requests_per_s"], rel=1e-12)
    assert row["tokens_per_s"] == pytest.approx(cli["tokens_per_s"], rel=1e-12)
    assert row["max_throughput_requests_per_s"] == pytest.approx(cli["stability_region"]["requests_per_s"], rel=1e-12)
    assert row["max_throughput_requests_per_s"] > 1.05 * row["requests_per_s"]  # the mean-footprint figure
    # the load basis column is check's lambda* (kv_capacity on the engine the simulator runs)
    lb = point_load_basis(point)
    assert row["load_basis"] == lb.basis == "kv_rules"
    assert row["load_basis_requests_per_s"] == lb.requests_per_s


def test_a_profile_points_headline_is_max_throughput(capsys):
    """A profile's engine: ``fluidq capacity --profile`` prints max_throughput, and so does the row."""
    point = {"profile": "paper-codellama34b-a100", "prompt_tokens": 600, "output_tokens": 200}
    row = capacity(point)
    rc, out, _ = run_cli(["capacity", "--profile", "paper-codellama34b-a100", "--prompt", "600", "--output", "200",
                          "--json"], capsys)
    cli = json.loads(out)
    assert row["capacity_basis"] == "max_throughput"
    assert row["requests_per_s"] == row["max_throughput_requests_per_s"] == pytest.approx(cli["requests_per_s"],
                                                                                         rel=1e-12)
    assert row["load_basis_requests_per_s"] == load_basis(point_engine(point), _shape600()).requests_per_s


def _shape600():
    from fluidq import Poisson, Workload

    return Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=600, output_tokens=200)
