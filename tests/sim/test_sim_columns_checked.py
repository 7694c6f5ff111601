"""fluidq.simulate on a mapping of columns checks them as the trace loader checks a file (rev-bad W3):
no silent truncation, no raw numpy/Python errors, no silently shortened run."""
from __future__ import annotations

import pytest

import fluidq
from fluidq import Engine, Staircase
from fluidq.errors import ParameterError

ENG = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)


def cols(a=(0.0, 1.0), p=(1, 1), d=(1, 1)):
    return {"arrival_s": list(a), "prompt_tokens": list(p), "output_tokens": list(d)}


@pytest.mark.parametrize("data,name,words", [
    (cols(p=(1.7, 1)), "prompt_tokens", "whole number"),
    (cols(d=(1, 2.5)), "output_tokens", "whole number"),
    (cols(p=(float("nan"), 1)), "prompt_tokens", "whole number"),
    (cols(p=(1e30, 1)), "prompt_tokens", r"2\*\*31-1"),
    (cols(p=(2**40, 1)), "prompt_tokens", r"2\*\*31-1"),
    (cols(p=("1", "1")), "prompt_tokens", "whole number"),
    (cols(p=(True, 1)), "prompt_tokens", "boolean"),
    (cols(p=(0, 1)), "prompt_tokens", "below one token"),
    (cols(a=("0", "1")), "arrival_s", "seconds"),
    (cols(a=(True, False)), "arrival_s", "boolean"),
    (cols(a=(0.0, float("nan"))), "arrival_s", "finite"),
    (cols(a=(), p=(), d=()), "workload", "at least one request"),
])
def test_bad_columns_are_refused_by_name(data, name, words):
    with pytest.raises(ParameterError, match=words) as ei:
        fluidq.simulate(ENG, data, horizon_s=100.0)
    assert name in str(ei.value)


def test_more_requests_than_rows_is_refused():
    with pytest.raises(ParameterError, match="n_requests"):
        fluidq.simulate(ENG, cols(), n_requests=5)


def test_good_columns_run():
    import numpy as np

    res = fluidq.simulate(ENG, cols(p=(3.0, np.int32(4)), d=[2, 2]), n_requests=2)
    assert list(res.requests["prompt_tokens"]) == [3, 4]
    res = fluidq.simulate(ENG, {"arrival_s": np.array([0.0, 1.0]), "prompt_tokens": np.array([5, 6], np.uint16),
                                "output_tokens": np.array([1, 1])}, horizon_s=10.0)
    assert list(res.requests["prompt_tokens"]) == [5, 6]
