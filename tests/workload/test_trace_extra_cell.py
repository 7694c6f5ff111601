"""A --trace CSV row with more cells than its header names is refused naming the line, as a short row is (review
revbad2 M7: the extra cell was dropped without a word -- a stray comma shifts nothing visible, a row pasted from
another file with more columns is read by its first three)."""
import pytest

from fluidq.errors import DataError
from fluidq.workload import load_trace


@pytest.mark.parametrize("header,row", [
    ("arrival_s,prompt_tokens,output_tokens", "1,10,5,7"),
    ("arrival_s,prompt_tokens,output_tokens", "1,10,,5"),
    ("arrival_s,prompt_tokens,output_tokens,note", "1,10,5,a,b"),
    ("TIMESTAMP,ContextTokens,GeneratedTokens", "2024-01-01T00:00:01,10,5,3"),
])
def test_a_row_with_an_extra_cell_is_refused_naming_the_line(tmp_path, header, row):
    f = tmp_path / "t.csv"
    first = "0,10,5" if header.startswith("arrival") else "2024-01-01T00:00:00,10,5"
    f.write_text(header + "\n" + first + ("," + "x" if header.endswith("note") else "") + "\n" + row + "\n")
    with pytest.raises(DataError, match=r"t\.csv, line 3: \d cells, but the header names \d column"):
        load_trace(f)


def test_rows_as_long_as_the_header_or_shorter_or_with_empty_trailing_cells_are_read(tmp_path):
    f = tmp_path / "t.csv"
    f.write_text("arrival_s,prompt_tokens,output_tokens,note\n0,10,5,a\n1,10,5\n2,10,5,b,,\n")
    assert len(load_trace(f)) == 3
