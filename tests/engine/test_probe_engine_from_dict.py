"""``Engine.from_dict`` names the key that is wrong (found by the independent probe: a missing
``batch_time`` was a bare KeyError, an unknown key a TypeError from the dataclass, a list a TypeError
from ``dict()``; none a FluidqError)."""
import pytest

import fluidq as fq
from fluidq.errors import DataError, FluidqError, ParameterError

BT = fq.Staircase(c=0.01, a=0.03, b0=128)


def test_round_trip():
    e = fq.Engine(batch_time=BT, b_max=512, k_max=32, kv_capacity_tokens=4096, memory=fq.engine.VLLM,
                  prefill_emits_token=True, name="e")
    assert fq.Engine.from_dict(e.to_dict()) == e


def test_missing_batch_time_names_it():
    with pytest.raises(DataError, match="'batch_time'"):
        fq.Engine.from_dict({"b_max": 3})


def test_missing_b_max_names_it():
    with pytest.raises(DataError, match="'b_max'"):
        fq.Engine.from_dict({"batch_time": BT.to_dict()})


def test_unknown_key_names_it():
    with pytest.raises(DataError, match="'foo'"):
        fq.Engine.from_dict({"b_max": 3, "batch_time": BT.to_dict(), "foo": 1})


@pytest.mark.parametrize("bad", [[1], "engine", None, 3])
def test_not_a_dict(bad):
    with pytest.raises(ParameterError, match="engine"):
        fq.Engine.from_dict(bad)


def test_bad_values_still_name_the_parameter():
    with pytest.raises(FluidqError, match="b_max"):
        fq.Engine.from_dict({"b_max": 0, "batch_time": BT.to_dict()})
