"""`fluidq capacity` names the load basis beside its capacity figure wherever that basis is not max_throughput
(h-docs4; rev-docs finding A1).

Before, ``fluidq capacity --profile llmservingsim-llama3.1-8b-rtx4090 --kv-capacity 41408 --prompt 1000 --output 200``
printed 4.579 req/s (b/t(b) at the batch the KV cache's mean footprints allow) and nothing else, while ``fluidq check``
with the same flags reads its loads as fractions of 3.837 req/s, the capacity under the cache's rules; seeded
simulations of 17 KV-bound engines saturate 5-46 % below a figure of the first kind.  Now the answer has a
``load basis`` line and the JSON the load basis keys every other face carries (``load_basis``,
``load_basis_requests_per_s``, ``load_basis_tokens_per_s``, ``load_basis_reason``) plus ``load_basis_load`` (--rate
on the basis).  The basis is compared with what ``fluidq check --load`` itself reads, not with a number written here.
"""
import json
import re

import pytest

import fluidq
from fluidq.dtmc.load_basis import BASIS_WORDS, load_basis
from fluidq.testing.cli import run_cli

KV_BOUND = ["--profile", "llmservingsim-llama3.1-8b-rtx4090", "--kv-capacity", "41408", "--prompt", "1000",
            "--output", "200"]
NOT_KV_BOUND = ["--model", "affine", "--c-ms", "20", "--a-ms", "0.2", "--b-max", "1024", "--prompt", "600",
                "--output", "200"]


def _check_basis(flags, capsys):
    """What `fluidq check --load 0.9` reads: its arrival rate over 0.9, and its basis name."""
    rc, out, _ = run_cli(["check", *flags, "--load", "0.9", "--method", "analytic", "--policy", "sarathi", "--json"],
                         capsys)
    assert rc == 0, out
    d = json.loads(out)["inputs"]
    return d["arrival_rate_per_s"] / 0.9, d["load_basis"]


def _lines(out):
    return {ln[:16].strip(): ln[16:] for ln in out.splitlines()}


def test_kv_bound_engine_prints_the_basis_check_reads(capsys):
    rc, out, _ = run_cli(["capacity", *KV_BOUND], capsys)
    assert rc == 0
    lines = _lines(out)
    assert "load basis" in lines, out  # fails before h-docs4: no such line
    rate, basis = _check_basis(KV_BOUND, capsys)
    assert basis == "kv_rules"
    line = lines["load basis"]
    assert BASIS_WORDS["kv_rules"] in line
    from fluidq.cli.commands.capacity import _n

    assert line.startswith(f"{_n(rate)} req/s"), (line, rate)
    # the figure on the capacity lines is above it: the line says how far, and that the cache binds
    rc, js, _ = run_cli(["capacity", *KV_BOUND, "--json"], capsys)
    d = json.loads(js)
    assert d["requests_per_s"] > d["load_basis_requests_per_s"]
    # the mean-footprint caveat is the why line's (max_throughput's reason, the JSON's "reason" word for word); this
    # line refers to it (h-tidy5: both said it, in different words)
    assert "% below the requests line" in line and "(the mean-footprint figure, as the why line says)" in line
    assert lines["why"] == d["reason"] and "mean request footprints, the mean-footprint bound" in d["reason"]
    assert d["load_basis"] == "kv_rules"
    assert d["load_basis_requests_per_s"] == pytest.approx(rate, rel=1e-12)
    assert {"load_basis_tokens_per_s", "load_basis_reason", "load_basis_load", "tokens_per_s", "reason"} <= set(d)
    assert d["load_basis_load"] is None  # no --rate


def test_rate_is_read_on_the_basis_too(capsys):
    rc, js, _ = run_cli(["capacity", *KV_BOUND, "--rate", "4.3", "--json"], capsys)
    d = json.loads(js)
    assert rc == 0
    assert d["offered"]["load"] < 1 < d["load_basis_load"]  # 0.94 of the capacity line, above 1 of the basis
    assert d["load_basis_load"] == pytest.approx(4.3 / d["load_basis_requests_per_s"], rel=1e-12)
    rc, out, _ = run_cli(["capacity", *KV_BOUND, "--rate", "4.3"], capsys)
    assert "--rate is load" in _lines(out)["load basis"] and "(above 1)" in _lines(out)["load basis"]


def test_where_the_cache_does_not_bind_no_line_and_the_basis_is_the_capacity(capsys):
    rc, out, _ = run_cli(["capacity", *NOT_KV_BOUND], capsys)
    assert rc == 0 and "load basis" not in _lines(out), out
    rc, js, _ = run_cli(["capacity", *NOT_KV_BOUND, "--json"], capsys)
    d = json.loads(js)
    rate, basis = _check_basis(NOT_KV_BOUND, capsys)
    assert d["load_basis"] == basis == "max_throughput"
    assert d["load_basis_requests_per_s"] == pytest.approx(d["requests_per_s"], rel=1e-12)
    assert rate == pytest.approx(d["requests_per_s"], rel=1e-12)


