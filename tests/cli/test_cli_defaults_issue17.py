"""Defaults that must agree with the rest of fluidq (issue 17): check's --chunk-long-prompts is the
report's choice, and latency's default replications give usable intervals."""
import json

import pytest

from fluidq.cli import build_parser
from fluidq.testing.cli import run_cli


run = run_cli


def test_check_chunk_long_prompts_default_is_the_reports():
    from fluidq import Workload, Poisson
    from fluidq.profiles import DEFAULT_PROFILE, load_profile
    from fluidq.report.reference import reference

    ref = reference(load_profile(DEFAULT_PROFILE).engine(),
                    Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=100, output_tokens=100))
    report_choice = {p.chunk_long_prompts for p in ref.policies.values() if not p.chunked}
    assert len(report_choice) == 1
    args = build_parser().parse_args(["check"])
    assert args.chunk_long_prompts == report_choice.pop() is True


def test_check_long_prompts_follow_the_flag(capsys):
    # the analytic verdicts (the default --method auto lets simulation decide the unknown one: FasterTransformer
    # at 0.8 grows there, for its own reasons, not for a prompt it never schedules)
    argv = ["check", "--prompt", "600", "--load", "0.8", "--policy", "fastertransformer", "--method", "analytic"]
    rc, out, _ = run([*argv, "--json"], capsys)
    chunked = json.loads(out)
    assert rc == 0 and chunked["status"] != "unstable" and chunked["inputs"]["chunk_long_prompts"] is True
    rc, out, _ = run([*argv, "--no-chunk-long-prompts", "--json"], capsys)
    plain = json.loads(out)
    assert plain["status"] == "unstable" and plain["inputs"]["chunk_long_prompts"] is False
    rc, out, _ = run(argv, capsys)  # the human answer says which was used
    assert "--chunk-long-prompts" in out
    rc, out, _ = run([*argv, "--no-chunk-long-prompts"], capsys)
    assert "--no-chunk-long-prompts" in out
    rc, out, _ = run(["check", "--help"], capsys)
    assert "--chunk-long-prompts" in out and "--no-chunk-long-prompts" in out


def test_latency_default_replications():
    from fluidq.cli.commands.latency import DEFAULT_REPLICATIONS

    args = build_parser().parse_args(["latency"])
    assert args.replications == DEFAULT_REPLICATIONS >= 5  # 2 gave intervals such as P99 83.98 ± 2.6e+02


def test_latency_messages_name_flags(capsys):
    rc, out, err = run(["latency", "--loads", "1.2", "--horizon", "40", "--replications", "2",
                        "--orderings", "fcfs"], capsys)
    assert rc == 0, err
    assert "lengthen --horizon" in out  # the closing note on unfinished requests names the flag
    for api in ("horizon_s", "n_replications", "warmup_frac"):
        assert api not in out, api


def test_simulate_splits_long_prompts_by_default_like_check(capsys):
    # simulate's default disagreed with check's (off vs on): one choice for the whole command line
    assert build_parser().parse_args(["simulate"]).chunk_long_prompts is build_parser().parse_args(
        ["check"]).chunk_long_prompts is True
    argv = ["simulate", "--prompt", "600", "--load", "0.5", "--policy", "fastertransformer", "--horizon", "30",
            "--no-progress", "--json"]
    rc, out, _ = run(argv, capsys)
    on = json.loads(out)
    rc2, out2, _ = run([*argv, "--no-chunk-long-prompts"], capsys)
    off = json.loads(out2)
    assert rc == rc2 == 0
    on, off = on["policies"]["fastertransformer"]["summary"], off["policies"]["fastertransformer"]["summary"]
    assert on["finished"] > 0 and on["blocked"] == 0  # a 600-token prompt above b_max=512 is served when split
    assert off["finished"] == 0 and off["blocked"] > 0  # the literal scheduler never schedules it


