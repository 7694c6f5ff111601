"""Review of issue 20's disaggregated prefill/decode as a new user would run it (h-pdreview, 2026-12-07).

Each test failed before the fix it names."""
import math

import pytest

from fluidq import Engine, Poisson, Workload
from fluidq.batchtime import Affine, ContextAware
from fluidq.batchtime.comm import Link
from fluidq.capacity.disaggregated import compare, disaggregated_capacity, pd_region, size_pools
from fluidq.capacity.disaggregated_case import DisaggregatedTopology, check_disaggregated
from fluidq.errors import ParameterError

KVB = 131072  # Llama-3.1-8B


def test_link_latency_delays_the_kv_but_does_not_hold_the_link():
    """The fluid transfer stage is ``links x bandwidth / (m_p x bytes per token)`` (the latency delays, it does not
    limit: the next prompt's bytes follow the last's on the wire).  The simulation held the link for the latency
    too, so a transfer-bound tandem whose latency is a fair share of a prompt's bytes was served at
    ``1 / (latency + bytes / bandwidth)``: 64-token prompts over 1 GB/s with 2 ms latency (8.4 ms of bytes) ran at
    95.0 req/s against the fluid 119.2 and were simulated unstable at 0.9 of it (growth 0.106, 95 % CI 0.072 to
    0.139, five runs of 2000 arrivals).  Here a 5 ms latency: before the fix 74.6 req/s."""
    pre = Engine(batch_time=Affine(c=0.002, a=2e-5), b_max=4096)
    dec = Engine(batch_time=ContextAware(base=Affine(c=0.01, a=1e-6), kv_s_per_token=1e-9), b_max=4096, k_max=512)
    wl = Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=64, output_tokens=20)
    t = DisaggregatedTopology(prefill=pre, decode=dec, n_prefill=1, n_decode=1, kv_bytes_per_token=KVB, workload=wl,
                              link=Link(bandwidth_gbps=1.0, latency_us=5000.0))
    cap = t.capacity()
    assert cap.bottleneck == "transfer" and cap.requests_per_s == pytest.approx(1e9 / (64 * KVB))
    stable = check_disaggregated(t.at_load(0.9), simulate=True, replications=4, horizon_s=1000 / (0.9 * 119.2),
                                 seed=3)
    assert stable.simulated == "stable" and stable.agree is True, stable.reason
    over = check_disaggregated(t.at_load(1.2), simulate=True, replications=4, horizon_s=1000 / (1.2 * 119.2), seed=3)
    lo, hi = over.simulation.throughput_ci
    # the served rate of an overloaded transfer-bound tandem is the link's (the runs start empty: a few % below)
    assert 0.93 * cap.requests_per_s < over.simulation.throughput_per_s <= cap.requests_per_s * 1.01, (lo, hi)


PRE = Engine(batch_time=Affine(c=0.01, a=1e-4), b_max=2000)
DEC = Engine(batch_time=ContextAware(base=Affine(c=0.02, a=1e-6), kv_s_per_token=1e-7), b_max=2048, k_max=64)
LINK = Link(bandwidth_gbps=25.0, latency_us=10.0)


def wl(p=1000, o=101):
    return Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=p, output_tokens=o)


def test_a_gpu_budget_that_tensor_parallel_engines_do_not_fill_is_refused():
    """``compare(gpus=5, gpus_per_engine=2)`` compared 2 engines (4 GPUs) and said so only in its ``gpus`` field:
    one GPU of the budget silently dropped (``fluidq disagg --gpus 5 --tensor-parallel-size 2`` printed
    "co-located 2 engines" under a 5-GPU question)."""
    with pytest.raises(ParameterError) as e:
        compare(PRE, DEC, DEC, wl(), gpus=5, link=LINK, kv_bytes_per_token=KVB, gpus_per_engine=2)
    assert e.value.name == "gpus" and "multiple" in str(e.value)
    c = compare(PRE, DEC, DEC, wl(), gpus=6, link=LINK, kv_bytes_per_token=KVB, gpus_per_engine=2)
    assert c["gpus"] == 6 and c["engines"] == 3


