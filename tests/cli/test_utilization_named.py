"""A lowered ``--gpu-memory-utilization`` that leaves no KV room is named as such (user6a, finding 6a).

Before: ``capacity --gpu A10G --model Gemma-2-9B --gpu-memory-utilization 0.5`` failed naming
``--gpu='A10G with --tensor-parallel-size 1'`` ("expected a deployment that fits"), although the deployment fits
at vLLM's default 0.9.  Now the planner names ``gpu_memory_utilization`` (the CLI's flag) and the least value that
leaves a KV block, where the default fits; where it does not (Llama-3.1-70B on one A10G) the GPU is still named.
"""
import pytest

from cli_err import cli_error
from fluidq.cli import main
from fluidq.errors import ParameterError
from fluidq.models import kv_capacity_estimate, load_gpu, load_model


_err = cli_error  # tests/cli/cli_err.py


def test_the_flag_is_named_with_the_least_that_fits(capsys):
    err = _err(["capacity", "--gpu", "A10G", "--model", "Gemma-2-9B", "--gpu-memory-utilization", "0.5"], capsys)
    assert "--gpu-memory-utilization=0.5: expected a utilization that leaves room for the KV cache" in err, err
    assert "it fits from --gpu-memory-utilization 0.84" in err and "--gpu=" not in err, err


def test_the_least_is_the_least():
    """0.84 leaves a block (the planner answers), 0.83 does not."""
    m, gib = load_model("Gemma-2-9B"), load_gpu("A10G").memory_gib
    assert kv_capacity_estimate(m, gpu_memory_gib=gib, gpu_memory_utilization=0.84).blocks >= 1
    with pytest.raises(ParameterError) as e:
        kv_capacity_estimate(m, gpu_memory_gib=gib, gpu_memory_utilization=0.83)
    assert e.value.name == "gpu_memory_utilization"


def test_a_deployment_that_never_fits_names_the_gpu(capsys):
    err = _err(["capacity", "--gpu", "A10G", "--model", "Llama-3.1-70B", "--gpu-memory-utilization", "0.5"], capsys)
    assert "--gpu='A10G with --tensor-parallel-size 1'" in err and "it fits from --tensor-parallel-size" in err, err
