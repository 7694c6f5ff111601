"""simulate(record="summary"): the same summary and metrics as the full run, and no array kept."""
import numpy as np
import pytest

import fluidq
from fluidq import Engine, Poisson, Staircase, Workload
from fluidq.errors import ParameterError
from fluidq.sim import SimSummary

E = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
W = Workload(arrival=Poisson(rate_per_s=12.0), prompt_tokens=100, output_tokens=100)


def _arrays(x):
    if isinstance(x, np.ndarray):
        return 1
    if isinstance(x, dict):
        return sum(_arrays(v) for v in x.values())
    if isinstance(x, (list, tuple)):
        return sum(_arrays(v) for v in x)
    return 0


@pytest.mark.parametrize("policy, kv", [("sarathi", None), ("vllm", 20_000)])
def test_summary_keeps_no_array(policy, kv):
    e = E.with_(kv_capacity_tokens=kv)
    s = fluidq.simulate(e, W, policy, horizon_s=120, rng=3, record="summary")
    assert isinstance(s, SimSummary)
    assert _arrays(vars(s)) == 0  # nothing per request or per event
    assert set(s.to_dict()) >= {"summary", "metrics", "ttft_definition", "inputs"}


def test_a_summary_with_kv_memory_is_the_full_run_summarised():
    # KV memory is not streamed: the full run, summarised (tests/sim/test_summary_stream.py has the streamed
    # runs, equal to the full run of the same sample)
    e = E.with_(kv_capacity_tokens=20_000)
    full = fluidq.simulate(e, W, "vllm", horizon_s=120, rng=3)
    s = fluidq.simulate(e, W, "vllm", horizon_s=120, rng=3, record="summary")
    assert s.streamed is None
    assert s.to_dict() == full.to_dict()
    assert (s.n_finished, s.throughput_tokens_per_s) == (full.n_finished, full.throughput_tokens_per_s)


def test_bad_record_values_are_refused():
    with pytest.raises(ParameterError, match="record"):
        fluidq.simulate(E, W, horizon_s=10, record="some")
    with pytest.raises(ParameterError, match="record"):
        fluidq.simulate(E, W, horizon_s=10, record="summary", record_iterations=True)
