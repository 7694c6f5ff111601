"""A new user's probe of the CLI (2026-12-06): the words of an answer agree with its numbers."""
import json
import pytest

from fluidq.testing.cli import run_cli


def test_engines_with_k_max_do_not_call_the_sum_b_max_over_t(capsys):
    """``capacity --engines 3 --k-max 20`` said "the sum of their b_max/t(b_max), 2,541 tokens/s" although
    3 x b_max/t(b_max) is 10,029 tokens/s (2,541 is 3 x the k_max-bound 847.1), and printed the per-engine
    lambda* = 4.236 req/s beside the total 12.71 req/s without saying it was per engine."""
    rc, out, err = run_cli(["capacity", "--engines", "3", "--k-max", "20", "--json"], capsys)
    assert rc == 0, err
    d = json.loads(out)
    assert abs(d["tokens_per_s"] - 3 * 847.1) < 1
    assert "b_max/t(b_max)" not in d["reason"].split("Theorem-2 number")[-1]
    assert "each engine: k_max=20 binds" in d["reason"]


def test_engines_with_a_kv_cache_do_not_call_the_sum_b_max_over_t(capsys):
    rc, out, err = run_cli(["capacity", "--engines", "3", "--kv-capacity", "5000", "--json"], capsys)
    assert rc == 0, err
    d = json.loads(out)
    assert d["tokens_per_s"] < 5000  # 3 x 1,412: the cache binds
    assert "b_max/t(b_max)" not in d["reason"] and "KV cache" in d["reason"]


def test_engines_without_limits_keep_b_max_over_t(capsys):
    rc, out, err = run_cli(["capacity", "--engines", "3", "--json"], capsys)
    assert rc == 0, err
    d = json.loads(out)
    assert abs(d["tokens_per_s"] - 3 * 512 / 0.15316) < 1e-6 * d["tokens_per_s"]
    assert "sum of their b_max/t(b_max), 10,029 tokens/s" in d["reason"]


def _why(out):
    return next(line for line in out.splitlines() if line.startswith("why"))


def test_deployment_replicas_why_is_one_engines_with_its_own_limits(capsys):
    """``capacity --profile-dir DIR --data-parallel-size 2`` said "max_num_seqs = 256 caps the residents (the
    token budget allows 1,633, the KV cache allows 2,833)": one replica's max_num_seqs beside the two replicas'
    summed limits (one replica's budget allows 816.7); with --pipeline-parallel-size 2 it said
    "max_num_seqs = 128" although --max-num-seqs was 256 (128 is each virtual engine's share)."""
    from pathlib import Path

    folder = Path(__file__).resolve().parents[2] / "validation/data/llmservingsim/RTXPRO6000_Llama-3.1-8B"
    base = ["capacity", "--profile-dir", str(folder), "--input-len", "300", "--output-len", "200"]
    rc, out, err = run_cli(base, capsys)
    assert rc == 0, err
    one = _why(out)
    assert "max_num_seqs = 256 caps" in one and "the token budget allows 816.7" in one
    rc, out, err = run_cli([*base, "--data-parallel-size", "2"], capsys)
    assert rc == 0, err
    why = _why(out)
    assert why.startswith("why             each of the 2 engines: max_num_seqs = 256 caps"), why
    assert "the token budget allows 816.7" in why and "1,633" not in why
    # the binding line keeps the sums (k_max: 2 x 256 running less the 2 x 1.3 prefilling, since 2026-12-06)
    assert "token budget 1,633, k_max 509.4" in out
    rc, out, err = run_cli([*base, "--pipeline-parallel-size", "2"], capsys)
    assert rc == 0, err
    why = _why(out)
    assert "max_num_seqs = 256 over 2 pipeline virtual engines, 128 each" in why, why
    assert "the token budget allows 816.7" in why


def test_simulate_replications_refuse_requests_they_would_ignore(capsys):
    """``simulate --horizon 60 --requests 100 --replications 3`` printed "run 60 s, 100 requests" and a table
    of 706 finished requests: replicate drew arrivals for 60 s and --requests was silently dropped."""
    rc, out, err = run_cli(["simulate", "--horizon", "60", "--requests", "100", "--replications", "3",
                            "--policy", "sarathi", "--no-progress"], capsys)
    assert rc == 2 and out == ""
    assert err.count("\n") == 1 and "--requests 100 is ignored with --replications 3" in err
    rc, out, err = run_cli(["simulate", "--horizon", "60", "--num-prompts", "100", "--replications", "2"], capsys)
    assert rc == 2 and "--num-prompts 100" in err  # named as typed


