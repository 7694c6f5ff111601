"""The chain against the iteration-level simulator on the same model (seeded replications, CIs)."""
import pytest

import fluidq
from fluidq.dtmc import build_dtmc

G = fluidq.Geometric


def wl(rate, prompt, output):
    return fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=rate), prompt_tokens=prompt, output_tokens=output)


@pytest.mark.parametrize("policy,prompt", [("sarathi", G(mean_tokens=6)), ("vllm", 4)])
def test_mean_requests_agree_with_simulation(small_engine, policy, prompt):
    w = wl(4.0, prompt, G(mean_tokens=8))
    r = build_dtmc(small_engine, w, policy, max_prefill=40, max_decode=80).solve()
    assert r.status.value == "stable"
    rep = fluidq.replicate(small_engine, w, policy, n_replications=8, horizon_s=400.0, rng=20261202,
                           confidence=0.99, start_frac=0.1, keep_runs=False)
    lo, hi = rep.mean_requests_ci
    assert lo <= r.mean_requests <= hi, (r.mean_requests, rep.mean_requests_ci)


@pytest.mark.parametrize("policy,lo,hi,horizon", [("vllm", 0.8, 1.2, 600.0),
                                                  ("fastertransformer", 0.6, 1.4, 6000.0)])
def test_renewal_threshold_inside_the_simulation_bracket(paper_engine, policy, lo, hi, horizon):
    # reference workload (129, 112), b_max = 512: the simulator's confidence bracket contains the
    # renewal threshold, and its upper end is below Theorem 2's rate -- independent evidence that
    # the scheduler is strictly less stable than a work-conserving one
    w = wl(1.0, 129, 112)
    thr = fluidq.stability_threshold(paper_engine, w, policy)
    sim = fluidq.find_threshold(paper_engine, w, policy, rng=7, rel_tol=0.1, n_replications=6,
                                low_rate_per_s=lo * thr.arrival_rate_per_s, high_rate_per_s=hi * thr.arrival_rate_per_s,
                                horizon_s=horizon)
    assert sim.low_rate_per_s <= thr.arrival_rate_per_s <= sim.high_rate_per_s, sim.reason
    assert sim.high_rate_per_s < thr.work_conserving_rate_per_s


def test_renewal_threshold_against_a_short_simulation_bracket(small_engine):
    # fast variant of the slow check: FT on a small engine, the renewal rate lies in the bracket
    w = wl(1.0, 4, 6)
    thr = fluidq.stability_threshold(small_engine, w, "fastertransformer").arrival_rate_per_s
    sim = fluidq.find_threshold(small_engine, w, "fastertransformer", low_rate_per_s=0.6 * thr,
                                high_rate_per_s=1.5 * thr, rel_tol=0.15, n_replications=4, horizon_s=300.0, rng=11)
    assert sim.low_rate_per_s <= thr <= sim.high_rate_per_s, sim.reason


def test_ft_renewal_with_random_prompts_inside_the_simulation_bracket(paper_engine):
    # i.i.d. prompt lengths: the head-prompt Markov-renewal threshold against the simulator
    w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=1.0),
                        prompt_tokens=fluidq.Empirical(values=(50, 100, 200), weights=(1, 2, 1)),
                        output_tokens=G(mean_tokens=50))
    thr = fluidq.stability_threshold(paper_engine, w, "fastertransformer")
    assert thr.method == "renewal"
    sim = fluidq.find_threshold(paper_engine, w, "fastertransformer", rng=3, rel_tol=0.05, n_replications=6,
                                low_rate_per_s=0.8 * thr.arrival_rate_per_s,
                                high_rate_per_s=1.25 * thr.arrival_rate_per_s, horizon_s=8000.0)
    assert sim.low_rate_per_s <= thr.arrival_rate_per_s <= sim.high_rate_per_s, sim.reason


def test_simulation_method_wraps_find_threshold(small_engine):
    w = wl(1.0, 4, 6)
    ren = fluidq.stability_threshold(small_engine, w, "fastertransformer")
    sim = fluidq.stability_threshold(small_engine, w, "fastertransformer", method="simulation", rng=5,
                                     low_rate_per_s=0.6 * ren.arrival_rate_per_s,
                                     high_rate_per_s=1.5 * ren.arrival_rate_per_s, rel_tol=0.2,
                                     n_replications=4, horizon_s=300.0)
    assert sim.method == "simulation"
    assert sim.lower_per_s <= ren.arrival_rate_per_s <= sim.upper_per_s
    assert sim.to_dict()["details"]["simulation"]["policy"] == "fastertransformer"
