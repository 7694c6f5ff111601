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


# one key check for Engine.from_dict and Memory.from_dict (fluidq.engine.memory.check_keys): the messages of
# both, recorded before they shared it (2026-12-06), and a mixed-type key that Memory's own check could not sort
@pytest.mark.parametrize("cls, d, err, text", [
    (fq.Engine, {"b_max": 3, "batch_time": BT.to_dict(), "zz": 1, "aa": 2}, DataError,
     "engine: unknown key 'aa' (keys: async_scheduling, b_max, batch_time, k_max, kv_capacity_tokens, memory, name, "
     "prefill_emits_token)"),
    (fq.engine.Memory, {"zz": 1, "aa": 2}, DataError,
     "memory: unknown key 'aa' (keys: block_size, kind, preemption, prefix_caching, reservation, victim)"),
    (fq.engine.Memory, [1], ParameterError, "memory=[1]: expected a table/dict of Memory fields"),
    (fq.Engine, {"b_max": 3, "batch_time": BT.to_dict(), "memory": {"bogus": 1}}, DataError,
     "memory: unknown key 'bogus' (keys: block_size, kind, preemption, prefix_caching, reservation, victim)"),
    (fq.Engine, {1: 2, "x": 3}, DataError, "engine: unknown key 1 (keys: "),
    (fq.engine.Memory, {1: 2, "x": 3}, DataError, "memory: unknown key 1 (keys: "),  # was a TypeError from sorted()
])
def test_both_from_dicts_name_the_key_alike(cls, d, err, text):
    with pytest.raises(err) as info:
        cls.from_dict(d)
    assert str(info.value).startswith(text)
