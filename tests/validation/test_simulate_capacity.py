"""predict.simulate_capacity / predict_deployment(method="simulate"): the simulated saturated throughput of
vLLM's engine checked against what a constant-time engine must serve, its binding limit, and its refusals."""
import json

import numpy as np
import pytest

from fluidq.errors import ParameterError
from fluidq.validate import validation_dir
from fluidq.validate.deployment import predict_deployment
from fluidq.validate.predict import predict_capacity, simulate_capacity

from constant_engine import Constant, T  # tests/validation/constant_engine.py

LSS = validation_dir() / "data" / "llmservingsim"


def test_k_max_bound_constant_engine_serves_k_requests_per_o_iterations():
    # every request is resident for o iterations (its prefill emits the first token, o - 1 decodes follow):
    # k_max residents serve k (p + o) / (o T) tokens/s; the fluid formula counts the prefilling request against
    # max_num_seqs as vLLM does (o - 1 decode iterations and one prefill iteration per slot) and gives it exactly
    # (before 2026-12-06 it let all k decode: k (p + o) / ((o - 1) T), 2 % above)
    p, o, k = np.full(200, 100), np.full(200, 50), 16
    res = simulate_capacity(Constant(), p, o, b_max=2048, k_max=k, kv_capacity_tokens=10 ** 7, n_requests=600,
                            replications=3, seed=7)
    exact = k * (100 + 50) / (50 * T)
    assert res.method == "simulate" and res.binding == "k_max"
    assert res.tokens_per_s == pytest.approx(exact, rel=0.01)
    assert res.ci[0] <= res.tokens_per_s <= res.ci[1] and len(res.replications) == 3
    fluid = predict_capacity(Constant(), p, o, b_max=2048, k_max=k, kv_capacity_tokens=None)
    assert fluid.tokens_per_s == pytest.approx(exact, rel=1e-9)
    # seeded: the same seed gives the same answer
    again = simulate_capacity(Constant(), p, o, b_max=2048, k_max=k, kv_capacity_tokens=10 ** 7, n_requests=600,
                              replications=3, seed=7)
    assert again.replications == res.replications


def test_a_small_kv_cache_binds_in_the_simulated_log():
    rng = np.random.default_rng(3)
    p, o = rng.integers(50, 200, 300), rng.integers(20, 120, 300)
    res = simulate_capacity(Constant(), p, o, b_max=2048, k_max=64, kv_capacity_tokens=2000, n_requests=400,
                            replications=2, seed=1)
    assert res.binding == "kv_cache"
    assert res.residents < 64


def test_a_benchmark_sends_its_own_requests_once():
    p, o = np.arange(100, 140), np.full(40, 30)
    res = simulate_capacity(Constant(), p, o, b_max=2048, k_max=8, kv_capacity_tokens=10 ** 7, arrival_rate=50.0,
                            replications=2)
    assert res.inputs["requests_each_once"] and res.inputs["n_requests"] == 40
    assert res.inputs["arrival_rate"] == 50.0


@pytest.mark.parametrize("kw,name", [({"overload": 1.0}, "overload"), ({"replications": 1}, "replications"),
                                     ({"n_requests": 5}, "n_requests"), ({"arrival_rate": -1.0}, "arrival_rate")])
def test_refusals_name_the_parameter(kw, name):
    with pytest.raises(ParameterError) as e:
        simulate_capacity(Constant(), [100] * 30, [20] * 30, b_max=512, k_max=8, kv_capacity_tokens=10 ** 7, **kw)
    assert e.value.name == name


def test_too_few_lengths_for_a_benchmark_are_refused():
    with pytest.raises(ParameterError) as e:
        simulate_capacity(Constant(), [100] * 5, [20] * 5, b_max=512, k_max=8, kv_capacity_tokens=10 ** 7,
                          arrival_rate=10.0)
    assert e.value.name == "n_requests"


def test_deployment_method_is_checked():
    with pytest.raises(ParameterError) as e:
        predict_deployment(LSS / "RTXPRO6000_Llama-3.1-8B", input_tokens=800, output_tokens=300, method="exact")
    assert e.value.name == "method"


def test_capacity_profile_dir_method_simulate_on_the_command_line(capsys):
    from fluidq.testing.cli import run_cli

    folder = LSS / "RTXPRO6000_Llama-3.1-8B"
    args = ["capacity", "--profile-dir", str(folder), "--max-num-seqs", "64", "--input-len", "400",
            "--output-len", "100", "--method", "simulate", "--replications", "2", "--json"]
    rc, out, err = run_cli(args, capsys)
    assert rc == 0, err
    doc = json.loads(out)
    api = predict_deployment(folder, input_tokens=400, output_tokens=100, max_num_seqs=64, method="simulate",
                             replications=2, n_requests=2000)
    assert doc["method"] == "simulate" and doc["tokens_per_s"] == pytest.approx(api.tokens_per_s)
    assert doc["binding"] == "k_max" and doc["ci"][0] <= doc["tokens_per_s"] <= doc["ci"][1]
    rc, out, err = run_cli(["capacity", "--profile-dir", str(folder), "--replications", "2"], capsys)
    assert rc != 0 and "--method simulate" in err


