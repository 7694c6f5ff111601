"""vLLM refuses ``--max-num-batched-tokens`` below ``--max-num-seqs`` (its ``SchedulerConfig`` check: every running
sequence needs a token of the iteration's budget); fluidq's faces of a vLLM deployment refuse it the same way.

A new user's review of the disaggregated commands (h-pdreview) found ``fluidq disagg`` sizing 33 + 7 engines at a
budget of 1 token with ``max_num_seqs`` 256, and ``capacity --gpu`` answering for the same arguments.
"""
import pytest

from fluidq.engine import roofline_engine
from fluidq.errors import ParameterError
from fluidq.models import kv_capacity_estimate, load_model
from fluidq.testing.cli import assert_one_line, run_cli
from fluidq.validate.roofline import predict_roofline_deployment


def test_the_library_faces_refuse_a_budget_below_the_sequence_limit():
    with pytest.raises(ParameterError) as e:
        roofline_engine("Llama-3.1-8B", "H100", b_max=64, k_max=256)
    assert e.value.name == "b_max" and "max_num_seqs (256)" in str(e.value)
    with pytest.raises(ParameterError) as e:  # a cache given: the planner does not run, the engine still refuses
        roofline_engine("Llama-3.1-8B", "H100", b_max=64, k_max=256, kv_capacity_tokens=100_000)
    assert e.value.name == "b_max"
    with pytest.raises(ParameterError) as e:
        kv_capacity_estimate(load_model("Llama-3.1-8B"), gpu_memory_gib=79.2, max_num_batched_tokens=255,
                             max_num_seqs=256)
    assert e.value.name == "max_num_batched_tokens"
    with pytest.raises(ParameterError) as e:
        predict_roofline_deployment("Llama-3.1-8B", "H100", max_num_seqs=256, max_num_batched_tokens=1,
                                    input_tokens=100, output_tokens=100)
    assert e.value.name == "max_num_batched_tokens"


def test_a_budget_equal_to_the_sequence_limit_or_no_limit_is_taken():
    assert roofline_engine("Llama-3.1-8B", "H100", b_max=256, k_max=256).b_max == 256
    assert roofline_engine("Llama-3.1-8B", "H100", b_max=64, k_max=None).k_max is None


@pytest.mark.parametrize("argv", [
    ["capacity", "--model", "Llama-3.1-8B", "--gpu", "H100"],
    ["check", "--model", "Llama-3.1-8B", "--gpu", "H100", "--load", "0.5"],
    ["region", "--model", "Llama-3.1-8B", "--gpu", "H100"],
    ["disagg", "--model", "Llama-3.1-8B", "--gpu", "H100", "--prefill-engines", "1", "--decode-engines", "1"],
    ["disagg", "--model", "Llama-3.1-8B", "--gpu", "H100", "--rate", "5"],
])
def test_the_command_line_names_the_flag(argv, capsys):
    assert_one_line(argv + ["--max-num-seqs", "256", "--max-num-batched-tokens", "64"], capsys,
                    "--max-num-batched-tokens=64", "at least --max-num-seqs (256)")
    rc, out, err = run_cli(argv + ["--max-num-seqs", "64", "--max-num-batched-tokens", "64"], capsys)
    assert rc == 0, err
