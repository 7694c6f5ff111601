"""A damaged profile folder is one DataError naming the file, the line, the column (and operator).

New-user review (inputs item 2): a copy of validation/data/llmservingsim/RTX4090_Llama-3.1-8B with the value
``abc`` in profile_tp1_dense.csv was "internal error: ValueError"; without its lm_head rows "internal error:
KeyError: 'lm_head'"; with negative act_fn times it was accepted (and the capacity rose).  The same holes
in Vidur's mlp.csv / attention.csv.
"""
import gzip
import math
import shutil
from pathlib import Path

import pytest

from fluidq.batchtime.loaders import load_llmservingsim, load_vidur
from fluidq.batchtime.operators import lss_iteration_model, vidur_iteration_model
from fluidq.errors import DataError

DATA = Path(__file__).resolve().parents[2] / "validation" / "data"
LSS = DATA / "llmservingsim" / "RTX4090_Llama-3.1-8B"
VID = DATA / "vidur" / "a100" / "meta-llama" / "Llama-2-7b-hf"


@pytest.fixture
def lss(tmp_path):
    d = tmp_path / "RTX4090_Llama-3.1-8B"
    shutil.copytree(LSS, d)
    return d


def _edit(path: Path, fn):
    lines = path.read_text().splitlines()
    path.write_text("\n".join(fn(lines)) + "\n")


def _set_cell(lines, line_no, col, value):
    """Line ``line_no`` (1-based, the header is line 1) with column ``col`` set to ``value``."""
    head = lines[0].split(",")
    cells = lines[line_no - 1].split(",")
    cells[head.index(col)] = value
    lines[line_no - 1] = ",".join(cells)
    return lines


def _plain_attention(d):
    """load_llmservingsim reads the plain attention table (the shipped one is gzipped)."""
    gz = d / "profile_tp1_attention.csv.gz"
    (d / "profile_tp1_attention.csv").write_bytes(gzip.decompress(gz.read_bytes()))
    gz.unlink()
    return d


def _model(d):
    return lss_iteration_model(d, n_layers=32)


@pytest.mark.parametrize("bad, says", [("abc", "'abc', not a number"), ("-2.5", "'-2.5'"),
                                       ("nan", "not a finite number"), ("", "is empty")])
def test_a_bad_dense_time_names_file_line_column_operator(lss, bad, says):
    f = lss / "profile_tp1_dense.csv"
    _edit(f, lambda ls: _set_cell(ls, 3, "time_us", bad))
    op = f.read_text().splitlines()[2].split(",")[0]
    with pytest.raises(DataError) as e:
        _model(lss)
    msg = str(e.value)
    for w in (str(f), "line 3", "'time_us'", f"operator {op!r}", says, ">= 0"):
        assert w in msg, (w, msg)


def test_negative_act_fn_times_are_refused_not_summed(lss):
    f = lss / "profile_tp1_dense.csv"
    _edit(f, lambda ls: [ls[0]] + [(",".join([c[0], c[1], "-" + c[2]]) if c[0] == "act_fn" else line)
                                   for line, c in ((x, x.split(",")) for x in ls[1:])])
    with pytest.raises(DataError, match=r"line \d+: column 'time_us' \(operator 'act_fn'\) has '-"):
        _model(lss)
    with pytest.raises(DataError, match="act_fn"):
        load_llmservingsim(_plain_attention(lss), n_layers=32)


def test_a_bad_token_count_is_named(lss):
    f = lss / "profile_tp1_dense.csv"
    _edit(f, lambda ls: _set_cell(ls, 5, "tokens", "x12"))
    with pytest.raises(DataError, match=r"line 5: column 'tokens' .*'x12', not a number; expected a token"):
        _model(lss)


def test_missing_lm_head_rows_are_one_data_error(lss):
    f = lss / "profile_tp1_per_sequence.csv"
    _edit(f, lambda ls: [x for x in ls if not x.startswith("lm_head,")])
    with pytest.raises(DataError, match=r"profile_tp1_per_sequence.csv: no rows for operator\(s\) 'lm_head'"):
        _model(lss)
    with pytest.raises(DataError, match="'lm_head'"):
        load_llmservingsim(_plain_attention(lss), n_layers=32, tp=1)


def test_a_missing_column_is_named(lss):
    f = lss / "profile_tp1_per_sequence.csv"
    _edit(f, lambda ls: [x.rsplit(",", 1)[0] for x in ls])
    with pytest.raises(DataError, match="profile_tp1_per_sequence.csv: missing column.*time_us"):
        _model(lss)


