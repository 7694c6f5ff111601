"""``fluidq gpus``, ``fluidq capacity --gpu`` (no profile) and ``fluidq disagg``: answers equal the API's,
every bad input one line, exit 2, the option named."""
import json

import pytest

from fluidq import Poisson, Workload
from fluidq.capacity.disaggregated import disaggregated_capacity
from fluidq.models import list_gpus, load_gpu
from fluidq.testing.cli import assert_one_line, run_cli
from fluidq.validate.roofline import predict_roofline_deployment

from hf_configs import LLAMA_8B  # tests/models/hf_configs.py

CFG = LLAMA_8B


def test_gpus_list_and_show(capsys):
    rc, out, _ = run_cli(["gpus"], capsys)
    assert rc == 0 and all(g.name in out for g in list_gpus())
    rc, out, _ = run_cli(["gpus", "show", "rtx 4090", "--json"], capsys)
    d = json.loads(out)
    assert rc == 0 and d["name"] == "RTX-4090" and d["memory_bandwidth_gbps"] == 1008 and "whitepaper" in d["source"]


def test_gpus_unknown_name_suggests(capsys):
    assert_one_line(["gpus", "show", "H1OO"], capsys, "did you mean H100")


def test_capacity_without_profile_equals_the_api(capsys):
    rc, out, _ = run_cli(["capacity", "--model", "Llama-3.1-70B", "--gpu", "H100", "--tensor-parallel-size", "4",
                          "--max-num-seqs", "128", "--max-num-batched-tokens", "4096", "--input-len", "800",
                          "--output-len", "300", "--json"], capsys)
    d = json.loads(out)
    api = predict_roofline_deployment("Llama-3.1-70B", "H100", tensor_parallel_size=4, max_num_seqs=128,
                                      max_num_batched_tokens=4096, input_tokens=800, output_tokens=300)
    assert rc == 0 and d["tokens_per_s"] == pytest.approx(api.tokens_per_s, rel=1e-12)
    assert d["inputs"]["estimate"].startswith("a roofline estimate") and d["binding"] == api.binding
    rc, out, _ = run_cli(["capacity", "--model", "Llama-3.1-70B", "--gpu", "H100", "--tensor-parallel-size", "4"],
                         capsys)
    assert rc == 0 and "roofline estimate" in out and "KV cache" in out


def test_capacity_from_a_config_file(capsys, tmp_path):
    p = tmp_path / "config.json"
    p.write_text(json.dumps(CFG))
    rc, out, _ = run_cli(["capacity", "--model-config", str(p), "--gpu", "L40S", "--json"], capsys)
    d = json.loads(out)
    named = predict_roofline_deployment("Llama-3.1-8B", "L40S", input_tokens=100, output_tokens=100)
    assert rc == 0 and d["tokens_per_s"] == pytest.approx(named.tokens_per_s, rel=1e-9)  # the same shapes


@pytest.mark.parametrize("argv,needle", [
    (["--model", "Llama-3.1-7B", "--gpu", "H100"], "did you mean Llama-3.1-70B"),
    (["--model", "Llama-3.1-8B", "--gpu", "H10"], "--gpu"),
    (["--gpu", "H100"], "--model NAME"),
    (["--model", "Llama-3.1-8B", "--gpu", "H100", "--profile", "paper-codellama34b-a100"], "--profile"),
    (["--model", "Llama-3.1-8B"], "--model"),
    (["--model-config", "x.json"], "--model-config"),
    (["--model", "Llama-3.1-8B", "--gpu", "RTX-4090", "--gpu-memory-utilization", "0.2"], "--gpu-memory-utilization=0.2: expected a utilization that leaves room for the KV cache: the weights do not fit"),
])
def test_capacity_bad_input(capsys, argv, needle):
    assert_one_line(["capacity", *argv], capsys, needle)


