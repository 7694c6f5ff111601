"""The chains count ``d`` decode iterations for ``d`` output tokens; an engine whose prefill emits the first
token (``prefill_emits_token=True``) runs ``d - 1``.  The count chains refuse it, naming the field; the
memoryless-hop network chains give each request ``m_p + m_d - 1`` tokens on it (review of 2026-12-06)."""
import pytest

import fluidq as fq
from fluidq.dtmc.networks import fork_join, parallel_engines
from fluidq.errors import ParameterError

E0 = fq.Engine(batch_time=fq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
E = E0.with_(prefill_emits_token=True)
W = fq.Workload(arrival=fq.Poisson(rate_per_s=100.0), prompt_tokens=fq.Geometric(mean_tokens=10),
                output_tokens=fq.Geometric(mean_tokens=4))


def test_the_count_chain_refuses_an_engine_whose_prefill_emits():
    with pytest.raises(ParameterError, match="engine.prefill_emits_token"):
        fq.build_dtmc(E, W, "sarathi")
    fq.build_dtmc(E0, W, "sarathi", max_prefill=5, max_decode=5)  # the paper's engine is built as before


def test_the_hop_chains_count_the_work_per_request():
    assert parallel_engines(E0, W, cap=10).inputs["mean_tokens"] == 14.0
    assert parallel_engines(E, W, cap=10).inputs["mean_tokens"] == 13.0
    with pytest.raises(ParameterError, match="prefill_emits_token"):
        parallel_engines([E0, E], W, cap=10)
    assert fork_join(E, W, cap=6).inputs == fork_join(E0, W, cap=6, branch_tokens=(13.0, 13.0)).inputs
