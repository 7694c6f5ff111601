"""A value that is not finite in a run's vllm_timeseries.csv is refused naming the file, the line and the column,
as a negative count or a tick out of order is (it named no line: the user had to search the file for it)."""
import pytest

import run_variants as rv
from fluidq.errors import DataError
from fluidq.validate.runs import read_run


@pytest.mark.parametrize("column,value,row", [("prompt_throughput", "nan", 5), ("gen_throughput", "inf", 40),
                                              ("waiting", "NaN", 0)])
def test_a_value_that_is_not_finite_names_its_line(tmp_path, column, value, row):
    d = rv.copy_run(rv.LLAMA_PRO, tmp_path / "run")
    h, rows = rv.read_ts(d)
    rows[row][h.index(column)] = value
    rv.write_ts(d, h, rows)
    with pytest.raises(DataError, match=rf"vllm_timeseries.csv, line {row + 2}: column '{column}' = {value.lower()}: "
                                        r"expected a finite number"):
        read_run(d)


def test_the_line_counts_the_file_s_own_lines(tmp_path):
    # a blank line before the bad row: the reader skips it, the message still names the line in the file
    d = rv.copy_run(rv.LLAMA_PRO, tmp_path / "run")
    h, rows = rv.read_ts(d)
    rows[3][h.index("prompt_throughput")] = "nan"
    rv.write_ts(d, h, rows)
    text = (d / "vllm_timeseries.csv").read_text().splitlines()
    text.insert(2, "")
    (d / "vllm_timeseries.csv").write_text("\n".join(text) + "\n")
    with pytest.raises(DataError, match=r"line 6: column 'prompt_throughput' = nan"):
        read_run(d)
