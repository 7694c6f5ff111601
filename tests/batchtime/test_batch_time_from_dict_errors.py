"""batch_time_from_dict: a malformed description is one FluidqError naming the key (no raw TypeError/KeyError)."""
from __future__ import annotations

import pytest

from fluidq.batchtime.models import Affine, ContextAware, batch_time_from_dict
from fluidq.errors import DataError, FluidqError, ParameterError


@pytest.mark.parametrize("d, err, words", [
    ({"kind": "affine", "c": 0.1}, DataError, "needs key 'a'"),
    ({"kind": "affine", "c": 0.1, "a": 0.1, "zz": 1}, DataError, "unknown key 'zz'"),
    ({"kind": "context_aware", "base": 5, "kv_s_per_token": 1e-6}, ParameterError, "batch_time"),
    ({"kind": "context_aware", "base": {"kind": "affine", "c": 0.1, "a": 0.2}}, DataError, "needs key 'kv_s_per_token'"),
    (5, ParameterError, "batch_time"),
    ({"kind": "nope"}, FluidqError, "nope"),
])
def test_bad_descriptions_are_named(d, err, words):
    with pytest.raises(err, match=words):
        batch_time_from_dict(d)


def test_good_descriptions_round_trip():
    for m in (Affine(c=0.1, a=0.2), ContextAware(base=Affine(c=0.1, a=0.2), kv_s_per_token=1e-6)):
        assert batch_time_from_dict(m.to_dict()) == m
