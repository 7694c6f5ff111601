"""``reasoning_workload`` checks its means and seed (found by the independent probe: ``mean_prompt=1e5`` gave a
table of 8,192-token prompts, clipped silently by an undocumented cap; ``mean_output=0.5`` a mean of 1.22 tokens;
``mean_output`` above ``max_output`` a workload named after a mean it does not have; ``seed=-1`` numpy's bare
ValueError)."""
import math

import pytest

from fluidq.errors import ParameterError
from fluidq.latency import REASONING_MAX_PROMPT, reasoning_workload


@pytest.mark.parametrize("kw, name", [
    ({"mean_prompt": 1e5}, "mean_prompt"),
    ({"mean_prompt": 0.5}, "mean_prompt"),
    ({"mean_prompt": math.nan}, "mean_prompt"),
    ({"mean_output": 0.5}, "mean_output"),
    ({"mean_output": 5000, "max_output": 1000}, "mean_output"),
    ({"seed": -1}, "seed"),
    ({"seed": 1.5}, "seed"),
])
def test_bad_arguments_name_the_parameter(kw, name):
    with pytest.raises(ParameterError, match=name):
        reasoning_workload(1.0, **kw)


def test_defaults_and_the_shipped_calls_unchanged():
    w = reasoning_workload(2.0)
    assert w.mean_prompt_tokens == pytest.approx(300, rel=0.02)
    assert max(w.prompt_tokens.values) <= REASONING_MAX_PROMPT == 8192
    assert reasoning_workload(1.0, mean_output=100, max_output=1000).mean_output_tokens == pytest.approx(100, rel=0.05)
    assert reasoning_workload(1.0, mean_prompt=REASONING_MAX_PROMPT).mean_prompt_tokens <= REASONING_MAX_PROMPT