_FORK_JOIN_CYCLE = """
name = "fj-cycle"
[engines.A]
batch_time = { kind = "staircase", c = 0.01128, a = 0.03547, b0 = 128 }
b_max = 512
[engines.B]
batch_time = { kind = "affine", c = 0.01, a = 0.00005 }
b_max = 1024
k_max = 32
[engines.C]
batch_time = { kind = "staircase", c = 0.01128, a = 0.03547, b0 = 128 }
b_max = 512
kv_capacity_tokens = 20000
[[classes]]
name = "agent"
rate_per_s = 2.0
route = [
  { engine = "A", prompt = 128, output = 32, name = "plan" },
  { fork = "f", branches = [[{ engine = "B", prompt = 256, output = 64, name = "search" }],
                            [{ engine = "C", prompt = 384, output = 128, name = "code" }]] },
  { join = "f" },
  { engine = "A", prompt = 512, output = 64, name = "final" },
]
"""


def test_network_simulation_budget_names_the_flag(capsys, tmp_path, monkeypatch):
    """A fork-join network with a cycle, a k_max station and a KV-limited one, simulated at the automatic
    horizon: the verdict said "(give horizon_s to run longer)", the Python parameter, on the command line
    whose option is --horizon.  (Since the automatic horizon extends up to AUTO_EXTEND_BATCHES, this case is
    decided by simulation; the cap is lowered to the first round's budget to reach the note.)"""
    import fluidq.stability.network as sn

    case = tmp_path / "fj_cycle.toml"
    case.write_text(_FORK_JOIN_CYCLE)
    monkeypatch.setattr(sn, "AUTO_EXTEND_BATCHES", sn.AUTO_BATCH_BUDGET)
    rc, out, err = run_cli(["network", str(case), "--simulate", "--replications", "2"], capsys)
    assert rc == 0, err
    assert "topology: cycles" in out and "horizon_s" not in out
    assert "give --horizon to run longer" in out
    case.with_name("dag.toml").write_text(_FORK_JOIN_CYCLE.replace('name = "fj-cycle"', 'name = "x"\nclaim = "dag"'))
    rc, out, err = run_cli(["network", str(case.with_name("dag.toml"))], capsys)
    assert rc == 2 and "claimed to be a DAG but has the cycle" in err and err.count("\n") == 1


def test_dtmc_size_refusal_advice_names_the_flag(capsys):
    """``dtmc --rate 14 --max-prefill 200 --max-decode 2000`` ended "lower the caps, or raise max_states if memory
    allows": the Python parameter, where the command's option is --max-states."""
    rc, out, err = run_cli(["dtmc", "--rate", "14", "--max-prefill", "200", "--max-decode", "2000"], capsys)
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert "raise --max-states" in err and "max_states" not in err


def test_capacity_with_gpu_also_gives_the_lambda_star_check_uses(capsys):
    """``capacity --model Llama-3.1-8B --gpu H100`` said 191.4 req/s (the flow-balance formula) while ``check`` on
    the same flags put load 1 at 173.3 req/s (the stability region), so ``check --rate 180`` called unstable a
    rate below what ``capacity`` had given; fluidq.simulate of that engine serves about 169 req/s.  The answer now
    carries both; check's lambda* is its load basis (the region's until h-basis, 2026-12-07: where max_num_seqs binds
    the basis is now the flow balance under the cache's rules, 172.1 req/s, the region 172.7)."""
    base = ["--model", "Llama-3.1-8B", "--gpu", "H100"]
    rc, out, err = run_cli(["capacity", *base, "--json"], capsys)
    assert rc == 0, err
    cap = json.loads(out)
    rc, out, err = run_cli(["check", *base, "--load", "1", "--policy", "sarathi", "--json"], capsys)
    assert rc == 0, err
    lam_check = json.loads(out)["inputs"]["arrival_rate_per_s"]
    assert abs(cap["load_basis_requests_per_s"] - lam_check) < 1e-9 * lam_check
    assert abs(cap["stability_region"]["requests_per_s"] / lam_check - 1.0) < 0.01
    # since 2026-12-06 the flow balance counts the prefilling requests against max_num_seqs and lets an
    # iteration's prompts share it: 171.0 req/s (191.4 before), 1.0 % under the region's 172.7 (172.6 and 174.3
    # before the A40 and H100 TP-4 profiles joined the roofline's calibration; 173.3 before the --gpu engine
    # emitted its first token with the prefill, as vLLM: m_p + m_d - 1 tokens of work per request)
    assert abs(cap["requests_per_s"] / lam_check - 1.0) < 0.015, (cap["requests_per_s"], lam_check)
    rc, out, err = run_cli(["capacity", *base], capsys)
    assert rc == 0 and "\nregion          34,362 tokens/s, 172.7 req/s" in out


