"""A plain CSV trace (``arrival_s,prompt_tokens,output_tokens``) and Azure's header with seconds.

New-user review (inputs item 3): only Azure's ``TIMESTAMP,ContextTokens,GeneratedTokens`` with ISO time
stamps was read.  Both CSV forms now share the row checks; each bad row is one error naming file and line.
"""
import gzip

import numpy as np
import pytest

from fluidq.cli import main
from fluidq.errors import DataError
from fluidq.workload import Workload
from fluidq.workload.traces import TRACE_FORMATS, load_trace

PLAIN = "arrival_s,prompt_tokens,output_tokens\n"
AZURE = "TIMESTAMP,ContextTokens,GeneratedTokens\n"


def _write(tmp_path, text, name="t.csv"):
    p = tmp_path / name
    p.write_text(text)
    return p


@pytest.mark.parametrize("header", [PLAIN, AZURE])
def test_seconds_are_read_as_arrival_times(tmp_path, header):
    rng = np.random.default_rng(7)
    t = np.cumsum(rng.exponential(0.4, 50)) + 3.0
    p_tok = rng.integers(1, 4000, 50)
    o_tok = rng.integers(1, 900, 50)
    rows = "".join(f"{float(a)!r},{b},{c}\n" for a, b, c in zip(t, p_tok, o_tok))
    tr = load_trace(_write(tmp_path, header + rows))
    assert np.allclose(tr.arrival_s, t - t[0], rtol=0, atol=1e-9)
    assert tr.prompt_tokens.tolist() == p_tok.tolist() and tr.output_tokens.tolist() == o_tok.tolist()
    assert tr.reordered == 0 and tr.out_of_order is None


def test_the_plain_trace_agrees_with_the_same_requests_in_azure_iso_form(tmp_path):
    iso = AZURE + "2023-11-16 18:00:00.0000000,100,20\n2023-11-16 18:00:01.5000000,200,30\n" \
                  "2023-11-16 18:00:04.2500000,50,10\n"
    plain = PLAIN + "0,100,20\n1.5,200,30\n4.25,50,10\n"
    a, b = load_trace(_write(tmp_path, iso, "a.csv")), load_trace(_write(tmp_path, plain, "b.csv"))
    assert np.array_equal(a.arrival_s, b.arrival_s)
    assert np.array_equal(a.prompt_tokens, b.prompt_tokens) and np.array_equal(a.output_tokens, b.output_tokens)
    wa, wb = Workload.from_trace(str(tmp_path / "a.csv")), Workload.from_trace(str(tmp_path / "b.csv"))
    assert wa.arrival_rate_per_s == wb.arrival_rate_per_s


def test_gzipped_plain_trace(tmp_path):
    p = tmp_path / "t.csv.gz"
    p.write_bytes(gzip.compress((PLAIN + "0,10,5\n2,20,6\n").encode()))
    assert load_trace(p).arrival_s.tolist() == [0.0, 2.0]


@pytest.mark.parametrize("header, row, says", [
    (PLAIN, "-0.5,10,5", "arrival_s = '-0.5': expected a number of seconds >= 0"),
    (PLAIN, "nan,10,5", "arrival_s = 'nan': expected a number of seconds >= 0"),
    (PLAIN, "inf,10,5", "arrival_s = 'inf'"),
    (PLAIN, ",10,5", "arrival_s = empty"),
    (PLAIN, "1e13,10,5", "at most 1e+12"),
    (PLAIN, "2,10.5,5", "prompt_tokens = '10.5': expected a whole number of tokens"),
    (PLAIN, "2,10,0", "output_tokens = 0: a length below one token"),
    (PLAIN, "2,-3,5", "prompt_tokens = -3: a length below one token"),
    (PLAIN, "2,10", "expected 3 columns (arrival_s,prompt_tokens,output_tokens), got 2"),
    (AZURE, "-1,10,5", "TIMESTAMP = '-1': expected a number of seconds >= 0"),
    (AZURE, "2023-11-16 18:00:00,10,5", "expected a number of seconds >= 0 (a finite decimal number) (line 2 gives"),
    (AZURE, "NaN,10,5", "TIMESTAMP = 'NaN'"),
    (AZURE, "3,2.0,5", "ContextTokens = '2.0': expected a whole number"),
])
def test_a_bad_row_names_file_and_line(tmp_path, header, row, says):
    p = _write(tmp_path, header + "1,10,5\n" + row + "\n")
    with pytest.raises(DataError) as e:
        load_trace(p)
    assert f"{p}, line 3: " in str(e.value) and says in str(e.value), str(e.value)


def test_a_number_in_an_iso_file_is_named(tmp_path):
    p = _write(tmp_path, AZURE + "2023-11-16 18:00:00,10,5\n12.5,10,5\n")
    with pytest.raises(DataError, match=r"line 3: TIMESTAMP = '12.5': a number, but line 2 gives an ISO date"):
        load_trace(p)


def test_a_header_without_rows_and_an_unknown_header(tmp_path):
    with pytest.raises(DataError, match="a header but no requests"):
        load_trace(_write(tmp_path, PLAIN))
    with pytest.raises(DataError, match=r"line 1 is 'time,in,out'; expected a trace header "
                                        r"arrival_s,prompt_tokens,output_tokens"):
        load_trace(_write(tmp_path, "time,in,out\n0,1,1\n"))


def test_unsorted_rows_are_refused_on_the_command_line(tmp_path, capsys):
    p = _write(tmp_path, PLAIN + "0,10,5\n2,10,5\n1,10,5\n")
    assert load_trace(p).reordered == 2  # the library sorts and says so
    rc = main(["capacity", "--trace", str(p)])
    err = capsys.readouterr().err
    assert rc == 2 and "line 4 arrives 1 s before line 3" in err and err.count("\n") == 1, err


def test_the_command_line_reads_a_plain_trace(tmp_path, capsys):
    p = _write(tmp_path, PLAIN + "".join(f"{0.5 * i},{100 + i},{20 + i}\n" for i in range(40)))
    assert main(["capacity", "--trace", str(p), "--json"]) == 0
    capsys.readouterr()


def test_help_and_formats_name_the_plain_header(capsys):
    with pytest.raises(SystemExit):
        main(["capacity", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    assert "arrival_s,prompt_tokens,output_tokens" in out and "TIMESTAMP,ContextTokens,GeneratedTokens" in out
    assert any("arrival_s,prompt_tokens,output_tokens" in f for f in TRACE_FORMATS)