def test_disagg_tandem_equals_the_api(capsys):
    rc, out, _ = run_cli(["disagg", "--model", "Llama-3.1-8B", "--gpu", "H100", "--prefill-engines", "2",
                          "--decode-engines", "3", "--rate", "40", "--input-len", "1500", "--output-len", "150",
                          "--json"], capsys)
    d = json.loads(out)
    from fluidq.cli.commands.disagg import _engines

    class A:  # the same options as above, for the engines
        model, model_config, gpu, tensor_parallel_size, k_max, b_max = "Llama-3.1-8B", None, "H100", 1, 256, 2048
        gpu_memory_utilization, link_gbps, link_latency_us = 0.9, None, None

    rf, pre, dec, _, link, _ = _engines(A)
    api = disaggregated_capacity(pre, dec, Workload(arrival=Poisson(rate_per_s=40.0), prompt_tokens=1500,
                                                    output_tokens=150), n_prefill=2, n_decode=3, link=link,
                                 kv_bytes_per_token=rf.model.kv_bytes_per_token(), rate=40.0)
    assert rc == 0 and d["requests_per_s"] == pytest.approx(api.requests_per_s) and d["verdict"] == api.verdict
    assert d["region"]["decode_tokens_per_s"] == pytest.approx(149 * api.stages["decode"])


def test_disagg_sizing_and_compare(capsys):
    rc, out, _ = run_cli(["disagg", "--model", "Llama-3.1-8B", "--gpu", "A100", "--rate", "30", "--json"], capsys)
    d = json.loads(out)
    assert rc == 0 and d["requests_per_s"] > 30 and d["verdict"] == "stable"
    rc, out, _ = run_cli(["disagg", "--model", "Llama-3.1-8B", "--gpu", "A100", "--gpus", "6", "--json"], capsys)
    c = json.loads(out)
    assert rc == 0 and c["winner"] in ("disaggregated", "co-located") and c["engines"] == 6
    assert (c["winner"] == "disaggregated") == (c["disaggregated"]["requests_per_s"] > c["colocated_requests_per_s"])


@pytest.mark.parametrize("argv,needle", [
    (["--model", "Llama-3.1-8B", "--gpu", "H100"], "what to answer"),
    (["--model", "Llama-3.1-8B", "--gpu", "H100", "--prefill-engines", "2"], "--decode-engines"),
    (["--model", "Llama-3.1-8B", "--gpu", "H100", "--gpus", "4", "--rate", "3"], "--gpus"),
    (["--gpu", "H100", "--rate", "3"], "--model"),
    (["--model", "Llama-3.1-8B", "--gpu", "B300", "--rate", "3"], "--gpu"),
])
def test_disagg_bad_input(capsys, argv, needle):
    assert_one_line(["disagg", *argv], capsys, needle)


def test_check_with_a_roofline_engine(capsys):
    from fluidq.batchtime.roofline import roofline
    from fluidq.dtmc.load_basis import load_basis
    from fluidq.engine import Engine
    from fluidq.models import kv_capacity_estimate, load_model

    rc, out, _ = run_cli(["check", "--model", "Llama-3.1-8B", "--gpu", "A100", "--rate", "5", "--policy", "sarathi",
                          "--json"], capsys)
    d = json.loads(out)
    assert rc == 0 and d["inputs"]["engine"]["batch_time"]["kind"] == "context_aware"
    # the same engine built by hand: the context-aware roofline, vLLM's planned cache
    rf = roofline("Llama-3.1-8B", "A100")
    kv = kv_capacity_estimate(load_model("Llama-3.1-8B"), gpu_memory_gib=load_gpu("A100").memory_gib,
                              max_num_seqs=256).tokens  # the memory CUDA reports (79.15 GiB), not the datasheet's 80 GB
    wl = Workload(arrival=Poisson(rate_per_s=5.0), prompt_tokens=100, output_tokens=100)
    eng = Engine(batch_time=rf.context_aware(), b_max=2048, k_max=256, kv_capacity_tokens=kv,
                 prefill_emits_token=True)  # vLLM's: the first token comes with the prefill
    assert d["inputs"]["engine"]["kv_capacity_tokens"] == kv and d["inputs"]["engine"]["prefill_emits_token"]
    # the load is on the load basis (the flow balance under the cache's rules where max_num_seqs binds, h-basis;
    # max_throughput before)
    assert d["offered_tokens_per_s"] / d["load"] == pytest.approx(load_basis(eng, wl).tokens_per_s, rel=1e-6)
    rc, out, _ = run_cli(["check", "--model", "Llama-3.1-8B", "--gpu", "A100", "--load", "1.5", "--policy", "sarathi"],
                         capsys)
    assert rc == 0 and "unstable" in out and "roofline" in out