def test_preemption_swap_without_its_cost_says_what_to_give(capsys):
    """``simulate --preemption swap --kv-capacity 20000`` said "--swap-us-per-token=None: expected the swap cost
    ...": a value the user never typed."""
    rc, out, err = run_cli(["simulate", "--preemption", "swap", "--kv-capacity", "20000", "--horizon", "5"], capsys)
    assert rc == 2 and err.count("\n") == 1
    assert "None" not in err and "--preemption swap needs --swap-ms-per-token" in err


def test_fit_names_the_columns_it_does_not_read(capsys, tmp_path):
    """A CSV whose KV column is headed 'kv' (not kv_tokens) was fitted as t(b) without a word: the column
    was dropped silently, so the user never learned that the context-aware fit did not happen."""
    csv = tmp_path / "kv.csv"
    csv.write_text("tokens,seconds,kv\n128,0.05,0\n256,0.07,100\n512,0.1,1000\n1024,0.18,5000\n")
    rc, out, err = run_cli(["fit", str(csv)], capsys)
    assert rc == 0, err
    assert "column not read: 'kv'" in out.splitlines()[0]
    rc, out, err = run_cli(["fit", str(csv), "--json"], capsys)
    assert json.loads(out)["columns_not_read"] == ["kv"]
    rc, out, err = run_cli(["capacity", "--fit", str(csv), "--b-max", "1024"], capsys)
    assert rc == 0 and "column not read: 'kv'" in out
    csv.write_text("tokens,seconds\n128,0.05\n256,0.07\n512,0.1\n1024,0.18\n")
    rc, out, err = run_cli(["fit", str(csv), "--json"], capsys)
    assert rc == 0 and "columns_not_read" not in json.loads(out)


def test_kv_capacity_help_does_not_say_unlimited_where_the_planner_sets_it(capsys):
    """``capacity --help`` and ``check --help`` said "--kv-capacity ... (default: unlimited)", but with --gpu (or
    --profile-dir) the engine carries vLLM's planned KV cache when --kv-capacity is not given."""
    import argparse

    from fluidq.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices
    for cmd in ("capacity", "check"):
        kv = next(a for a in sub[cmd]._actions if a.dest == "kv_capacity")
        assert "memory planner" in kv.help, (cmd, kv.help)
    rc, out, err = run_cli(["check", "--model", "Llama-3.1-8B", "--gpu", "H100", "--load", "0.5", "--policy",
                            "sarathi", "--json"], capsys)
    assert rc == 0, err
    assert json.loads(out)["inputs"]["engine"]["kv_capacity_tokens"] > 0  # not unlimited


def test_simulate_load_is_a_fraction_of_the_capacity_capacity_gives(capsys):
    """``simulate --help`` said --load is "a fraction of the Theorem-2 capacity lambda*", but with --k-max 20 it
    is a fraction of the k_max-bound 847.1 tokens/s (4.236 req/s), not of Theorem 2's 3,343."""
    import argparse

    from fluidq.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices
    load = next(a for a in sub["simulate"]._actions if a.dest == "load")
    assert "fraction of the Theorem-2 capacity" not in load.help and "--k-max" in load.help
    rc, out, err = run_cli(["capacity", "--k-max", "20", "--json"], capsys)
    lam = json.loads(out)["requests_per_s"]
    rc, out, err = run_cli(["simulate", "--k-max", "20", "--load", "0.5", "--horizon", "5", "--policy", "sarathi",
                            "--no-progress", "--json"], capsys)
    assert rc == 0, err
    assert abs(json.loads(out)["workload"]["arrival"]["rate_per_s"] - 0.5 * lam) < 1e-9 * lam


