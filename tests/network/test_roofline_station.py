"""A network case file's roofline engine (``batch_time = { kind = "roofline", ... }``) is the command line's
``--gpu``/``--model`` engine (fluidq.engine.roofline_engine, one code path), with clear errors."""
import json

import pytest

from fluidq import Poisson, Workload, max_throughput
from fluidq.engine import roofline_engine
from fluidq.errors import FluidqError
from fluidq.network.toml import network_from_dict
from fluidq.testing.cli import run_cli


def _case(bt, **engine):
    return {"name": "r", "engines": {"E": {"batch_time": bt, **engine}},
            "classes": [{"name": "A", "rate_per_s": 1.0, "route": [{"engine": "E", "prompt": 1000, "output": 200}]}]}


def test_roofline_station_is_the_cli_gpu_engine(capsys):
    net = network_from_dict(_case({"kind": "roofline", "model": "Llama-3.1-70B", "gpu": "H100",
                                   "tensor_parallel_size": 4}))
    eng = net.stations[0].engine
    api = roofline_engine("Llama-3.1-70B", "H100", tensor_parallel_size=4)
    assert eng.with_(name=api.name) == api
    assert (eng.b_max, eng.k_max, eng.prefill_emits_token) == (2048, 256, True)
    # the CLI's --gpu engine: the region line of `fluidq capacity --gpu` is max_throughput of this engine
    rc, out, _ = run_cli(["capacity", "--model", "Llama-3.1-70B", "--gpu", "H100", "--tensor-parallel-size", "4",
                          "--input-len", "1000", "--output-len", "200", "--json"], capsys)
    w = Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=1000, output_tokens=200)
    assert rc == 0
    assert json.loads(out)["stability_region"]["requests_per_s"] == pytest.approx(
        max_throughput(eng, w).requests_per_s, rel=1e-12)


def test_roofline_station_takes_budgets_kv_dtype_and_a_config(tmp_path):
    net = network_from_dict(_case({"kind": "roofline", "model": "Llama-3.1-8B", "gpu": "A100", "dtype": "float16",
                                   "gpu_memory_utilization": 0.8}, b_max=4096, k_max=128, kv_capacity_tokens=123456))
    eng = net.stations[0].engine
    assert (eng.b_max, eng.k_max, eng.kv_capacity_tokens) == (4096, 128, 123456)
    assert eng.batch_time.base.model.dtype == "float16"
    planned = network_from_dict(_case({"kind": "roofline", "model": "Llama-3.1-8B", "gpu": "A100",
                                       "gpu_memory_utilization": 0.8})).stations[0].engine
    assert planned.kv_capacity_tokens == roofline_engine("Llama-3.1-8B", "A100",
                                                         gpu_memory_utilization=0.8).kv_capacity_tokens
    cfg = {"model_type": "llama", "num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,
           "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256, "torch_dtype": "bfloat16",
           "max_position_embeddings": 131072}
    (tmp_path / "config.json").write_text(json.dumps(cfg))
    case = tmp_path / "case.toml"
    case.write_text('[engines.E]\nbatch_time = { kind = "roofline", model_config = "config.json", gpu = "H100" }\n'
                    '[[classes]]\nname = "A"\nrate_per_s = 1.0\nroute = [{ engine = "E", prompt = 10, output = 10 }]\n')
    from fluidq.network.toml import load_network

    assert load_network(case).stations[0].engine.batch_time.base.model.n_layers == 32  # relative to the file


@pytest.mark.parametrize("bt, needle", [
    ({"kind": "roofline", "gpu": "H100"}, "needs the model"),
    ({"kind": "roofline", "model": "Llama-3.1-8B"}, "needs gpu"),
    ({"kind": "roofline", "model": "Llama-3.1-70X", "gpu": "H100"}, "did you mean Llama-3.1-70B"),
    ({"kind": "roofline", "model": "Llama-3.1-8B", "gpu": "H1OO"}, "did you mean H100"),
    ({"kind": "roofline", "model": "Llama-3.1-8B", "gpu": "H100", "tp": 2}, "unknown key 'tp'"),
    ({"kind": "roofline", "model": "Llama-3.1-70B", "gpu": "H100", "tensor_parallel_size": 3},
     "tensor_parallel_size=3"),
    ({"kind": "roofline", "model": "Llama-3.1-70B", "gpu": "L4"}, "gpu='L4 with tensor_parallel_size 1'"),
])
def test_roofline_station_errors_name_the_key(bt, needle):
    with pytest.raises(FluidqError) as exc:
        network_from_dict(_case(bt))
    msg = str(exc.value)
    assert msg.startswith("<dict> engine 'E' batch_time: ") and needle in msg and "\n" not in msg
