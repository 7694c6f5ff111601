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
    # as the full sampler does: Workload.sample given chunk 0's generator (the child (0x5EEDC0DE, 0) of the
    # seed, as documented in sample_chunks) draws the very same times and rows
    from fluidq.workload import _STREAM_KEY

    root = np.random.SeedSequence(3)
    g = np.random.default_rng(np.random.SeedSequence(root.entropy, spawn_key=(*root.spawn_key, _STREAM_KEY, 0)))
    full = w.sample(g, n=50)
    assert all(np.array_equal(x, y) for x, y in zip((t, p, d), full))


def test_recorded_times_without_a_trace_are_chunked_with_lengths_drawn():
    # TraceArrivals with length distributions (no trace rows): the times are the recorded ones, in chunks, and the
    # lengths are drawn chunk by chunk (sample_chunks raised NotImplementedError: it asked for random gaps)
    from fluidq.workload import Geometric, TraceArrivals

    arr = TraceArrivals(times_s=tuple(np.arange(0.0, 40.0, 0.5)))
    w = Workload(arrival=arr, prompt_tokens=Geometric(mean_tokens=20), output_tokens=7)
    chunks = list(w.sample_chunks(5, horizon_s=30.0, chunk=16))
    t = np.concatenate([c[0] for c in chunks])
    np.testing.assert_array_equal(t, w.sample(np.random.default_rng(5), horizon_s=30.0)[0])
    assert [len(c[0]) for c in chunks] == [16, 16, 16, 13]
    p = np.concatenate([c[1] for c in chunks])
    assert len(p) == len(t) and np.all(p >= 1) and len(set(p.tolist())) > 5
    assert np.all(np.concatenate([c[2] for c in chunks]) == 7)
    again = np.concatenate([c[1] for c in w.sample_chunks(5, horizon_s=30.0, chunk=16)])
    np.testing.assert_array_equal(p, again)  # a function of the seed


def test_summary_run_of_recorded_times_without_a_trace():
    from fluidq import Engine, Staircase
    from fluidq.policies import Scheduler
    from fluidq.sim import simulate
    from fluidq.workload import TraceArrivals

    w = Workload(arrival=TraceArrivals(times_s=tuple(np.arange(0.0, 40.0, 2.0))), prompt_tokens=5, output_tokens=5)
    eng = Engine(batch_time=Staircase(c=0.01, a=0.02, b0=16), b_max=64, k_max=None)
    pol = Scheduler(name="s", priority="prefill", mixed=True, chunked=True)
    s = simulate(eng, w, pol, horizon_s=50, rng=1, record="summary")
    full = simulate(eng, w, pol, horizon_s=50, rng=1)
    assert s.streamed is not None
    assert s.n_finished == full.n_finished == 20  # fixed lengths, recorded times: the same run
    assert s.summary()["end_s"] == full.end_s and s.summary()["ttlt_s_mean"] == pytest.approx(full.metrics["ttlt_s"]["mean"])
