"""A CSV trace (seconds) and a Mooncake trace (milliseconds) end their time range at the same instant:
fluidq.workload.traces.MAX_SECONDS is derived from MAX_TIMESTAMP_MS, not written again."""
import pytest

from fluidq.errors import DataError
from fluidq.workload.traces import MAX_SECONDS, MAX_TIMESTAMP_MS, load_trace


def _csv(tmp_path, t):
    f = tmp_path / "t.csv"
    f.write_text(f"arrival_s,prompt_tokens,output_tokens\n0,10,5\n{t!r},10,5\n")
    return f


def _mooncake(tmp_path, ms):
    f = tmp_path / "t.jsonl"
    f.write_text('{"timestamp": 0, "input_length": 10, "output_length": 5}\n'
                 f'{{"timestamp": {ms!r}, "input_length": 10, "output_length": 5}}\n')
    return f


def test_both_formats_end_at_the_same_instant(tmp_path):
    assert MAX_SECONDS == 1e12  # about 31,700 years, as the messages say
    last_s = load_trace(_csv(tmp_path, MAX_SECONDS)).arrival_s[-1]
    last_ms = load_trace(_mooncake(tmp_path, MAX_TIMESTAMP_MS)).arrival_s[-1]
    assert last_s == last_ms == MAX_SECONDS
    beyond = 1.000001
    with pytest.raises(DataError, match="at most 1e\\+12"):
        load_trace(_csv(tmp_path, MAX_SECONDS * beyond))
    with pytest.raises(DataError, match="at most 1e\\+15"):
        load_trace(_mooncake(tmp_path, MAX_TIMESTAMP_MS * beyond))
