"""predict.simulate_capacity / predict_deployment(method="simulate"): the simulated saturated throughput of
vLLM's engine checked against what a constant-time engine must serve, its binding limit, and its refusals."""
import json

import numpy as np
import pytest

from fluidq.errors import ParameterError
from fluidq.validate import validation_dir
from fluidq.validate.deployment import predict_deployment
from fluidq.validate.predict import predict_capacity, simulate_capacity

LSS = validation_dir() / "data" / "llmservingsim"
T = 0.01  # seconds per iteration, whatever is in it


class Constant:
    """An iteration model whose iterations all take ``T``."""
    n_layers, source, name = 1, "constant", "constant"

    def time_shape(self, pc, kp, nd, kv, n_emit=None):
        return np.full(np.broadcast(np.asarray(pc, float), np.asarray(nd, float)).shape, T)[()]

    def decode_only(self, n, kv):
        return self.time_shape(0.0, 0.0, n, kv)

    def time(self, prefill_chunks=(), decode_contexts=()):
        return T


def test_k_max_bound_constant_engine_serves_k_requests_per_o_iterations():
    # every request is resident for o iterations (its prefill emits the first token, o - 1 decodes follow):
    # k_max residents serve k (p + o) / (o T) tokens/s; the fluid formula counts o - 1 and is above it
    p, o, k = np.full(200, 100), np.full(200, 50), 16
    res = simulate_capacity(Constant(), p, o, b_max=2048, k_max=k, kv_capacity_tokens=10 ** 7, n_requests=600,
                            replications=3, seed=7)
    exact = k * (100 + 50) / (50 * T)
    assert res.method == "simulate" and res.binding == "k_max"
    assert res.tokens_per_s == pytest.approx(exact, rel=0.01)
    assert res.ci[0] <= res.tokens_per_s <= res.ci[1] and len(res.replications) == 3
    fluid = predict_capacity(Constant(), p, o, b_max=2048, k_max=k, kv_capacity_tokens=None)
    assert fluid.tokens_per_s == pytest.approx(k * 150 / (49 * T), rel=1e-9)
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
