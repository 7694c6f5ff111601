"""An LLMServingSim operator table with a repeated (operator, size) row, or an operator whose time falls wildly
with more tokens, is refused naming the file, the operator and the lines.

Before: a repeated row was averaged silently (``fluidq fit`` refuses duplicates), and one outlier (qkv_proj at
256 tokens set to 99999 us in a copy of RTX4090_Llama-3.1-8B) gave `fluidq capacity --profile-dir` "each prompt
adds -945.74 ms" and 1,724 tokens/s instead of 6,923, without a word."""
import pytest

from fluidq.batchtime.loaders import MAX_TIME_DROP, load_llmservingsim
from fluidq.batchtime.operators import lss_iteration_model
from fluidq.errors import DataError

from test_profile_cells_checked import _edit, _plain_attention, _set_cell, lss  # noqa: F401  (the fixture)


def _line_of(path, prefix):
    return next(i + 1 for i, line in enumerate(path.read_text().splitlines()) if line.startswith(prefix))


def _both_readers(d):
    yield lambda: load_llmservingsim(_plain_attention(d))
    yield lambda: lss_iteration_model(d, n_layers=32)


@pytest.mark.parametrize("reader", [0, 1])
def test_a_repeated_operator_size_is_refused_naming_both_lines(lss, reader):  # noqa: F811
    dense = lss / "profile_tp1_dense.csv"
    first = _line_of(dense, "qkv_proj,256,")
    n = len(dense.read_text().splitlines())
    _edit(dense, lambda lines: lines + ["qkv_proj,256,91.0"])
    with pytest.raises(DataError, match=rf"profile_tp1_dense.csv: operator 'qkv_proj' has tokens=256 on lines {first} "
                                        rf"and {n + 1}: .*average repeated measurements"):
        list(_both_readers(lss))[reader]()


def test_a_repeated_per_sequence_row_is_refused(lss):  # noqa: F811
    seq = lss / "profile_tp1_per_sequence.csv"
    _edit(seq, lambda lines: lines + [lines[1]])
    with pytest.raises(DataError, match=r"profile_tp1_per_sequence.csv: operator '\w+' has sequences=\d+ on lines 2 "):
        lss_iteration_model(lss, n_layers=32)


@pytest.mark.parametrize("reader", [0, 1])
def test_a_wild_outlier_is_refused_naming_the_operator_and_rows(lss, reader):  # noqa: F811
    dense = lss / "profile_tp1_dense.csv"
    k = _line_of(dense, "qkv_proj,256,")
    _edit(dense, lambda lines: _set_cell(lines, k, "time_us", "99999"))
    with pytest.raises(DataError, match=rf"operator 'qkv_proj' takes 99999 us at tokens=256 \(line {k}\) but "
                                        rf"[\d.]+ us at tokens=272 \(line {k + 1}\).*negative cost"):
        list(_both_readers(lss))[reader]()


def test_an_outlier_low_is_refused_too_and_a_mild_fall_is_not(lss):  # noqa: F811
    dense = lss / "profile_tp1_dense.csv"
    k = _line_of(dense, "qkv_proj,256,")
    base = float(dense.read_text().splitlines()[k - 1].split(",")[2])
    _edit(dense, lambda lines: _set_cell(lines, k, "time_us", f"{base / (2 * MAX_TIME_DROP):g}"))
    with pytest.raises(DataError, match=rf"operator 'qkv_proj' takes [\d.]+ us at tokens=240 .* at tokens=256 "
                                        rf"\(line {k}\)"):
        lss_iteration_model(lss, n_layers=32)
    _edit(dense, lambda lines: _set_cell(lines, k, "time_us", f"{base / 2:g}"))  # a 2x fall: as shipped profiles have
    lss_iteration_model(lss, n_layers=32)


def test_the_capacity_command_refuses_the_outlier(lss, capsys):  # noqa: F811
    from fluidq.cli import main

    dense = lss / "profile_tp1_dense.csv"
    k = _line_of(dense, "qkv_proj,256,")
    _edit(dense, lambda lines: _set_cell(lines, k, "time_us", "99999"))
    rc = main(["capacity", "--profile-dir", str(lss)])
    err = capsys.readouterr().err
    assert rc == 2 and f"operator 'qkv_proj' takes 99999 us at tokens=256 (line {k})" in err, err
