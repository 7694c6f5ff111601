"""A timeseries CSV that names a column twice is refused, as --trace and fit refuse theirs (review revbad2 M5).

``csv.DictReader`` keeps the last of two same-named columns without a word: a ``waiting`` column written twice
(two recorders' columns pasted together) read the second, and the run's saturated ticks with it.
"""
import pytest

import run_variants as rv
from fluidq.errors import DataError
from fluidq.validate.runs import read_run


@pytest.mark.parametrize("dup", ["waiting", "kv_cache_pct", "vllm:waiting"])
def test_a_timeseries_column_twice_is_refused_naming_it(tmp_path, dup):
    d = rv.copy_run(rv.LLAMA_4090, tmp_path / "run")
    header, rows = rv.read_ts(d)
    rv.write_ts(d, header + [dup], [r + ["0"] for r in rows])
    name = dup.removeprefix("vllm:")
    with pytest.raises(DataError, match=rf"vllm_timeseries.csv: the header has the column '{name}' 2 times"):
        read_run(d)


def test_an_extra_column_of_its_own_name_is_still_read(tmp_path):
    d = rv.copy_run(rv.LLAMA_4090, tmp_path / "run")
    header, rows = rv.read_ts(d)
    rv.write_ts(d, header + ["note"], [r + ["1"] for r in rows])
    assert read_run(d).timeseries["note"].sum() == len(rows)
