"""``--gpu``/``--model`` where the analysis takes a roofline deployment (``latency``, sweep keys ``gpu``, ``model``,
``tensor_parallel_size``), and a refusal saying why where it does not (``network``: the engines are the case file's;
``dtmc``: the chain has no KV cache or context)."""
import json

import pytest

from fluidq import Poisson, Workload, max_throughput
from fluidq.engine import roofline_engine
from fluidq.errors import ParameterError
from fluidq.sweep import Grid
from fluidq.sweep.analyses import capacity, check_grid_values, point_engine
from fluidq.testing.cli import assert_one_line, run_cli


def test_latency_takes_a_roofline_engine(capsys):
    rc, out, err = run_cli(["latency", "--gpu", "H100", "--model", "Llama-3.1-8B", "--orderings", "fcfs",
                            "--loads", "0.3", "--horizon", "3", "--replications", "1", "--prompt", "200",
                            "--output", "20", "--json"], capsys)
    assert rc in (0, None), err
    d = json.loads(out)
    eng = roofline_engine("Llama-3.1-8B", "H100")
    assert d["inputs"]["engine"]["kv_capacity_tokens"] == eng.kv_capacity_tokens
    assert d["inputs"]["engine"]["name"] == eng.name


def test_latency_gpu_refuses_a_profile(capsys):
    assert_one_line(["latency", "--gpu", "H100", "--model", "Llama-3.1-8B", "--profile", "paper-codellama34b-a100"],
                    capsys, "--gpu describes the engine itself", "--profile")


def test_sweep_points_take_a_roofline_deployment():
    point = {"gpu": "H100", "model": "Llama-3.1-70B", "tensor_parallel_size": 4, "prompt_tokens": 1000,
             "output_tokens": 200}
    eng = point_engine(point)
    assert eng == roofline_engine("Llama-3.1-70B", "H100", tensor_parallel_size=4)
    w = Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=1000, output_tokens=200)
    row = capacity(point)  # the headline is fluidq capacity --gpu's, max_throughput its own column (h-user6b)
    assert row["max_throughput_requests_per_s"] == pytest.approx(max_throughput(eng, w).requests_per_s, rel=1e-12)
    from fluidq.validate.roofline import predict_roofline_deployment

    head = predict_roofline_deployment("Llama-3.1-70B", "H100", input_tokens=1000, output_tokens=200,
                                       tensor_parallel_size=4)
    assert row["capacity_basis"] == "vllm_roofline"
    assert row["requests_per_s"] == pytest.approx(head.requests_per_s, rel=1e-12)
    check_grid_values(Grid(axes={"tensor_parallel_size": [4, 8]}, fixed={"gpu": "H100", "model": "Llama-3.1-70B"}),
                      "capacity")


@pytest.mark.parametrize("fixed, needle", [
    ({"gpu": "H100"}, "'gpu' and 'model' together"),
    ({"gpu": "H100", "model": "Llama-3.1-8B", "profile": "paper-codellama34b-a100"}, "no 'profile' with 'gpu'"),
    ({"tensor_parallel_size": 2}, "'gpu' and 'model' with it"),
    ({"gpu": "H1OO", "model": "Llama-3.1-8B"}, "did you mean H100"),
    ({"gpu": "H100", "model": "Llama-3.1-8X"}, "did you mean Llama-3.1-8B"),
])
def test_sweep_roofline_keys_checked_before_any_point(fixed, needle):
    with pytest.raises(ParameterError) as exc:
        check_grid_values(Grid(axes={"prompt_tokens": [100]}, fixed=fixed), "capacity")
    assert needle in str(exc.value)


def test_sweep_error_lists_the_roofline_keys(capsys, tmp_path):
    case = tmp_path / "s.toml"
    case.write_text('[sweep]\nanalysis = "capacity"\n[fixed]\ngpus = "H100"\n[grid]\nprompt_tokens = [100]\n')
    err = assert_one_line(["sweep", str(case)], capsys, "gpus")
    assert "gpu" in err.replace("gpus", "") and "model" in err and "tensor_parallel_size" in err


@pytest.mark.parametrize("argv, needle", [
    (["network", "fork_join", "--gpu", "H100", "--model", "Llama-3.1-8B"], 'kind = "roofline"'),
    (["network", "fork_join", "--model", "Llama-3.1-8B"], "the engines are the case file's stations"),
    (["dtmc", "--gpu", "H100", "--rate", "1"], "the chain holds no KV cache"),
])
def test_refused_where_the_analysis_cannot_take_it(capsys, argv, needle):
    assert_one_line(argv, capsys, "takes no --", needle)