def _trace(tmp_path):
    """An Azure-format trace of 6 requests over 2.5 s (5 gaps of 0.5 s: 2 req/s)."""
    rows = ["TIMESTAMP,ContextTokens,GeneratedTokens"]
    rows += [f"2023-11-16 18:00:{0.5 * i:09.6f},{200 + 10 * i},{50 + 5 * i}" for i in range(6)]
    path = tmp_path / "trace.csv"
    path.write_text("\n".join(rows) + "\n")
    return path


def test_region_trace_places_its_operating_point_at_the_trace_rate(capsys, tmp_path):
    """``region --trace T`` printed lambda* but no operating point, and with the point taken from the workload
    the trace was rescaled to a placeholder 1 req/s; check and simulate read the trace's own rate."""
    tr = _trace(tmp_path)
    rc, out, err = run_cli(["check", "--trace", str(tr), "--policy", "sarathi", "--json"], capsys)
    assert rc == 0, err
    lam = json.loads(out)["inputs"]["arrival_rate_per_s"]
    rc, out, err = run_cli(["region", "--trace", str(tr), "--k-max", "50", "--json"], capsys)
    assert rc == 0, err
    d = json.loads(out)
    mp, md = d["workload"]["m_p"], d["workload"]["m_d"]
    pt = d["point"]["tokens_per_s"]
    assert abs(pt[0] - lam * mp) < 1e-9 * pt[0] and abs(pt[1] - lam * md) < 1e-9 * pt[1]
    rc, out, err = run_cli(["region", "--trace", str(tr), "--k-max", "50"], capsys)
    assert "the trace's own rate" in out and "m_p=225, m_d=62.5" in out


def test_capacity_trace_json_keeps_the_trace_rate(capsys, tmp_path):
    """``capacity --trace T --json`` reported the arrival rate_per_s 1.0, a placeholder nobody gave, beside the
    trace's native rate."""
    tr = _trace(tmp_path)
    rc, out, err = run_cli(["capacity", "--trace", str(tr), "--json"], capsys)
    assert rc == 0, err
    arr = json.loads(out)["inputs"]["workload"]["arrival"]
    assert arr["rate_per_s"] == arr["native_rate_per_s"]


def test_disagg_says_which_lengths_it_assumed(capsys):
    """``disagg --help`` gave no default for --input-len/--output-len (1000 and 200, where every other command's
    are 100 and 100) and the answer did not print the lengths, so a capacity in req/s came without the request
    size it was for."""
    import argparse

    from fluidq.cli import build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices
    helps = {a.dest: a.help for a in sub["disagg"]._actions}
    assert "default 1000" in helps["prompt"] and "default 200" in helps["output"]
    base = ["disagg", "--model", "Llama-3.1-8B", "--gpu", "H100", "--gpus", "8"]
    rc, out, err = run_cli(base, capsys)
    assert rc == 0, err
    assert "m_p=1,000, m_d=200 tokens per request (--input-len 1000 by default, --output-len 200 by default)" in out
    rc, out, err = run_cli([*base, "--input-len", "2000"], capsys)
    assert "m_p=2,000, m_d=200 tokens per request (--output-len 200 by default)" in out


def test_profile_dir_load_is_a_fraction_of_the_folders_capacity(capsys):
    """``simulate --profile-dir DIR --input-len 300 --output-len 200 --load 0.9`` offered 43.42 req/s, 0.9 of
    the profile's t(b) bound (24,123 tokens/s: t(b) is one prefill chunk, no decode context), to an engine
    that serves about 23-26 req/s (``capacity --profile-dir``: 12,953 tokens/s by the flow balance, 11,671 before
    2026-12-06; 13,076 simulated): the run grew by 8,534 tokens/s under 'load 0.9000'.  check --load had the same basis."""
    from pathlib import Path

    folder = str(Path(__file__).resolve().parents[2] / "validation/data/llmservingsim/RTXPRO6000_Llama-3.1-8B")
    lengths = ["--input-len", "300", "--output-len", "200"]
    rc, out, err = run_cli(["capacity", "--profile-dir", folder, *lengths, "--json"], capsys)
    assert rc == 0, err
    cap = json.loads(out)["requests_per_s"]
    rc, out, err = run_cli(["simulate", "--profile-dir", folder, *lengths, "--load", "0.9", "--horizon", "5",
                            "--no-progress", "--json"], capsys)
    assert rc == 0, err
    d = json.loads(out)
    assert abs(d["workload"]["arrival"]["rate_per_s"] - 0.9 * cap) < 1e-9 * cap
    assert abs(d["load"] - 0.9) < 1e-9
    rc, out, err = run_cli(["check", "--profile-dir", folder, *lengths, "--load", "0.9", "--policy", "sarathi",
                            "--json"], capsys)
    assert rc == 0, err
    d = json.loads(out)
    assert abs(d["inputs"]["arrival_rate_per_s"] - 0.9 * cap) < 1e-9 * cap
    assert abs(d["inputs"]["flow_balance_tokens_per_s"] - cap * 500) < 1e-6 * cap * 500


