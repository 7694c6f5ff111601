"""A non-splitting scheduler's renewal threshold when no prompt fits the budget (issue 13: the report on
a trace of long prompts crashed with an empty-array error): the renewal method says why it cannot
answer, naming the budget, instead of failing inside numpy."""
import pytest

import fluidq
from fluidq.errors import FluidqError
from fluidq.policies import FasterTransformer


def test_renewal_threshold_with_every_prompt_longer_than_the_budget():
    e = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
    w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=0.1), prompt_tokens=fluidq.Empirical(values=[5000, 6000]),
                        output_tokens=20)
    with pytest.raises(FluidqError, match="no prompt fits the budget.*512 tokens"):
        fluidq.stability_threshold(e, w, FasterTransformer(chunk_long_prompts=True), method="renewal")
    # without splitting, every rate is unstable, and it says so
    r = fluidq.stability_threshold(e, w, FasterTransformer())
    assert r.arrival_rate_per_s == 0.0 and "longer than the budget" in r.reason


def test_vllm_renewal_threshold_at_a_huge_budget_says_why_it_cannot_answer():
    # issue 13: check --b-max 16777216 --policy vllm hung (each bisection step grew the queue chain to its
    # 4096-state cap and solved it densely)
    from fluidq.dtmc.threshold import MAX_VLLM_PROMPTS_PER_BATCH

    e = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=2**24)
    w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=1.0), prompt_tokens=100, output_tokens=100)
    with pytest.raises(FluidqError, match=f"holds 167,772 prompts.*at most {MAX_VLLM_PROMPTS_PER_BATCH:,}"):
        fluidq.stability_threshold(e, w, "vllm", method="renewal")
    r = fluidq.check_stability(e, w.with_rate(1.0), "vllm")
    assert r.status.value == "unknown" and "167,772 prompts" in r.reason
