"""A trace request longer than a workload takes is a DataError naming the file and the column (found by the
independent probe: ``load_trace`` reads counts up to 2**31-1, and ``Workload.from_trace`` then failed on a
2**30+1-token prompt with ``values=<array ...>``, a parameter the caller never gave)."""
import pytest

import fluidq as fq
from fluidq.errors import DataError


@pytest.mark.parametrize("col", ["prompt", "output"])
def test_from_trace_names_file_and_column(tmp_path, col):
    big = 2**30 + 1
    p, o = (big, 1) if col == "prompt" else (1, big)
    path = tmp_path / "t.csv"
    path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                    f"2023-11-16 18:15:46.000000,10,3\n2023-11-16 18:15:47.000000,{p},{o}\n")
    tr = fq.workload.load_trace(str(path))  # the reader itself takes it
    assert int((tr.prompt_tokens if col == "prompt" else tr.output_tokens).max()) == big
    with pytest.raises(DataError, match=rf"t\.csv: request 1 .* {col} tokens"):
        fq.Workload.from_trace(str(path))


def test_limit_itself_is_accepted(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("TIMESTAMP,ContextTokens,GeneratedTokens\n"
                    f"2023-11-16 18:15:46.000000,10,3\n2023-11-16 18:15:47.000000,{2**30},1\n")
    assert fq.Workload.from_trace(str(path)).trace.prompt_tokens[1] == 2**30