def test_region_of_requests_with_one_output_token_is_a_number():
    """With one output token the decode pool has no work (its request rate is infinite) and the region's decode
    bound was ``(m_d - 1) x inf = nan`` tokens/s (`fluidq disagg ... --output-len 1` printed "decode < nan
    tokens/s").  The bound is the decode pool's token rate at the workload's context, finite whatever m_d."""
    r1 = disaggregated_capacity(PRE, DEC, wl(o=1), n_prefill=1, n_decode=2, link=LINK, kv_bytes_per_token=KVB)
    reg = pd_region(r1)
    assert math.isfinite(reg["decode_tokens_per_s"]) and reg["decode_tokens_per_s"] > 0
    # by hand: 2 engines x max_N N / t(N, N kv_bar), N up to k_max = 64, kv_bar = p + o/2 = 1000.5
    n = 64
    by_hand = 2 * n / (0.02 + 1e-6 * n + 1e-7 * n * 1000.5)
    assert reg["decode_tokens_per_s"] == pytest.approx(by_hand, rel=1e-12)
    # with outputs the bound is still (m_d - 1) x the decode stage's request rate
    r = disaggregated_capacity(PRE, DEC, wl(), n_prefill=1, n_decode=2, link=LINK, kv_bytes_per_token=KVB)
    assert pd_region(r)["decode_tokens_per_s"] == pytest.approx(100 * r.stages["decode"], rel=1e-12)


def _case(tmp_path, dis, workload, top=""):
    p = tmp_path / "case.toml"
    p.write_text(top + "[disaggregated]\nprefill_engines = 1\ndecode_engines = 2\n" + dis + "\n[workload]\n" + workload
                 + "\n")
    return str(p)


def test_a_case_whose_weights_do_not_fit_names_the_case_keys(tmp_path):
    """Llama-3.1-70B on one L4 in a case file was refused as ``gpu_memory_gib=21.99`` with the advice to "raise
    --gpu-memory-utilization or --tensor-parallel-size" -- a key the file has no name for and flags it does not take;
    the file's keys are gpu, tensor_parallel_size, gpu_memory_utilization."""
    from fluidq.capacity.disaggregated_case import load_topology
    from fluidq.errors import DataError

    path = _case(tmp_path, 'model = "Llama-3.1-70B"\ngpu = "L4"', "prompt = 1000\noutput = 100")
    with pytest.raises(DataError) as e:
        load_topology(path)
    msg = str(e.value)
    assert "[disaggregated]" in msg and "gpu = 'L4' with tensor_parallel_size = 1" in msg, msg
    assert "gpu_memory_gib" not in msg and "--" not in msg, msg
    assert "tensor_parallel_size 8" in msg  # the planner's advice, in the file's words


@pytest.mark.parametrize("dis, workload, engine", [
    # Llama-3.1-8B on L4s: 31,632 tokens of KV cache; a 31,000-token prompt fits a prefill engine, its request's
    # mean resident context (32,000) no decode engine
    ('model = "Llama-3.1-8B"\ngpu = "L4"', "prompt = 31000\noutput = 2000", "decode"),
    ('model = "Llama-3.1-8B"\ngpu = "L4"', "prompt = 40000\noutput = 100", "prefill"),
    ('prefill = { batch_time = { kind = "affine", c = 0.01, a = 1e-4 }, b_max = 2000, kv_capacity_tokens = 500 }\n'
     'decode = { batch_time = { kind = "affine", c = 0.02, a = 1e-6 }, b_max = 2048, k_max = 64 }\n'
     'kv_bytes_per_token = 131072\nlink = { bandwidth_gbps = 10, latency_us = 5 }',
     "prompt = 1000\noutput = 100", "prefill"),
])
def test_a_case_whose_requests_fit_no_engine_is_refused(tmp_path, dis, workload, engine):
    """A case whose requests no decode engine (or whose prompts no prefill engine) can hold was read and judged
    ``unstable`` at load "–" (capacity 0), while its simulation refuses every request at arrival and calls the
    empty tandem ``stable`` -- the two disagreed on a tandem that serves nothing.  `fluidq disagg` refuses such
    lengths naming --input-len/--output-len; the case file names its [workload] lengths."""
    from fluidq.capacity.disaggregated_case import load_topology
    from fluidq.errors import DataError

    with pytest.raises(DataError) as e:
        load_topology(_case(tmp_path, dis, workload))
    msg = str(e.value)
    assert "[workload]" in msg and "prompt" in msg and f"{engine} engine's KV cache" in msg, msg