def test_a_negative_attention_time_in_the_gz_table_names_it(lss):
    gz = lss / "profile_tp1_attention.csv.gz"
    lines = gzip.decompress(gz.read_bytes()).decode().splitlines()
    lines = _set_cell(lines, 4, "time_us", "-1")
    gz.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    with pytest.raises(DataError, match=r"profile_tp1_attention.csv.gz, line 4: column 'time_us' has '-1'"):
        _model(lss)


def _rows(path):
    import csv

    with open(path) as f:
        return list(csv.DictReader(f))


def test_the_shipped_folder_still_loads(lss):
    """... and reads the CSV rows' values: a layer's linear operators at t tokens are the dense table's rows at t
    (layernorm twice: before attention and before the MLP), the embedding and final norm once, and lm_head +
    sampler per sequence (read here with the csv module: 475.557, 4.779 and 1131.739 us at 1 token / 3 sequences)."""
    m = _model(lss)
    assert math.isfinite(m.time(prefill_chunks=((512, 0),), decode_contexts=(100, 200)))
    dense = _rows(lss / "profile_tp1_dense.csv")
    per_seq = _rows(lss / "profile_tp1_per_sequence.csv")
    for t in ("1", "512"):
        v = {r["layer"]: float(r["time_us"]) for r in dense if r["tokens"] == t}
        layer = sum(x for k, x in v.items() if k not in ("embedding", "final_layernorm")) + v["layernorm"]
        assert m.linear_us(float(t)) == pytest.approx(layer, rel=1e-12), t
        assert m.once_us(float(t)) == pytest.approx(v["embedding"] + v["final_layernorm"], rel=1e-12), t
    v = {r["layer"]: float(r["time_us"]) for r in per_seq if r["sequences"] == "3"}
    assert set(v) == {"lm_head", "sampler"}
    assert m.per_seq_us(3.0) == pytest.approx(v["lm_head"] + v["sampler"], rel=1e-12)


# ---------------------------------------------------------------------------------------- Vidur

@pytest.fixture
def vidur(tmp_path):
    out = {}
    for name in ("mlp.csv", "attention_subset.csv"):
        (tmp_path / name).write_bytes(gzip.decompress((VID / f"{name}.gz").read_bytes()))
        out[name] = tmp_path / name
    return out


@pytest.mark.parametrize("table, col, bad, says", [
    ("mlp.csv", "time_stats.mlp_act.median", "abc", "'abc', not a number"),
    ("mlp.csv", "time_stats.mlp_act.median", "-0.2", "'-0.2'"),
    ("mlp.csv", "num_tokens", "many", "not a number; expected a token count"),
    ("attention_subset.csv", "time_stats.attn_decode.median", "-0.01", "'-0.01'"),
    ("attention_subset.csv", "kv_cache_size", "nan", "not a finite number"),
])
def test_vidur_bad_cells_are_named(vidur, table, col, bad, says):
    f = vidur[table]
    _edit(f, lambda ls: _set_cell(ls, 2, col, bad))
    with pytest.raises(DataError) as e:
        vidur_iteration_model(vidur["mlp.csv"], vidur["attention_subset.csv"], n_layers=32)
    msg = str(e.value)
    for w in (str(f), "line 2", repr(col), says):
        assert w in msg, (w, msg)
    if table == "mlp.csv" and col.startswith("time_stats"):
        with pytest.raises(DataError, match="line 2: column 'time_stats.mlp_act.median'"):
            load_vidur(f, n_layers=32)


def test_vidur_missing_column_is_named(vidur):
    f = vidur["attention_subset.csv"]
    _edit(f, lambda ls: [",".join(c for i, c in enumerate(x.split(",")) if i != ls[0].split(",").index("is_prefill"))
                         for x in ls])
    with pytest.raises(DataError, match="attention_subset.csv: missing column.*is_prefill"):
        vidur_iteration_model(vidur["mlp.csv"], f, n_layers=32)


def test_vidur_shipped_tables_still_load(vidur):
    """... and reads the TP1 row's values: at 512 tokens a layer's linear operators are the sum of the row's per-layer
    medians (ms; every column but the embedding), the embedding once (1042.5 and 29.0 us)."""
    m = vidur_iteration_model(vidur["mlp.csv"], vidur["attention_subset.csv"], n_layers=32)
    assert math.isfinite(m.time(prefill_chunks=((512, 0),), decode_contexts=(100, 200)))
    (row,) = [r for r in _rows(vidur["mlp.csv"]) if r["num_tensor_parallel_workers"] == "1" and r["num_tokens"] == "512"]
    v = {c.split(".")[1]: float(x) for c, x in row.items() if c.startswith("time_stats.") and c.endswith(".median")}
    assert m.linear_us(512.0) == pytest.approx(1000 * sum(x for k, x in v.items() if k != "emb"), rel=1e-12)
    assert m.once_us(512.0) == pytest.approx(1000 * v["emb"], rel=1e-12)
