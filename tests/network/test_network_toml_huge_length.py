"""A network case with ``prompt = 1e300`` is refused with the value as typed, compactly: the message printed the
float turned into a 301-digit integer (``_length`` made every whole float an int)."""
import pytest

from fluidq.errors import FluidqError
from fluidq.network.toml import network_from_dict


def _case(prompt):
    st = {"batch_time": {"kind": "staircase", "c": 0.01128, "a": 0.03547, "b0": 128}, "b_max": 512}
    return {"name": "big", "engines": {"E1": st},
            "classes": [{"name": "chat", "rate_per_s": 1.0, "route": [{"engine": "E1", "prompt": prompt, "output": 100}]}]}


@pytest.mark.parametrize("prompt, shown", [(1e300, "1e+300"), (1e20, "1e+20"), (2.0 ** 60, "1.152921504606847e+18")])
def test_a_huge_whole_float_is_refused_compactly(prompt, shown):
    with pytest.raises(FluidqError) as ei:
        network_from_dict(_case(prompt))
    msg = str(ei.value)
    assert f"prompt_tokens={shown}:" in msg and len(msg) < 400, msg


def test_a_whole_float_within_range_is_still_a_whole_number_of_tokens():
    net = network_from_dict(_case(100.0))
    hop = net.classes[0].route[0]
    assert hop.prompt_tokens.mean == 100
