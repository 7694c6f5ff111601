"""`fluidq simulate` with several policies and replications: the arrival cap counts every policy's runs, and
memory is bounded (one replication kept per policy at most, a progress line for the replications).

Before: 5 policies x 5 replications x 1.9e7 arrivals passed the 1e8 cap (it counted 5 runs, not 25) and grew to
14 GB with no output; every replication of every policy was kept (960 MB for 2 policies x 8 replications of
500 s at 1,000 req/s, 454 MB after)."""
import io

import numpy as np
import pytest

import fluidq
from fluidq.errors import ParameterError
from fluidq.sim.core import MAX_TOTAL_ARRIVALS, check_size

E = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)


def test_the_cap_counts_runs_times_policies(capsys):
    from fluidq.cli import main

    rc = main(["simulate", "--rate", "1000", "--horizon", "19000", "--replications", "5", "--policy", "sarathi",
               "--policy", "orca", "--policy", "vllm", "--policy", "fastertransformer", "--policy", "vllm-chunked"])
    err = capsys.readouterr().err
    assert rc == 2 and "--replications=5" in err and "5 policies" in err and "4.75e+08" in err, err


def test_check_size_counts_policies():
    w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=1000.0), prompt_tokens=100, output_tokens=100)
    h = MAX_TOTAL_ARRIVALS / 1000.0 / 6  # six runs fit, seven do not
    check_size(E, w, h, runs=2, policies=3)
    with pytest.raises(ParameterError, match="7 policies"):
        check_size(E, w, h, runs=1, policies=7)
    with pytest.raises(ParameterError, match="for each of 4 policies"):
        check_size(E, w, h, runs=2, policies=4)


def test_replicate_keeps_the_first_k_runs_and_the_same_verdict():
    w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=12.0), prompt_tokens=100, output_tokens=100)
    full = fluidq.replicate(E, w, "sarathi", n_replications=3, horizon_s=60, rng=5)
    one = fluidq.replicate(E, w, "sarathi", n_replications=3, horizon_s=60, rng=5, keep_runs=1)
    none = fluidq.replicate(E, w, "sarathi", n_replications=3, horizon_s=60, rng=5, keep_runs=False)
    assert len(full.runs) == 3 and len(one.runs) == 1 and len(none.runs) == 0
    assert one.runs[0].summary() == full.runs[0].summary()
    np.testing.assert_array_equal(one.slopes_tokens_per_s, full.slopes_tokens_per_s)
    assert one.verdict == full.verdict


class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_the_replications_path_keeps_one_run_and_shows_progress(monkeypatch):
    import sys

    import fluidq.sim as sim
    from fluidq.cli import main

    seen = []
    real = sim.replicate

    def spy(*a, **kw):
        seen.append(kw)
        return real(*a, **kw)

    monkeypatch.setattr(sim, "replicate", spy)
    err = _Tty()
    monkeypatch.setattr(sys, "stderr", err)
    rc = main(["simulate", "--rate", "12", "--horizon", "40", "--replications", "3", "--policy", "sarathi",
               "--policy", "orca"])
    assert rc == 0
    assert [kw["keep_runs"] for kw in seen] == [1, 1]
    assert all(callable(kw["progress"]) for kw in seen)
    assert "3/3 replications done" in err.getvalue()
