"""A rate of NaN given to a trace's arrivals is refused, not read as "the trace's own rate".

Found by the independent probe: ``TraceArrivals.with_rate(nan)`` and ``Workload.from_trace(path,
rate_per_s=nan)`` returned the trace at its native rate (NaN was the "not given" marker), and
``Arrival.with_rate`` checked nothing itself.
"""
import math

import pytest

import fluidq as fq
from fluidq.errors import ParameterError


@pytest.mark.parametrize("bad", [math.nan, -1.0, 0.0, math.inf])
def test_trace_arrivals_with_rate_refuses_bad_rates(bad):
    ta = fq.TraceArrivals(times_s=(0.0, 1.0, 2.0, 3.0))
    with pytest.raises(ParameterError, match="rate_per_s"):
        ta.with_rate(bad)


def test_trace_arrivals_explicit_nan_rate_is_refused():
    with pytest.raises(ParameterError, match="rate_per_s"):
        fq.TraceArrivals(times_s=(0.0, 1.0, 2.0), rate_per_s=math.nan)


@pytest.mark.parametrize("cls", [fq.Poisson, fq.Periodic, fq.Gamma])
def test_with_rate_checks_for_every_process(cls):
    with pytest.raises(ParameterError, match="rate_per_s"):
        cls(rate_per_s=1.0).with_rate(math.nan)


def test_trace_default_rate_and_rescaling_unchanged():
    ta = fq.TraceArrivals(times_s=(0.0, 1.0, 2.0, 3.0))
    assert ta.rate_per_s == pytest.approx(1.0)
    fast = ta.with_rate(2.0)
    assert fast.rate_per_s == 2.0
    assert list(fast.times()) == pytest.approx([0.0, 0.5, 1.0, 1.5])


def test_from_trace_nan_rate_is_refused(tmp_path):
    p = tmp_path / "t.csv"
    p.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                 "2023-11-16 18:15:46.000000,10,2\n2023-11-16 18:15:47.000000,12,3\n"
                 "2023-11-16 18:15:49.000000,14,4\n")
    assert fq.Workload.from_trace(str(p)).arrival_rate_per_s == pytest.approx(2 / 3)
    with pytest.raises(ParameterError, match="rate_per_s"):
        fq.Workload.from_trace(str(p), rate_per_s=math.nan)
