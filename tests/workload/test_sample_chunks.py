"""Workload.sample and Workload.sample_chunks: the same checks and the same length draws (one code for both)."""
import numpy as np
import pytest

from fluidq import Poisson, Workload
from fluidq.errors import ParameterError
from fluidq.workload import load_trace


def _refusal(f):
    with pytest.raises(ParameterError) as e:
        f()
    return str(e.value)


def test_both_samplers_refuse_a_horizon_with_too_many_arrivals_alike():
    w = Workload(arrival=Poisson(rate_per_s=1000.0), prompt_tokens=5, output_tokens=5)
    full = _refusal(lambda: w.sample(np.random.default_rng(1), horizon_s=1e9))
    chunked = _refusal(lambda: next(w.sample_chunks(1, horizon_s=1e9)))
    assert full == chunked and "horizon_s" in full and "expected arrivals" in full


def test_a_chunk_draws_trace_rows_as_the_full_sampler_does():
    # one chunk from its own generator: the lengths are the trace rows the full sampler draws after the same gaps
    tr = load_trace("azure-conv")
    w = Workload(arrival=Poisson(rate_per_s=5.0), prompt_tokens=5, output_tokens=5, trace=tr)
    (t, p, d), = list(w.sample_chunks(3, n=50, chunk=64))
    rows = list(zip(tr.prompt_tokens, tr.output_tokens))
    assert len(t) == len(p) == len(d) == 50
    assert all((int(a), int(b)) in rows for a, b in zip(p, d))
    assert p.dtype == d.dtype == np.int64