@pytest.mark.parametrize("argv,needle", [
    (["--model", "Llama-3.1-8B", "--gpu", "A100", "--rate", "5", "--profile", "paper-codellama34b-a100"], "--profile"),
    (["--model", "nope", "--rate", "5"], "--model"),
    (["--tensor-parallel-size", "2", "--rate", "5"], "--tensor-parallel-size"),
    (["--model-config", "c.json", "--rate", "5"], "--model-config"),
])
def test_check_roofline_bad_input(capsys, argv, needle):
    assert_one_line(["check", *argv, "--policy", "sarathi"], capsys, needle)


def test_simulate_with_a_roofline_engine(capsys):
    rc, out, _ = run_cli(["simulate", "--model", "Llama-3.1-8B", "--gpu", "A100", "--load", "0.5", "--horizon", "5",
                          "--policy", "sarathi", "--input-len", "200", "--output-len", "50"], capsys)
    assert rc == 0 and "roofline Llama-3.1-8B on 1 x A100-SXM4-80GB" in out and "ns * kv" in out
    assert_one_line(["simulate", "--model", "Llama-3.1-8B", "--gpu", "A100", "--profile", "paper-codellama34b-a100",
                     "--horizon", "5"], capsys, "--profile")
    assert_one_line(["simulate", "--gpu-memory-utilization", "0.5", "--horizon", "5"], capsys,
                    "--gpu-memory-utilization")


def test_region_with_a_roofline_engine(capsys):
    """``fluidq region --gpu``: the region of the context-aware roofline engine at the workload's mean decode
    context, so its lambda* is the one `fluidq check` and `max_throughput` give for the same engine."""
    from fluidq.batchtime.roofline import roofline
    from fluidq.capacity import max_throughput
    from fluidq.engine import Engine
    from fluidq.models import kv_capacity_estimate, load_model

    rc, out, _ = run_cli(["region", "--model", "Llama-3.1-8B", "--gpu", "H100", "--input-len", "500",
                          "--output-len", "200", "--json"], capsys)
    d = json.loads(out)
    kv = kv_capacity_estimate(load_model("Llama-3.1-8B"), gpu_memory_gib=80, max_num_seqs=256).tokens
    eng = Engine(batch_time=roofline("Llama-3.1-8B", "H100").context_aware(), b_max=2048, k_max=256,
                 kv_capacity_tokens=kv, prefill_emits_token=True)
    wl = Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=500, output_tokens=200)
    assert rc == 0 and "roofline estimate" in d["roofline"]
    assert d["workload"]["max_request_rate_per_s"] == pytest.approx(max_throughput(eng, wl).requests_per_s, rel=1e-6)
    rc, out, _ = run_cli(["region", "--model", "Llama-3.1-8B", "--gpu", "H100", "--input-len", "500"], capsys)
    assert rc == 0 and "leave-one-profile-out" in out
    assert_one_line(["region", "--model", "Llama-3.1-8B", "--gpu", "H100", "--fit", "x.csv"], capsys, "--fit")
    assert_one_line(["region", "--model-config", "c.json"], capsys, "--model-config")