def test_region_of_a_context_aware_engine_says_which_context(capsys):
    """``region --model Llama-3.1-8B --gpu H100`` (no workload) drew the region of t(b, kv) at kv = 0 -- decode
    batches reading no cached context, 34,706 decode tokens/s -- without a word; with a workload it is taken at
    the workload's mean decode context."""
    base = ["region", "--model", "Llama-3.1-8B", "--gpu", "H100"]
    rc, out, err = run_cli(base, capsys)
    assert rc == 0, err
    assert "t(b, kv) taken at kv = 0" in out
    rc, out, err = run_cli([*base, "--input-len", "500", "--output-len", "200", "--json"], capsys)
    assert rc == 0, err
    assert json.loads(out)["kv_tokens_per_batch"] == 256 * 600  # k_max residents x (500 + 200/2)
    rc, out, err = run_cli(["region"], capsys)
    assert rc == 0 and "context " not in out  # a plain t(b) reads no context


def test_network_refuses_one_file_for_both_figures(capsys, tmp_path, monkeypatch):
    """``network CASE --plot a.png --plot-network a.png`` printed "plot: a.png" and "network plot: a.png": the
    network drawing replaced the fluid-path figure written a moment before."""
    monkeypatch.chdir(tmp_path)
    rc, out, err = run_cli(["network", "fork_join", "--plot", "a.png", "--plot-network", "./a.png"], capsys)
    assert rc == 2 and out == "" and "--plot-network" in err and "--plot's" in err
    assert not (tmp_path / "a.png").exists()  # refused before any work


def test_an_option_before_the_command_is_named_as_such(capsys):
    """``fluidq --json capacity`` said "fluidq capacity: error: unrecognized arguments: --json" although
    ``fluidq capacity --help`` lists --json, and ``fluidq --b-max 512 check`` said "invalid choice: '512'"."""
    rc, out, err = run_cli(["--json", "capacity"], capsys)
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert "--json comes before the command 'capacity'" in err and "unrecognized" not in err
    rc, out, err = run_cli(["--b-max", "512", "check"], capsys)
    assert rc == 2 and "--b-max comes before the command 'check'" in err and "invalid choice" not in err
    rc, out, err = run_cli(["capacity", "--json"], capsys)
    assert rc == 0 and json.loads(out)["tokens_per_s"] > 0


def test_profile_dir_cache_too_small_in_blocks_names_the_flag(capsys):
    """Second reading (2026-12-06): a cache that holds no request once counted in whole blocks (31 blocks of 64
    tokens = 1,984 < 1,950 + 40) was refused under the Python name ``kv_capacity_tokens``."""
    from pathlib import Path

    folder = Path(__file__).resolve().parents[2] / "validation" / "data" / "llmservingsim" / "RTX4090_Llama-3.1-8B"
    if not folder.is_dir():
        pytest.skip("the shipped profile folder is not in this checkout")
    rc, out, err = run_cli(["capacity", "--profile-dir", str(folder), "--block-size", "64", "--kv-capacity", "2000",
                            "--prompt", "1950", "--output", "40"], capsys)
    assert rc == 2 and "--kv-capacity" in err and "kv_capacity_tokens" not in err, err
    rc, out, err = run_cli(["check", "--profile-dir", str(folder), "--kv-capacity", "2000", "--prompt", "2000",
                            "--output", "100", "--load", "0.9"], capsys)
    assert rc == 2 and "--kv-capacity" in err and "kv_capacity_tokens" not in err, err
