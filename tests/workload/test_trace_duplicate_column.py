"""A CSV trace whose header names one of its columns twice is refused, as `fluidq fit` refuses its CSVs and
the Mooncake reader a duplicated JSON key (rev-bad W4: the first one was used silently)."""
from __future__ import annotations

import pytest

from fluidq.errors import DataError
from fluidq.workload import load_trace


@pytest.mark.parametrize("header,col", [
    ("arrival_s,prompt_tokens,output_tokens,prompt_tokens", "prompt_tokens"),
    ("arrival_s,prompt_tokens,output_tokens, arrival_s ", "arrival_s"),
    ("TIMESTAMP,ContextTokens,GeneratedTokens,ContextTokens", "ContextTokens"),
])
def test_duplicated_column_refused(tmp_path, header, col):
    f = tmp_path / "t.csv"
    f.write_text(header + "\n0,10,5,20\n1,10,5,20\n")
    with pytest.raises(DataError, match=rf"the header has the column '{col}' 2 times"):
        load_trace(f)


def test_other_extra_columns_still_ignored(tmp_path):
    f = tmp_path / "t.csv"
    f.write_text("arrival_s,prompt_tokens,output_tokens,note,note\n0,10,5,a,b\n1,10,5,c,d\n")
    assert len(load_trace(f)) == 2