def test_a_withheld_fluid_verdict_is_not_contradicted_by_the_simulation():
    """Where the decode pool binds through its KV cache the fluid verdict is ``unknown`` between 0.8 and 1.25 of
    the estimate (``critical`` within 2 % of any capacity): it withholds a verdict and says "simulate to decide".
    The simulation's decision was then compared with the word "unknown" and reported as a disagreement ("unstable,
    DISAGREES with the fluid verdict"; measured on Llama-2-7B over 2 + 2 A10Gs, 1000 + 500 tokens: simulated
    stable at 0.9 and unstable at 1.1, both called disagreements).  Now the simulation decides, ``agree`` is None."""
    dec = Engine(batch_time=ContextAware(base=Affine(c=0.02, a=1e-6), kv_s_per_token=1e-7), b_max=2048, k_max=64,
                 kv_capacity_tokens=10600)
    t = DisaggregatedTopology(prefill=PRE, decode=dec, n_prefill=1, n_decode=1, link=LINK, kv_bytes_per_token=KVB,
                              workload=wl())
    cap = t.capacity()
    assert cap.bottleneck == "decode" and cap.decode_limit == "kv_cache"
    v = check_disaggregated(t.at_load(1.2), simulate=True, replications=4, horizon_s=400.0, seed=5)
    assert v.status == "unknown" and v.simulated == "unstable", v.reason
    assert v.agree is None and "DISAGREES" not in v.reason and "the simulation decides" in v.reason, v.reason


def test_network_cli_prints_the_simulation_s_decision_where_the_fluid_model_withheld(tmp_path, capsys):
    """`fluidq network CASE --simulate` printed "verdict: unknown (decided by the fluid model; the simulation
    DISAGREES)" for a KV-bound tandem the runs found unstable; the verdict line is now the runs' decision."""
    from fluidq.cli import main

    dis = ('prefill = { batch_time = { kind = "affine", c = 0.01, a = 1e-4 }, b_max = 2000 }\n'
           'decode = { batch_time = { kind = "context_aware", base = { kind = "affine", c = 0.02, a = 1e-6 }, '
           'kv_s_per_token = 1e-7 }, b_max = 2048, k_max = 64, kv_capacity_tokens = 10600 }\n'
           'kv_bytes_per_token = 131072\nlink = { bandwidth_gbps = 25, latency_us = 10 }')
    p = tmp_path / "kv.toml"
    p.write_text("bottleneck_load = 1.2\n[disaggregated]\nprefill_engines = 1\ndecode_engines = 1\n" + dis
                 + "\n[workload]\nprompt = 1000\noutput = 101\n")
    assert main(["network", str(p), "--simulate", "--horizon", "400", "--seed", "5"]) == 0
    out = capsys.readouterr().out
    assert "verdict: unstable (decided by the simulation; the fluid model withheld its verdict: unknown)" in out, out
    assert "DISAGREES" not in out


def test_runs_shorter_than_a_few_sojourns_cannot_call_a_tandem_unstable():
    """A tandem starts empty; with long decodes its pools fill for tens of seconds and the requests in the system
    grow as an overload's backlog does.  Mistral-7B on 2 + 6 A100-PCIe engines (200 + 1000 tokens) at 0.9 of its
    fluid capacity read "unstable" from five runs of 2000 arrivals (53 s, growth 0.104, 95 % CI 0.072 to 0.136)
    and "inconclusive" at the default 3000 arrivals (80 s); 143 s read stable (sojourns of 36.9 s).  Here a decode of 400
    iterations of 50 ms (a 20 s sojourn) at 0.9: runs of 30 s said "unstable"; now "inconclusive", saying why,
    and the default horizon covers six sojourns (stable)."""
    from fluidq.capacity.disaggregated_case import MIN_SOJOURNS, default_horizon, sojourn_s

    pre = Engine(batch_time=Affine(c=0.01, a=1e-5), b_max=2048)
    dec = Engine(batch_time=Affine(c=0.05, a=1e-9), b_max=2048, k_max=200)
    t = DisaggregatedTopology(prefill=pre, decode=dec, n_prefill=1, n_decode=1, link=LINK, kv_bytes_per_token=KVB,
                              workload=wl(p=100, o=401)).at_load(0.9)
    cap = t.capacity()
    assert cap.bottleneck == "decode" and cap.decode_limit == "k_max"
    w = sojourn_s(t)  # by hand: one prefill iteration of 100 tokens, the transfer, 400 decode iterations
    assert w == pytest.approx(0.01 + 1e-3 + 10e-6 + 100 * KVB / 25e9 + 400 * (0.05 + 200e-9), rel=1e-9)
    short = check_disaggregated(t, simulate=True, replications=4, horizon_s=30.0, seed=2)
    assert short.simulation.decision == "unstable"  # the replications' own reading: the filling pools
    assert short.too_short and short.simulated == "inconclusive" and short.agree is None, short.reason
    assert "still filling" in short.reason and f"{MIN_SOJOURNS * w:.4g} s" in short.reason
    assert default_horizon(t) >= 6 * w
    full = check_disaggregated(t, simulate=True, replications=4, horizon_s=6 * w, seed=2)
    assert full.simulated == "stable" and full.agree is True, full.reason


