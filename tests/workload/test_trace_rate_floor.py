"""A trace whose mean arrival rate is below the least rate fluidq models (fluidq._validate.MIN_RATE_PER_S,
1e-9 req/s) is refused by Workload.from_trace naming the file, its time column and the rate
(fluidq.workload.traces.Trace.check_rate, review revbad2 L4), not as the internal parameter rate_per_s; a trace
at the floor itself loads.  The times are within what a file may hold (MAX_SECONDS, 1e12 s)."""
import pytest

from fluidq._validate import MIN_RATE_PER_S
from fluidq.errors import DataError
from fluidq.workload import Workload


def _csv(tmp_path, last_s, header="arrival_s"):
    f = tmp_path / "t.csv"
    f.write_text(f"{header},prompt_tokens,output_tokens\n0,10,5\n{last_s!r},10,5\n")
    return f


def test_below_the_floor_is_refused_naming_the_trace_and_column(tmp_path):
    span = 1e12  # two requests: a mean rate of 1e-12 req/s, a thousandth of the floor
    f = _csv(tmp_path, span)
    with pytest.raises(DataError) as err:
        Workload.from_trace(f)
    msg = str(err.value)
    assert str(f) in msg and "(column arrival_s)" in msg and "a mean rate of 1e-12 req/s" in msg, msg
    assert f"expected at least {MIN_RATE_PER_S:g} req/s" in msg and "rate_per_s" not in msg, msg


def test_at_the_floor_loads(tmp_path):
    wl = Workload.from_trace(_csv(tmp_path, 1 / MIN_RATE_PER_S))  # (2 - 1) / 1e9 s: the floor itself
    assert wl.trace.rate_per_s == MIN_RATE_PER_S
