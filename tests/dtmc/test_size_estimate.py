"""The size estimate of a long build, announced before the chain is built (issue 19: "the size estimate printed
before a long build")."""
import json

import pytest

import fluidq
from fluidq.dtmc import sizing
from fluidq.dtmc.build import chain_size
from fluidq.errors import ParameterError
from fluidq.testing.cli import run_cli

G = fluidq.Geometric


@pytest.fixture
def engine():
    return fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=16), b_max=64)


def wl(rate=2.0, prompt=16):
    return fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=rate), prompt_tokens=prompt,
                           output_tokens=G(mean_tokens=10))


@pytest.mark.parametrize("policy,prompt", [("sarathi", 16), ("sarathi", G(mean_tokens=8)), ("vllm", 16)])
def test_the_estimate_counts_the_states_exactly_and_the_entries_and_memory_from_above(engine, policy, prompt,
                                                                                     monkeypatch):
    monkeypatch.setattr(fluidq.dtmc.build, "FACTORED_MIN_STATES", 1)  # keep the factors, as a long build does
    size = chain_size(engine, wl(prompt=prompt), policy, 6, 20)
    ch = fluidq.build_dtmc(engine, wl(prompt=prompt), policy, max_prefill=6, max_decode=20)
    assert size.states == ch.n_states
    assert size.states * size.per_state >= ch.nnz
    assert size.bytes > size.states * size.per_state * sizing.BYTES_PER_ENTRY
    assert size.cpu_s == pytest.approx(size.states * size.per_state * sizing.CPU_S_PER_ENTRY)
    text = size.describe()
    assert f"{ch.n_states:,} states" in text and "GiB" in text and "CPU-s" in text


def test_auto_caps_announces_each_long_build_before_it(engine, monkeypatch):
    seen = []
    built = []
    real_build = fluidq.dtmc.build.build_dtmc

    def spy(*a, **kw):
        ch = real_build(*a, **kw)
        built.append((kw["max_prefill"], kw["max_decode"], ch.n_states))
        return ch

    monkeypatch.setattr(fluidq.dtmc.build, "build_dtmc", spy)
    monkeypatch.setattr(sizing, "ANNOUNCE_STATES", 1)
    chain, res, notes = sizing.auto_caps(engine, wl(rate=4.0), "sarathi", announce=lambda caps, s: seen.append(
        (caps, s.states, len(built))))
    assert seen and len(seen) == len(built)
    for k, ((caps, states, n_before), b) in enumerate(zip(seen, built)):
        assert n_before == k  # announced before its build
        assert caps == b[:2] and states == b[2]
    monkeypatch.setattr(sizing, "ANNOUNCE_STATES", 10**9)  # short builds are not announced
    seen.clear()
    sizing.auto_caps(engine, wl(rate=4.0), "sarathi", announce=lambda caps, s: seen.append(caps))
    assert seen == []


@pytest.mark.parametrize("caps", [["--max-prefill", "6", "--max-decode", "20"], []])
def test_the_cli_prints_the_estimate_on_stderr_and_keeps_json_clean(caps, capsys, monkeypatch):
    argv = ["dtmc", "--rate", "2", "--b-max", "64", "--prompt", "16", "--output", "10", *caps, "--json"]
    monkeypatch.setattr(sizing, "ANNOUNCE_STATES", 10**9)
    rc, out, err = run_cli(argv, capsys)
    assert rc in (0, None) and "building the chain" not in err
    monkeypatch.setattr(sizing, "ANNOUNCE_STATES", 100)
    rc, out, err = run_cli(argv, capsys)
    assert rc in (0, None), err
    res = json.loads(out)["result"]  # stdout is the answer alone
    last = err.strip().splitlines()[-1]
    assert last.startswith("fluidq dtmc: building the chain with --max-prefill ")
    assert f"{res['n_states']:,} states" in last and "GiB" in last and "(estimated)" in last


def test_dtmc_rate_3_works_on_its_defaults(capsys):
    # issue 19's Done-means: the default caps once gave 1.6 M states against the 500 k limit; now chosen for the
    # load (the paper's engine, b_max = 512, prompts 100, geometric outputs of mean 100)
    rc, out, err = run_cli(["dtmc", "--rate", "3", "--json"], capsys)
    assert rc in (0, None), err
    d = json.loads(out)
    assert d["result"]["status"] == "stable" and d["caps"]["chosen"]
    assert d["result"]["n_states"] <= 500_000 and d["result"]["lost_mass"] <= 1e-6
    assert d["result"]["throughput_requests_per_s"] == pytest.approx(3.0, rel=1e-6)


PAPER = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)


def test_orca_fixed_outputs_above_capacity_are_unstable_before_any_growth():
    """Review: Orca with fixed outputs at 40 req/s (4160 tokens/s > capacity 3343) grew the adaptive chain to
    max_states (500,000 states, 35 s) before saying what Theorem 2(a) says before building anything."""
    fixed = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=40.0), prompt_tokens=100, output_tokens=4)
    chain, res, notes = sizing.auto_caps(PAPER, fixed, "orca", max_states=20_000)
    assert res.status.value == "unstable" and chain.n_states == 1, (chain.n_states, notes)
    assert "serves under a backlog" in notes[-1] and "adaptive" in chain.inputs
    geo = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=40.0), prompt_tokens=100, output_tokens=G(mean_tokens=4))
    _, gres, _ = sizing.auto_caps(PAPER, geo, "orca", max_states=20_000)
    assert gres.status.value == "unstable" and res.reason == gres.reason and "Theorem 2(a)" in res.reason


@pytest.mark.parametrize("policy", ["sarathi", "vllm", "fastertransformer"])
@pytest.mark.parametrize("out", [fluidq.Fixed(n=3), fluidq.Empirical(values=(1, 3))])
def test_auto_caps_refuses_finite_outputs_it_cannot_size_naming_the_caps(policy, out):
    """Review: these raised "expected a Geometric output" though build_dtmc takes them with explicit caps."""
    w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=2.0), prompt_tokens=16, output_tokens=out)
    with pytest.raises(ParameterError) as exc:
        sizing.auto_caps(PAPER, w, policy)
    e = exc.value
    assert e.name == "output_tokens" and "max_prefill and max_decode" in e.hint and "build_dtmc" in e.hint
    assert "Geometric output length (memoryless)" not in str(e)
    r = fluidq.build_dtmc(PAPER, w, policy, max_prefill=3, max_decode=4).solve()  # what the hint says works
    assert r.n_states > 0