def test_an_unknown_case_name_lists_the_shipped_disaggregated_cases(capsys):
    """`fluidq network nosuch` listed the shipped network cases only; pd_tandem and pd_llama8b_h100, which the
    disaggregation how-to runs by name, were missing from the list."""
    from fluidq.cli import main

    assert main(["network", "nosuch_case"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no such case file: nosuch_case" in err and "rybko_stolyar" in err, err
    assert "pd_llama8b_h100, pd_tandem" in err, err


def test_disagg_sizing_says_where_its_verdict_turns_stable(capsys):
    """`fluidq disagg --rate R` sizes the fewest engines whose fluid capacity exceeds R, and its verdict line may
    then call that tandem `critical` (within 2 %) or `unknown` (a KV-bound decode pool within 0.8-1.25): 11 and 29
    of 150 sizings over 5 deployments x 5 length pairs x 6 rates (2026-12-07), e.g. Llama-3.1-70B on 4-GPU H100
    engines at 27 req/s: 2 + 1 engines, load 0.988, critical -- with nothing saying how many would be stable.
    The answer now names the pools whose verdict is stable (by hand: 3 prefill engines, 81.96 req/s; load 0.834)."""
    import json

    from fluidq.cli import main

    argv = ["disagg", "--model", "Llama-3.1-70B", "--gpu", "H100", "--tensor-parallel-size", "4", "--rate", "27"]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "verdict         critical at 27 req/s" in out
    assert ("sizing          the fewest engines whose fluid capacity exceeds the rate; the verdict is stable from "
            "3 prefill + 1 decode engines (load 0.8336)") in out, out
    assert main([*argv, "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["n_prefill"] == 2 and d["stable_pools"] == [3, 1]
    assert main([*argv[:-1], "20", "--json"]) == 0  # stable as sized: no such key
    assert "stable_pools" not in json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("via", ["cli", "case"])
def test_roofline_prefill_engines_have_the_planner_s_kv_cache(capsys, tmp_path, via):
    """The issue asks for each pool with its own memory; `fluidq disagg` and a case with model/gpu gave the decode
    engines vLLM's planned KV cache but the prefill engines none, so a prompt's KV never waited on the link in
    prefill memory.  Llama-3.1-8B on L4s (31,632 tokens of KV cache) with 20,000-token prompts over a 0.5 GB/s link:
    a prefill engine holds one prompt and 11,632 tokens of the next, so prefill (0.247 req/s) overlaps with its
    transfer (0.191) only in part -- 2 engines 0.2734 req/s (the tandem simulation, saturated: 0.2733), not the
    0.381 of the links alone printed before."""
    import json

    from fluidq.capacity.disaggregated_case import load_topology
    from fluidq.cli import main

    if via == "cli":
        assert main(["disagg", "--model", "Llama-3.1-8B", "--gpu", "L4", "--prefill-engines", "2", "--decode-engines",
                     "1", "--input-len", "20000", "--output-len", "10", "--link-gbps", "0.5", "--json"]) == 0
        d = json.loads(capsys.readouterr().out)
        stages, cap, kv = d["stages"], d["requests_per_s"], d["deployment"]["decode_kv_cache_tokens"]
    else:
        p = tmp_path / "l4.toml"
        p.write_text('[disaggregated]\nprefill_engines = 2\ndecode_engines = 1\nmodel = "Llama-3.1-8B"\ngpu = "L4"\n'
                     'link = { bandwidth_gbps = 0.5, latency_us = 5 }\n[workload]\nprompt = 20000\noutput = 10\n')
        t = load_topology(str(p))
        assert t.prefill.kv_capacity_tokens == t.decode.kv_capacity_tokens
        r = t.capacity()
        stages, cap, kv = r.stages, r.requests_per_s, t.decode.kv_capacity_tokens
    assert 20000 <= kv < 40000
    per_p, per_t = stages["prefill"] / 2, stages["transfer"] / 2
    assert per_t == pytest.approx(0.5e9 / (20000 * 131072))
    # by hand (prefill_memory_rate): room 11,632, rest 8,368 (last iteration 176 tokens), head 1,872 of the next
    room = kv - 20000
    rest = 20000 - room
    head = min(2048 - ((rest - 1) % 2048 + 1), room)
    assert stages["prefill_memory"] == pytest.approx(2 / ((1 / per_t) + (rest + head) / 20000 / per_p), rel=1e-12)
    assert cap == stages["prefill_memory"] == pytest.approx(0.2733, rel=2e-3)  # the simulation's saturated rate


@pytest.mark.parametrize("b_max, kv", [(512, 1500), (256, 1300), (2000, 1500)])
def test_prefill_memory_of_prompts_longer_than_an_iteration_overlaps_with_the_link(b_max, kv):
    """A prefill engine whose KV cache holds one prompt and part of the next: the fluid stage had prefill and
    transfer take turns (``1/(T_p + T_t)``), which is what the simulation does where a prompt fits one iteration
    (the iteration that ends a prompt fills the room with the next one's head, 17.05 req/s simulated against
    17.42), but a prompt of several iterations prefills most of the room while the last one crosses the link:
    Llama-3.1-8B on 2 L4 prefill engines (31,632 tokens), 20,000-token prompts over 0.5 GB/s, simulated 0.2733
    req/s saturated, the fluid stage said 0.2152.  Here the saturated simulation (load 2) against the stage."""
    from fluidq.capacity.disaggregated_sim import replicate_disaggregated

    pre = Engine(batch_time=Affine(c=0.01, a=1e-4), b_max=b_max, kv_capacity_tokens=kv)
    link = Link(bandwidth_gbps=2.0, latency_us=5.0)
    t = DisaggregatedTopology(prefill=pre, decode=DEC, n_prefill=1, n_decode=1, link=link, kv_bytes_per_token=KVB,
                              workload=wl())
    cap = t.capacity()
    assert cap.bottleneck == "prefill_memory"
    tp, tt = 1 / cap.stages["prefill"], 1 / cap.stages["transfer"]
    taking_turns = 1 / (tp + tt)
    over = t.at_load(2.0)
    r = replicate_disaggregated(pre, DEC, over.workload, n_prefill=1, n_decode=1, link=link, kv_bytes_per_token=KVB,
                                horizon_s=300.0, replications=3, seed=4)
    # the served rate of a saturated engine: within 3 % of the stage (the fluid T_p is the best batch's, b <= C)
    assert r.throughput_per_s == pytest.approx(cap.requests_per_s, rel=0.03), (r.throughput_per_s, cap.stages)
    if b_max < 1000:  # a prompt of several iterations: far from taking turns
        assert r.throughput_per_s > 1.1 * taking_turns
    else:
        assert cap.requests_per_s == pytest.approx(taking_turns, rel=1e-12)


def test_decode_residents_on_a_flat_rate_are_the_limit():
    """A decode batch time all in the KV reads (``t = s x N x kv_bar``) makes the rate flat in N; the residents
    the capacity reported then hung on the last bits of the batch time (Mistral-7B on A100-PCIe, 200 + 1000
    tokens: N = 243, then 166 after an algebraically equal rewrite, "b/t peaks before the limit").  Now the most
    residents within rounding of the best rate: the limit, named."""
    from fluidq.capacity.disaggregated import decode_rate

    flat = Engine(batch_time=ContextAware(base=Affine(c=0.0, a=1e-12), kv_s_per_token=1e-7), b_max=2048, k_max=200)
    rate, n, limit = decode_rate(flat, wl(p=200, o=1001))
    assert n == 200 and limit == "k_max"
    # 1000 tokens at 1e-7 s x kv_bar per token, kv_bar = E[o (p + o/2)] / E[o] = 200 + 500.5
    assert rate == pytest.approx(1 / (1000 * 1e-7 * 700.5), rel=1e-6)
