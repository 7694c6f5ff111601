"""A serving run that does not record its KV cache gets vLLM's memory planner's estimate (issue 16 item
4), stated as an estimate and from what, never a number written by hand in the case file."""
import numpy as np
import pytest

from fluidq.errors import DataError
from fluidq.models import kv_capacity_estimate, load_model
from fluidq.validate import validation_dir
from fluidq.validate.cases import Case, _planned_kv, load_cases
from fluidq.validate.runs import ServingRun


def _run(**engine_kwargs):
    """A ServingRun whose vllm_meta.json records only ``engine_kwargs`` (the budgets, and what a test adds):
    the options it leaves out take ServingRun's own defaults, as a run read from a folder does."""
    one = np.zeros(1)
    return ServingRun(name="x", path="x", input_tokens=one + 1, output_tokens=one + 1, arrival_s=one,
                      first_token_s=one, last_token_s=one, timeseries={},
                      meta={"engine_kwargs": {"max_num_batched_tokens": 2048, "max_num_seqs": 128, **engine_kwargs}})


RUN = _run()


def _case():
    return Case(name="x", kind="serving_run", source="", fast=False, spec={})


def test_the_estimate_is_the_memory_planner_and_says_so():
    tokens, note = _planned_kv(_case(), {"model": "Llama-3.1-8B", "gpu_memory_gib": 96,
                                         "gpu_memory_source": "a test"}, RUN)
    want = kv_capacity_estimate(load_model("Llama-3.1-8B"), gpu_memory_gib=96, max_num_batched_tokens=2048,
                                max_num_seqs=128).tokens
    assert tokens == want and tokens % 16 == 0
    assert "memory planner" in note and "96 GiB from a test" in note and "not recorded" in note
    assert "x 0.9, 16-token blocks, KV cache auto" in note  # vLLM's defaults, from ServingRun


def test_the_estimate_reads_the_runs_own_cache_options():
    """The run's recorded --gpu-memory-utilization, --block-size and --kv-cache-dtype enter the estimate."""
    run = _run(gpu_memory_utilization=0.8, block_size=32, kv_cache_dtype="fp8")
    tokens, note = _planned_kv(_case(), {"model": "Llama-3.1-8B", "gpu_memory_gib": 96}, run)
    want = kv_capacity_estimate(load_model("Llama-3.1-8B"), gpu_memory_gib=96, gpu_memory_utilization=0.8,
                                block_size=32, kv_bytes_per_value=1, max_num_batched_tokens=2048,
                                max_num_seqs=128).tokens
    assert tokens == want and "x 0.8, 32-token blocks, KV cache fp8" in note


@pytest.mark.parametrize("missing", ["model", "gpu_memory_gib"])
def test_a_kv_table_without_the_planner_inputs_is_refused(missing):
    spec = {"model": "Llama-3.1-8B", "gpu_memory_gib": 96}
    del spec[missing]
    with pytest.raises(DataError, match=missing):
        _planned_kv(_case(), spec, RUN)


def test_no_shipped_case_writes_a_kv_capacity_by_hand():
    for c in load_cases(validation_dir() / "cases"):
        kv = c.spec.get("kv")
        assert kv is None or "capacity_tokens" not in kv, c.name