def test_latency_says_why_orderings_agree_and_what_the_loads_are_of(capsys):
    rc, out, err = run(["latency", "--loads", "0.5", "--horizon", "40", "--replications", "2",
                        "--orderings", "fcfs,sjf"], capsys)
    assert rc == 0, err
    assert "100 / 100 tokens (fixed)" in out and "Fixed(" not in out
    assert "every ordering gives the same numbers" in out and "nothing to order" in out
    rc, out, err = run(["latency", "--trace", "azure-conv", "--kv-capacity", "50000", "--loads", "0.5",
                        "--horizon", "40", "--replications", "2", "--orderings", "fcfs,sjf"], capsys)
    assert rc == 0, err
    # the loads are of the load basis check --load reads (the cache binds: its rules' capacity), and the line says
    # what max_throughput's mean-footprint estimate would give
    assert "the capacity under the KV cache's rules" in out and "mean footprints" in out
    assert "KV cache 50,000 tokens" in out


def test_check_and_simulate_agree_on_a_trace_with_a_kv_cache(capsys):
    # one engine, one workload: simulate --arrival poisson keeps the trace's joint lengths, so its
    # capacities are check's (they differed: 2,968 vs 2,235 tokens/s, the pairs broken)
    from fluidq import Workload
    from fluidq.capacity import max_throughput
    from fluidq.profiles import DEFAULT_PROFILE, load_profile

    base = ["--trace", "azure-conv", "--kv-capacity", "50000", "--rate", "1.843", "--policy", "sarathi"]
    rc, out, err = run(["check", *base, "--json", "--method", "analytic"], capsys)  # (auto: simulation decides)
    assert rc == 0, err
    chk = json.loads(out)
    rc, out, err = run(["simulate", *base, "--arrival", "poisson", "--horizon", "60", "--no-progress", "--json"], capsys)
    assert rc == 0, err
    sim = json.loads(out)
    assert sim["workload"]["trace"]["source"] == "embedded:azure-conv"
    cap = max_throughput(load_profile(DEFAULT_PROFILE).engine().with_(kv_capacity_tokens=50000),
                         Workload.from_trace("azure-conv", rate_per_s=1.843))
    # the KV cache binds: simulate's load basis is the capacity under the cache's rules (h-kvbasis), the same one
    # check reads for --load and quotes beside its verdict; the mean-footprint figure is kept beside it
    from fluidq.capacity import tokens_per_request
    from fluidq.dtmc.kv_basis import kv_capacity

    engine = load_profile(DEFAULT_PROFILE).engine().with_(kv_capacity_tokens=50000)
    kvr = kv_capacity(engine, Workload.from_trace("azure-conv", rate_per_s=1.843))
    assert sim["load_basis"] == "kv_rules" and sim["kv_batch_capacity_tokens_per_s"] == pytest.approx(cap.tokens_per_s)
    assert sim["capacity_tokens_per_s"] == pytest.approx(kvr.requests_per_s * tokens_per_request(
        engine, Workload.from_trace("azure-conv", rate_per_s=1.843)))
    assert chk["inputs"]["kv_rules_requests_per_s"] == pytest.approx(sim["kv_rules_requests_per_s"])
    # since h-basis1 the verdict's own capacity is that load basis too (it was the mean-footprint estimate,
    # cap.work_conserving_tokens_per_s = 2,235 tokens/s, against simulate's 2,450)
    assert chk["capacity_tokens_per_s"] == pytest.approx(sim["capacity_tokens_per_s"], rel=1e-12)
    assert chk["load"] == pytest.approx(sim["load"], rel=1e-12)
    # load 1.028 of the KV-rules capacity, a fluid estimate, inside its error band: undecided, not "unstable"
    assert chk["status"] == "unknown" and "fluid estimate" in chk["reason"]


def test_simulate_table_says_which_replication_and_rounds(capsys):
    import re

    rc, out, err = run(["simulate", "--rate", "16", "--policy", "sarathi", "--replications", "2", "--horizon", "60",
                        "--no-progress"], capsys)
    assert rc == 0, err
    assert "each row is the first of the 2 replications" in out
    row = next(ln for ln in out.splitlines() if ln.startswith("sarathi "))
    # every figure of the row at most 4 significant digits (no 13.827-style times)
    for tok in row.split()[1:]:
        digits = re.sub(r"[^0-9]", "", tok.lstrip("-0.").replace(",", ""))
        assert len(digits.lstrip("0")) <= 4, (tok, row)
    assert "m_p=100, m_d=100" in out