def test_report_with_a_roofline_engine(capsys, tmp_path):
    rc, out, _ = run_cli(["report", "--model", "Llama-3.1-8B", "--gpu", "H100", "--quick", "--out",
                          str(tmp_path / "rep"), "--json"], capsys)
    d = json.loads(out)
    assert rc == 0
    md = (tmp_path / "rep" / "report.md").read_text()
    assert "roofline Llama-3.1-8B on 1 x H100-SXM5-80GB" in md and "leave-one-profile-out" in md
    assert "k_max` | 256" in md and "b_max` | 2048" in md
    assert d["figures"]


@pytest.mark.parametrize("argv,needle", [
    (["--model", "Llama-3.1-8B"], "--model"),
    (["--model-config", "c.json"], "--model-config"),
    (["--max-num-seqs", "64"], "--max-num-seqs"),
    (["--tensor-parallel-size", "2"], "--tensor-parallel-size"),
    (["--gpu", "H100", "--model", "Llama-3.1-8B", "--profile", "paper-codellama34b-a100"], "--profile"),
    (["--gpu", "H100"], "--model NAME"),
    (["--gpu", "H10", "--model", "Llama-3.1-8B"], "--gpu"),
])
def test_report_roofline_bad_input(capsys, tmp_path, argv, needle):
    assert_one_line(["report", "--quick", "--out", str(tmp_path / "rep"), *argv], capsys, needle)
    assert not (tmp_path / "rep").exists()


@pytest.mark.parametrize("command,argv,needle", [
    ("capacity", ["--input-len", "-3"], "--input-len=-3"),
    ("capacity", ["--output-len", "0"], "--output-len=0"),
    ("capacity", ["--tensor-parallel-size", "0"], "--tensor-parallel-size=0"),
    ("capacity", ["--gpu-memory-utilization", "1.5"], "--gpu-memory-utilization=1.5"),
    ("capacity", ["--gpu-memory-utilization", "nan"], "--gpu-memory-utilization=nan"),
    ("capacity", ["--gpu-memory-gib", "-1"], "--gpu-memory-gib=-1"),
    ("capacity", ["--max-num-seqs", "0"], "--max-num-seqs=0"),
    ("capacity", ["--max-num-batched-tokens", "-1"], "--max-num-batched-tokens=-1"),
    ("capacity", ["--kv-capacity", "0"], "--kv-capacity=0"),
    ("check", ["--tensor-parallel-size", "0", "--load", "0.5"], "--tensor-parallel-size=0"),
    ("check", ["--gpu-memory-utilization", "2", "--load", "0.5"], "--gpu-memory-utilization=2"),
    ("region", ["--tensor-parallel-size", "0"], "--tensor-parallel-size=0"),
    ("simulate", ["--gpu-memory-utilization", "0", "--horizon", "5"], "--gpu-memory-utilization=0"),
])
def test_roofline_bad_values_name_the_flag(capsys, command, argv, needle):
    """A bad value checked by the roofline (below the CLI) names the flag that set it, not the Python
    parameter (``tensor_parallel_size=0`` was printed for ``--tensor-parallel-size 0``)."""
    assert_one_line([command, "--model", "Llama-3.1-8B", "--gpu", "H100", *argv], capsys, needle)


def test_roofline_engine_named_once(capsys):
    """simulate and region print the roofline engine's name once (it was 'roofline X on 1 x G: roofline X on
    1 x G (compute ...)')."""
    for argv in (["simulate", "--load", "0.5", "--horizon", "5", "--policy", "sarathi"], ["region"]):
        rc, out, _ = run_cli([*argv, "--model", "Llama-3.1-8B", "--gpu", "H100"], capsys)
        assert rc == 0 and out.count("roofline Llama-3.1-8B on 1 x H100-SXM5-80GB") == 1
        if argv[0] == "simulate":  # the KV cache with thousands separators, as every count a person reads
            assert "KV 453,584 tokens" in out
    rc, out, _ = run_cli(["region", "--k-max", "100", "--b-max", "128"], capsys)
    assert rc == 0 and "paper-codellama34b-a100: t(b) = 11.28 ms" in out


