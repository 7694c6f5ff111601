"""Messages that name what the user wrote (review revbad2 L4): a run's max_num_batched_tokens above the bound named
the internal parameter only (``max_num_batched_tokens=...: expected an integer <= 16,777,216``, no file); a
truncated request line read ``not JSON (... line 2 column 1 ...)``; a trace whose times span 1e12 s read
``rate_per_s=np.float64(1e-12)``, an internal parameter, for the trace file."""
import pytest

import run_variants as rv
from fluidq.errors import DataError
from fluidq.validate.runs import read_run
from fluidq.workload import Workload


@pytest.mark.parametrize("key", ["max_num_batched_tokens", "max_num_seqs"])
def test_a_budget_above_the_bound_names_the_file_and_field(tmp_path, key):
    d = rv.copy_run(rv.LLAMA_PRO, tmp_path / "run")
    rv.edit_meta(d, **{key: 10**15})
    with pytest.raises(DataError, match=rf"vllm_meta.json: engine_kwargs.{key} = 1000000000000000: expected a whole "
                                        r"number <= 16,777,216"):
        getattr(read_run(d), key)


def test_a_truncated_request_line_says_it_is_cut_short(tmp_path):
    d = rv.copy_run(rv.LLAMA_PRO, tmp_path / "run")
    p = d / "vllm_requests.jsonl"
    lines = p.read_text().splitlines()
    p.write_text("\n".join(lines[:-1] + [lines[-1][:37]]) + "\n")
    with pytest.raises(DataError, match=rf"vllm_requests.jsonl, line {len(lines)}: the record is cut short"):
        read_run(d)


@pytest.mark.parametrize("text, column", [("arrival_s,prompt_tokens,output_tokens\n0.0,100,50\n1e12,120,40\n",
                                           "arrival_s"),
                                          ('{"timestamp": 0, "input_length": 5, "output_length": 3}\n'
                                           '{"timestamp": 1e15, "input_length": 5, "output_length": 3}\n',
                                           "timestamp")])
def test_a_trace_slower_than_the_least_rate_names_the_trace_and_column(tmp_path, text, column):
    f = tmp_path / ("hugetime.csv" if column == "arrival_s" else "hugetime.jsonl")
    f.write_text(text)
    with pytest.raises(DataError, match=rf"hugetime.*: 2 requests over 1e\+12 s of arrival times \(column {column}"):
        Workload.from_trace(f)
