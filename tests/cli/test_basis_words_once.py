"""The load basis is described in one table, :data:`fluidq.dtmc.load_basis.BASIS_WORDS`, and every face says it in
those words (h-tidy4).

Before, five faces worded it five ways: ``fluidq region`` "the capacity under the KV cache's rules", ``fluidq
network`` "under the KV cache's rules" / "max_throughput", ``fluidq simulate`` "the capacity under the KV cache's
rules, the load basis" / "vLLM's flow balance for this folder", ``fluidq latency`` "max_throughput, sup b/t(b)", the
report "Theorem 2 via `fluidq.max_throughput`" / "the KV cache's rules" / "vLLM's flow balance (the engine's batch
time reads ...)".  Each face's words are built here from stand-ins (no capacity is computed), for every basis."""
from types import SimpleNamespace

import pytest

from fluidq import Affine, Engine, Poisson, Workload
from fluidq.dtmc.load_basis import BASES, BASIS_WORDS

ENGINE = Engine(batch_time=Affine(c=0.02, a=2e-4), b_max=1024, kv_capacity_tokens=30_000)
WORKLOAD = Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=600, output_tokens=200)


def _lb(basis):
    # a LoadBasis carries its capacity (load_basis_binding reads its ``binding``): None here, no binding named
    return SimpleNamespace(basis=basis, requests_per_s=3.0, tokens_per_s=2400.0, capacity=None)


def test_one_table_for_every_basis():
    assert set(BASIS_WORDS) == set(BASES)
    assert len(set(BASIS_WORDS.values())) == len(BASES)
    from fluidq.region import verdict

    assert verdict.BASIS_WORDS is BASIS_WORDS  # the old import path reads the same table


@pytest.mark.parametrize("basis", BASES)
def test_region_point_verdict_words(basis):
    from fluidq.region.verdict import basis_words

    assert basis_words(_lb(basis)).startswith(BASIS_WORDS[basis])


@pytest.mark.parametrize("basis", ["flow_balance", "kv_rules"])
def test_simulate_words(basis):
    from fluidq.cli.commands.simulate import _basis_note, _fluid_basis

    assert BASIS_WORDS[basis] in _fluid_basis(basis)
    cap = SimpleNamespace(tokens_per_s=3000.0)
    assert BASIS_WORDS[basis] in _basis_note(_lb(basis), cap, 0.9)


@pytest.mark.parametrize("basis", BASES)
def test_latency_words(basis):
    from fluidq.cli.commands.latency import _basis_words

    res = SimpleNamespace(inputs={"load_basis": basis})
    assert _basis_words(ENGINE, WORKLOAD, res).startswith(BASIS_WORDS[basis])


@pytest.mark.parametrize("basis", BASES)
def test_report_reference_words(basis):
    from fluidq.report.reference import Reference

    ref = Reference(capacity=SimpleNamespace(requests_per_s=4.0), requests_per_s=3.0, tokens_per_s=2400.0,
                    offered_requests_per_s=1.0, offered_load=0.3, policies={}, long_prompt_fraction=None,
                    b_max=1024, basis=_lb(basis))
    assert BASIS_WORDS[basis] in ref.basis_words


@pytest.mark.parametrize("kv, label", [(["--kv-capacity", "30000"], "(on the load basis)"), ([], "(Theorem 2)")])
def test_simulate_names_the_basis_of_its_nominal_rate_prediction(kv, label, capsys):
    """The fluid line's growth at the nominal rate is ``max(0, offered - capacity)`` on the load basis: "Theorem 2"
    only on the max_throughput basis (it said "(Theorem 2)" on the KV rules' basis too)."""
    from fluidq.cli import main

    rc = main(["simulate", "--model", "affine", "--c-ms", "20", "--a-ms", "0.2", "--b-max", "1024", *kv,
               "--prompt", "600", "--output", "200", "--load", "1.1", "--horizon", "30", "--policy", "sarathi"])
    out = capsys.readouterr().out
    (line,) = [l for l in out.splitlines() if l.startswith("fluid prediction")]
    assert rc == 0 and f"at the nominal rate {label}" in line, line
    if kv:
        assert BASIS_WORDS["kv_rules"] in line and "Theorem 2" not in line, line