@pytest.mark.parametrize("command,has_kv", [("region", False), ("report", False), ("check", True),
                                             ("simulate", True), ("capacity", True)])
def test_gpu_help_offers_kv_capacity_only_where_it_exists(capsys, command, has_kv):
    """--gpu's help said 'or --kv-capacity' on region and report, which have no such option."""
    from fluidq.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if hasattr(a, "choices") and isinstance(a.choices, dict)).choices[command]
    text = " ".join(sub.format_help().split())
    assert ("--kv-capacity" in sub._option_string_actions) == has_kv
    assert ("an estimate, or --kv-capacity" in text) == has_kv


def test_gpu_memory_gib_sizes_the_roofline_cache_on_check_and_simulate(capsys):
    """check and simulate --gpu read --gpu-memory-gib as capacity --gpu does (they refused it as 'read only with
    --profile-dir', so the three commands could not be asked about the same 40 GiB card)."""
    rc, out, _ = run_cli(["capacity", "--model", "Llama-3.1-8B", "--gpu", "H100", "--gpu-memory-gib", "40", "--json"],
                         capsys)
    kv = json.loads(out)["inputs"]["kv_capacity_tokens"]
    assert rc == 0 and kv < 459_328  # the table's 80 GiB gives 459,328
    rc, out, _ = run_cli(["check", "--model", "Llama-3.1-8B", "--gpu", "H100", "--gpu-memory-gib", "40", "--load", "0.5",
                          "--policy", "sarathi"], capsys)
    assert rc == 0 and f"KV cache {kv:,} tokens" in out
    rc, out, _ = run_cli(["simulate", "--model", "Llama-3.1-8B", "--gpu", "H100", "--gpu-memory-gib", "40", "--load",
                          "0.5", "--policy", "sarathi", "--horizon", "5"], capsys)
    assert rc == 0 and f"KV {kv:,} tokens" in out
    assert_one_line(["check", "--model", "Llama-3.1-8B", "--gpu", "H100", "--gpu-memory-gib", "-4", "--load", "0.5"],
                    capsys, "--gpu-memory-gib=-4")
    assert_one_line(["check", "--gpu-memory-gib", "40", "--load", "0.5"], capsys, "--profile-dir or --gpu")
    assert_one_line(["capacity", "--gpu-memory-gib", "40"], capsys, "--profile-dir or --gpu")
    assert_one_line(["capacity", "--tensor-parallel-size", "2"], capsys, "--profile-dir or --gpu")


def test_extrapolated_sync_is_said(capsys):
    """Tensor parallelism on a link outside the two NVLink bandwidths the sync term is calibrated between (a
    PCIe L40S: 106.4 us per ring step, most of a TP-4 decode iteration) is said to be an unmeasured
    extrapolation; on the H100's NVLink, and at TP 1, nothing is added."""
    from fluidq.batchtime.roofline import CALIBRATED

    step = 1e3 * CALIBRATED["sync_step_mb"] / 32.0  # the calibrated volume at PCIe 4.0's 32 GB/s
    rc, out, _ = run_cli(["capacity", "--model", "Llama-3.1-70B", "--gpu", "L40S", "--tensor-parallel-size", "4"], capsys)
    assert rc == 0 and f"sync            the all-reduce sync on PCIe 4.0 x16 (32 GB/s) is {step:.1f} us per ring step" in out
    assert "extrapolated" in out and "unmeasured" in out
    rc, out, _ = run_cli(["check", "--model", "Llama-3.1-70B", "--gpu", "L40S", "--tensor-parallel-size", "4",
                          "--load", "0.5", "--policy", "sarathi"], capsys)
    assert rc == 0 and "extrapolated" in out
    for argv in (["Llama-3.1-70B", "--gpu", "H100", "--tensor-parallel-size", "4"], ["Llama-3.1-8B", "--gpu", "L40S"]):
        rc, out, _ = run_cli(["capacity", "--model", *argv], capsys)
        assert rc == 0 and "extrapolated" not in out