def test_gpu_answer_carries_the_basis(capsys):
    flags = ["--gpu", "L4", "--model", "Qwen2.5-7B", "--prompt", "1000", "--output", "200"]
    rc, js, _ = run_cli(["capacity", *flags, "--json"], capsys)
    d = json.loads(js)
    assert rc == 0
    rate, basis = _check_basis(flags, capsys)
    assert d["load_basis"] == basis == "kv_rules"
    assert d["load_basis_requests_per_s"] == pytest.approx(rate, rel=1e-12)
    assert d["stability_region"]["kv_rules_requests_per_s"] == pytest.approx(rate, rel=1e-12)  # the key kept
    rc, out, _ = run_cli(["capacity", *flags], capsys)
    assert BASIS_WORDS["kv_rules"] in _lines(out)["load basis"]


def test_max_throughput_reason_names_the_mean_footprint_bound_and_the_basis():
    from fluidq.engine.roofline import roofline_engine

    w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=1.0), prompt_tokens=1000, output_tokens=200)
    engine = roofline_engine("Qwen2.5-7B", "L4")
    res = fluidq.max_throughput(engine, w)
    assert load_basis(engine, w).basis == "kv_rules"
    assert "mean-footprint bound" in res.reason and "fluidq.dtmc.load_basis" in res.reason
    free = fluidq.max_throughput(fluidq.Engine(batch_time=fluidq.Affine(c=0.02, a=2e-4), b_max=1024), w)
    assert "mean-footprint bound" not in free.reason


#: the words of the mean-footprint caveat (the figure takes the batch mean request footprints allow, not the cache's
#: rules), in either line that may say it
CAVEAT = re.compile(r"mean (request )?footprints")
#: an affine engine whose max_throughput k_max binds (no caveat in its reason) while the cache's rules bind: 256
#: residents' mean footprints (256 x (83 + 246) = 84,224 tokens) fit its 115,958 tokens, their full contexts
#: (256 x 575) do not, so the cache binds for part of their life (h-words: the load basis line said "the capacity
#: above takes the batch its mean request footprints allow", false here; it is the k_max stability region)
K_MAX_BOUND = ["--model", "affine", "--c-ms", "45.26", "--a-ms", "0.2171", "--b-max", "1024", "--k-max", "256",
               "--kv-capacity", "115958", "--prompt", "83", "--output", "492"]


@pytest.mark.parametrize("flags, said_in, referred", [
    (KV_BOUND, "why", "(the mean-footprint figure, as the why line says)"),
    (["--gpu", "L4", "--model", "Qwen2.5-7B", "--prompt", "1000", "--output", "200"], "region",
     "the region line (the mean-footprint figure, as it says)"),
    (K_MAX_BOUND, "load basis", None),
])
def test_the_mean_footprint_caveat_is_said_once(flags, said_in, referred, capsys):
    # h-tidy5: where the KV cache binds, the why line (the region line with --gpu) and the load basis line each
    # stated that the capacity figure takes the batch mean footprints allow, not the cache's rules, in other words
    rc, out, _ = run_cli(["capacity", *flags], capsys)
    assert rc == 0, out
    lines = _lines(out)
    assert len(CAVEAT.findall(out)) == 1, out
    assert CAVEAT.search(lines[said_in]), lines[said_in]
    if referred is not None:  # the load basis line points to it instead
        assert referred in lines["load basis"] and not CAVEAT.search(lines["load basis"])
    else:  # max_throughput's reason has no caveat here (its k_max region, not a mean-footprint batch): this line
        # says the cache binds for part of the residents' life and what the figure is (h-words)
        from fluidq.dtmc.load_basis import KV_CACHE_BINDS_PART

        assert "mean-footprint" not in lines["why"] and KV_CACHE_BINDS_PART in lines["load basis"]
        assert "bound over every scheduler" in lines["load basis"] and "takes the batch" not in lines["load basis"]
    # the measured gap stays on the load basis line (the mean-footprint figure's only where it is that figure)
    from fluidq.stability.measured import SATURATION_PER_BASIS

    assert (SATURATION_PER_BASIS["max_throughput"].above_words() in lines["load basis"]) == (referred is not None)
    assert SATURATION_PER_BASIS["kv_rules"].saturate_words() in lines["load basis"] or referred is not None
    rc, js, _ = run_cli(["capacity", *flags, "--json"], capsys)
    assert json.loads(js)["load_basis"] == "kv_rules"