def test_no_kv_cache_is_refused():
    with pytest.raises(ParameterError) as e:
        simulate_capacity(Constant(), [100] * 30, [20] * 30, b_max=512, k_max=8, kv_capacity_tokens=None)
    assert e.value.name == "kv_capacity_tokens"


def test_a_benchmark_keeps_its_order_when_asked(monkeypatch):
    # order="given": the requests go out in the list's order (vLLM's benchmark client), only the Poisson gaps are
    # drawn, and the gaps are the same draws as in the random order (a paired comparison)
    import fluidq.sim.core as core

    seen = []
    real = core.simulate

    def spy(eng, reqs, *a, **k):
        seen.append((np.asarray(reqs["arrival_s"]).copy(), np.asarray(reqs["prompt_tokens"]).copy()))
        return real(eng, reqs, *a, **k)

    monkeypatch.setattr(core, "simulate", spy)
    p, o = np.arange(100, 140), np.full(40, 30)
    kw = dict(b_max=2048, k_max=8, kv_capacity_tokens=10 ** 7, arrival_rate=50.0, replications=2, seed=5)
    given = simulate_capacity(Constant(), p, o, order="given", **kw)
    simulate_capacity(Constant(), p, o, **kw)
    (a1, p1), (a2, p2), (a3, p3), (a4, p4) = seen
    assert np.array_equal(p1, p) and np.array_equal(p2, p)  # the list's order, every replication
    assert not np.array_equal(p3, p) and sorted(p3) == sorted(p)  # a permutation
    assert np.array_equal(a1, a3) and np.array_equal(a2, a4)  # the same gaps
    assert "their given order" in given.reason
    with pytest.raises(ParameterError) as e:
        simulate_capacity(Constant(), p, o, order="sorted", **kw)
    assert e.value.name == "order"
    with pytest.raises(ParameterError) as e:  # no benchmark: nothing to keep the order of
        simulate_capacity(Constant(), p, o, b_max=2048, k_max=8, kv_capacity_tokens=10 ** 7, n_requests=100,
                          order="given", replications=2)
    assert e.value.name == "order"


def test_a_run_knows_the_order_its_client_sent(tmp_path):
    # the request ids number the benchmark's list; requests that reach the engine nearly together can swap
    import shutil

    from fluidq.validate.cases import _plain_path
    from fluidq.validate.runs import read_run

    qwen = read_run(_plain_path(LSS / "RTXPRO6000_Qwen3-30B-A3B-Instruct-2507"))
    co = qwen.client_order
    assert np.array_equal(qwen.request_index[co], np.arange(len(qwen)))
    assert not np.array_equal(co, np.arange(len(qwen)))  # a few arrived out of the list's order
    llama = read_run(_plain_path(LSS / "RTX4090_Llama-3.1-8B"))
    assert np.array_equal(llama.client_order, np.arange(len(llama)))
    # ids that do not number the requests: the arrival order stands for the client's
    d = tmp_path / "run"
    shutil.copytree(_plain_path(LSS / "RTX4090_Llama-3.1-8B"), d)
    rows = [json.loads(line) for line in (d / "vllm_requests.jsonl").read_text().splitlines() if line.strip()]
    for i, r in enumerate(rows):  # distinct ids (one id twice is refused), none ending in a number
        r["request_id"] = f"req-{i}-x"
    (d / "vllm_requests.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    odd = read_run(d)
    assert np.array_equal(odd.client_order, np.arange(len(odd)))


@pytest.mark.parametrize("k, kv, binding, exact_req_per_iteration", [
    (None, None, "token_budget", 2048 / 100),  # a budget of 2,048 tokens holds 20.48 prompts of 100 per iteration
    (8, None, "k_max", 8.0),                   # eight slots, each held for the one iteration of its prefill
    (None, 1500, "kv_cache", 1500 / 107.5),    # the cache holds prompts of 100 tokens plus half a 16-token block
])
def test_one_output_token_each_decodes_nothing(k, kv, binding, exact_req_per_iteration):
    # output 1: the token comes with the prefill, so no request decodes and the limits bound the prompts prefilling
    # in one iteration.  Review of 2026-12-06: the formula set one decoding resident and one request per iteration
    # (10,100 tokens/s where simulate_capacity serves 202,812: 20x low)
    p, o = np.full(200, 100), np.full(200, 1)
    pred = predict_capacity(Constant(), p, o, b_max=2048, k_max=k, kv_capacity_tokens=kv)
    assert pred.binding == binding and pred.residents == 0
    assert pred.requests_per_s == pytest.approx(exact_req_per_iteration / T, rel=1e-12)
