"""The simulated benchmark is a Poisson benchmark at the run's mean rate: only for runs whose arrivals are that
(review indep2 #4).

``validate --run``'s row "capacity (fluidq.simulate of the benchmark, steady state)" re-draws Poisson gaps at the
run's mean rate.  For a run whose rate ramps (a reviewer's run: 6 -> 180 req/s) that simulation never saturated
and the row missed by -34 %.  :func:`fluidq.validate.runs.steady_poisson_arrivals` tests the arrivals (counts per
tenth of the span by the dispersion test, gaps by Kolmogorov-Smirnov against the exponential, each at p < 0.001);
a run that fails is not simulated so, and the row says why (the replay row simulates its own arrivals).
"""
import numpy as np
import pytest

import synth_run as sr
from fluidq.models import load_model
from fluidq.validate import validate
from fluidq.validate.runs import read_run, steady_poisson_arrivals

SIM = "capacity (fluidq.simulate of the benchmark, steady state)"


def _ramp(n, rate, rng):
    """The reviewer's ramp: the rate grows linearly from rate/10 to 3 x rate over the run."""
    out, t = [0.0], 0.0
    for i in range(n - 1):
        t += rng.exponential(1.0 / (rate * (0.1 + 2.9 * i / n)))
        out.append(t)
    return np.array(out)


def test_poisson_runs_pass_and_ramps_or_fixed_gaps_do_not():
    rejected = 0
    for seed in range(1000):
        a = np.cumsum(np.random.default_rng(seed).exponential(1 / 10.0, 300))
        rejected += not steady_poisson_arrivals(a)["steady"]
    # two tests at 0.001 each: about 0.2 % of Poisson runs rejected; 1 % is 8 x that (binomial p < 1e-4)
    assert rejected <= 10, rejected
    for seed in range(20):
        r = steady_poisson_arrivals(_ramp(600, 30.0, np.random.default_rng(seed)))
        assert not r["steady"] and "not one steady rate" in r["note"]
    fixed = steady_poisson_arrivals(np.arange(300) * 0.1)
    assert not fixed["steady"] and "gaps not exponential" in fixed["note"]


def test_the_shipped_runs_are_poisson_at_a_steady_rate(data_dir):
    for name in ("RTX4090_Llama-3.1-8B", "RTXPRO6000_Llama-3.1-8B", "RTXPRO6000_Qwen3-30B-A3B-Instruct-2507"):
        run = read_run(data_dir / "llmservingsim" / name)
        assert steady_poisson_arrivals(run.sent_s)["steady"], name


def test_a_ramping_benchmark_is_not_simulated_as_a_poisson_one(tmp_path):
    a = _ramp(700, 60.0, np.random.default_rng(1))
    d, _ = sr.synthesize(tmp_path / "ramp", facts=load_model("Llama-3.1-8B"), model_name="meta-llama/Llama-3.1-8B",
                         max_num_seqs=64, kv_blocks=20000, rate_per_s=60.0, n=a.size, arrival_s=a)
    res = validate(run=d)
    by = {r.quantity: r for r in res.rows}
    row = by[SIM]
    assert row.status == "skip" and row.predicted is None and "not one steady rate" in row.note, row.note
    assert np.isfinite(by["capacity (served tokens/s, steady state)"].measured)
