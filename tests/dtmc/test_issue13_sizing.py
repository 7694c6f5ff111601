"""Issue 13: default caps chosen for the load, chains refused before work when too large, few solves
for a work-conserving DTMC threshold, and hostile CLI values as one line naming the flag."""
import subprocess
import sys

import pytest

import fluidq
from fluidq.dtmc import build
from fluidq.errors import ParameterError


def cli(*args, timeout=120):
    return subprocess.run([sys.executable, "-m", "fluidq", "dtmc", *args], capture_output=True, text=True,
                          timeout=timeout)


def test_default_caps_work_and_are_reported():
    r = cli("--rate", "3", "--b-max", "64", "--prompt", "16", "--output", "20")
    assert r.returncode == 0, r.stderr
    assert "chosen for this load" in r.stdout and "status          stable" in r.stdout


@pytest.mark.parametrize("args, flag", [
    (["--rate", "1e-320"], "--rate="),
    (["--rate", "5", "--max-states", "1e26"], "--max-states="),
    (["--rate", "5", "--max-states", "nan"], "--max-states="),
    (["--rate", "5", "--max-prefill", "-3"], "--max-prefill="),
    (["--rate", "5", "--max-prefill", "100000", "--max-decode", "100000", "--max-states", "2e9"],
     "--max-prefill/--max-decode="),
])
def test_hostile_values_are_one_line_naming_the_flag(args, flag):
    r = cli(*args, timeout=60)
    assert r.returncode == 2, r.stderr
    assert flag in r.stderr and "Traceback" not in r.stderr and len(r.stderr.strip().splitlines()) == 1


def test_a_chain_too_large_for_memory_is_refused_with_the_estimate(paper_engine, monkeypatch):
    from fluidq.dtmc import sizing

    monkeypatch.setattr(sizing, "available_memory_bytes", lambda: 2**30)
    w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=3.0), prompt_tokens=100,
                        output_tokens=fluidq.Geometric(mean_tokens=100))
    with pytest.raises(ParameterError, match="GiB for .* states x"):
        build.build_dtmc(paper_engine, w, "sarathi", max_prefill=200, max_decode=2000, max_states=10**8)


def test_work_conserving_dtmc_threshold_takes_few_solves(paper_engine, monkeypatch):
    calls = []
    real = build.build_dtmc

    def counting(*a, **k):
        calls.append(1)
        return real(*a, **k)

    monkeypatch.setattr(build, "build_dtmc", counting)
    w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=1.0), prompt_tokens=fluidq.Geometric(mean_tokens=100),
                        output_tokens=fluidq.Geometric(mean_tokens=100))
    r = fluidq.stability_threshold(paper_engine, w, "vllm-chunked", method="dtmc", max_prefill=10, max_decode=60)
    exact = fluidq.stability_threshold(paper_engine, w, "vllm-chunked").arrival_rate_per_s
    assert r.method == "dtmc" and r.arrival_rate_per_s == pytest.approx(exact)
    assert 0 < r.lower_per_s <= exact and len(calls) <= 3
