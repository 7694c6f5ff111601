"""Property tests: every solved chain is a probability distribution with flow balance."""
import numpy as np
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import fluidq
from fluidq.dtmc import build_dtmc
from fluidq.results import Status


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(b_max=st.integers(1, 8), policy=st.sampled_from(list(fluidq.policies.POLICY_NAMES)),
       prompt=st.integers(1, 4), geometric_prompt=st.booleans(), md=st.floats(1.0, 5.0),
       load=st.floats(0.05, 0.6))
def test_stationary_law_is_a_distribution_with_flow_balance(b_max, policy, prompt, geometric_prompt, md, load):
    e = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01, a=0.02, b0=4), b_max=b_max)
    pol = fluidq.policies.resolve_policy(policy)
    prompt = min(prompt, b_max)
    pr = fluidq.Geometric(mean_tokens=float(prompt)) if (geometric_prompt and pol.chunked) else prompt
    w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=1.0), prompt_tokens=pr,
                        output_tokens=fluidq.Geometric(mean_tokens=md))
    thr = fluidq.stability_threshold(e, w, pol).arrival_rate_per_s
    lam = load * thr
    ch = build_dtmc(e, w.with_rate(lam), pol, max_prefill=25, max_decode=25)
    r = ch.solve()
    assert r.status in (Status.STABLE, Status.INACCURATE)
    assert np.all(r.pi >= 0) and abs(r.pi.sum() - 1) < 1e-12
    assert np.allclose(np.asarray(ch.P.sum(axis=1)).ravel(), 1.0)
    if r.status == Status.STABLE:
        # what comes in goes out: completions per second equal the arrival rate
        assert abs(r.throughput_requests_per_s - lam) < 1e-5 * lam + 1e-9
        assert r.mean_requests >= 0 and r.mean_unprocessed_tokens >= 0
