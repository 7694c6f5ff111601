"""MEMGUARD's first level and gamma-Ada's cadence (fluidq's choices, 32 and 50): constructor parameters,
validated with errors that name them, and `fluidq latency --memguard-k/--ada-every` (issue 18)."""
import json

import pytest

from fluidq.cli import main
from fluidq.errors import ParameterError, ParameterTypeError
from fluidq.policies.latency import GammaAda, MemGuard
from fluidq.policies.unified import UniBoost


def test_uniboost_passes_its_parameters_on():
    p = UniBoost(k_tokens=64, adaptive=True, update_every=7)
    assert p.order.k_tokens == 64 and p.order.base.update_every == 7
    assert UniBoost().order.k_tokens == 32                               # fluidq's default
    assert UniBoost(adaptive=True).order.base.update_every == 50


@pytest.mark.parametrize("kw, name", [
    (dict(k_tokens=0), "k_tokens"),
    (dict(k_tokens=-3), "k_tokens"),
    (dict(k_tokens=1.5), "k_tokens"),
    (dict(k_tokens=2**31), "k_tokens"),
    (dict(k_tokens=0, memguard=False), "k_tokens"),            # checked even when MEMGUARD is off
    (dict(update_every=0), "update_every"),                    # checked even when gamma-Ada is off
    (dict(update_every=0, adaptive=True), "update_every"),
    (dict(update_every=2.5, adaptive=True), "update_every"),
    (dict(adaptive="yes"), "adaptive"),
    (dict(memguard=1), "memguard"),
])
def test_uniboost_rejects_bad_parameters_naming_them(kw, name):
    with pytest.raises(ParameterError, match=rf"^{name}="):
        UniBoost(**kw)


def test_memguard_and_gamma_ada_validate_their_own_parameters():
    with pytest.raises(ParameterError, match="k_tokens"):
        MemGuard(k_tokens=0)
    with pytest.raises(ParameterError, match="longest request"):
        MemGuard(k_tokens=2**30 + 1)
    assert MemGuard(k_tokens=2**30).k_tokens == 2**30
    with pytest.raises(ParameterTypeError, match="k_tokens"):
        MemGuard(k_tokens="32")
    with pytest.raises(ParameterError, match="update_every"):
        GammaAda(update_every=0)
    assert GammaAda(update_every=1).update_every == 1


BASE = ["latency", "--trace", "azure-conv", "--kv-capacity", "30000", "--loads", "0.7", "--horizon", "30",
        "--replications", "1", "--json"]


def test_cli_flags_reach_the_policies_and_are_recorded(capsys):
    assert main(BASE + ["--orderings", "fcfs,uniboost-ada", "--memguard-k", "64", "--ada-every", "10"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["inputs"]["memguard_k_tokens"] == 64 and d["inputs"]["ada_update_every"] == 10
    assert main(BASE + ["--orderings", "fcfs,uniboost"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["inputs"]["memguard_k_tokens"] == 32 and "ada_update_every" not in d["inputs"]
    assert d["inputs"]["tau"] is None                          # no PARS ran: no tau is claimed


def test_cli_flag_changes_the_run(capsys):
    """A different first level gives a different schedule (the flag is not silently dropped)."""
    out = []
    for k in ("4", "4096"):
        assert main(BASE + ["--orderings", "uniboost", "--memguard-k", k, "--loads", "0.9"]) == 0
        out.append(json.loads(capsys.readouterr().out)["values"]["uniboost"])
    assert out[0] != out[1]


@pytest.mark.parametrize("extra, word", [
    (["--orderings", "uniboost", "--memguard-k", "0"], "--memguard-k=0"),
    (["--orderings", "uniboost", "--memguard-k", "2147483648"], "--memguard-k=2147483648"),
    (["--orderings", "uniboost-ada", "--ada-every", "0"], "--ada-every=0"),
    (["--orderings", "fcfs,pars", "--memguard-k", "16"], "--memguard-k 16"),
    (["--orderings", "uniboost", "--ada-every", "10"], "--ada-every 10"),
])
def test_cli_flags_are_checked_with_one_line(extra, word, capsys):
    assert main(BASE + extra) == 2
    err = capsys.readouterr().err.strip()
    assert word in err and len(err.splitlines()) == 1, err


def test_cli_flag_not_an_integer_is_an_argparse_error(capsys):
    with pytest.raises(SystemExit) as e:
        main(BASE + ["--orderings", "uniboost", "--memguard-k", "x"])
    assert e.value.code == 2 and "--memguard-k" in capsys.readouterr().err


def test_burst_command_of_issue_18_in_small(capsys):
    """The shape of `fluidq latency --reasoning --burst 2000 --kv-capacity 200000 --orderings fcfs,pars
    --tau 0.8 --json` (smaller burst): SLO attainment is reported, tau is the one given, PARS beats FCFS."""
    assert main(["latency", "--reasoning", "--burst", "300", "--kv-capacity", "200000", "--orderings", "fcfs,pars",
                 "--tau", "0.8", "--replications", "3", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["inputs"]["tau"] == 0.8 and d["inputs"]["burst"] == 300
    for p in ("fcfs", "pars"):
        assert 0 <= d["values"][p]["slo_attainment_per_token"][0][0] <= 1
        assert d["values"][p]["finished_fraction"][0][0] == 1.0
    f, p = (d["values"][k]["latency_per_token_mean_s"][0] for k in ("fcfs", "pars"))
    assert p[0] + p[1] < f[0] - f[1]
