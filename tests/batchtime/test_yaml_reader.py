"""One reader of ``profile_meta.yaml`` (h-tidy5): :mod:`fluidq.batchtime._yaml`, read by the loader
(:func:`~fluidq.batchtime.loaders.load_llmservingsim`: the model and GPU), the attention-skew fit
(:meth:`~fluidq.batchtime.operators.AttentionSkew.from_profile`) and validate's deployment (through
:mod:`fluidq.validate.profile_meta`).

Before, batchtime had two readers of its own: ``loaders._simple_yaml`` (top-level ``key: value`` lines as text; a
file with ``garbage: [`` loaded, as one naming no model) and ``operators._yaml_block`` (the lines under ``skew_fit:``;
anything else in the file unread).  Here: the parser on what the shipped files use and on invalid documents (line and
column), and each caller refusing a malformed file by its name, and the explicit conversions the callers make where
YAML types a value otherwise than the old readers' text did (``per_tp: 1:`` an int key, numbers in the bucket axes).
That the shipped folders load the same before and after was checked once, byte for byte (h-tidy5 report); the
readers' numbers on them are pinned in tests/validation/test_attention_skew.py and the loader tests.
"""
import gzip
import shutil
from pathlib import Path

import pytest

from fluidq.batchtime._yaml import parse_yaml, read_profile_meta, scalar_text
from fluidq.batchtime.loaders import load_llmservingsim
from fluidq.batchtime.operators import AttentionSkew, lss_iteration_model
from fluidq.errors import DataError, ParameterError

LSS = Path(__file__).resolve().parents[2] / "validation" / "data" / "llmservingsim"
SHIPPED = sorted(LSS.glob("*/profile_meta.yaml"))

#: what the profiler writes, the shapes of the shipped files (and a few the YAML spec gives the same meaning)
DOC = """\ufeff---
# written by the profiler
profiler_version: 1.0.0
cuda_version: '12.8'   # quoted: text, not the number 12.8
profiled_at: '2026-08-17T19:43:32+00:00'
gpu: NVIDIA GeForce RTX 4090
model: <upstream-temporary-path>
tp_degrees: [1, 2]
engine_effective:
  enforce_eager: true
  enable_prefix_caching: false
  gpu_memory_utilization: 0.9
  hf_overrides:
    num_hidden_layers: 1
attention_grid:
  chunk_factor: 2.0
  chunks: 0, 16-2048 x2
skew_fit:
  bucket_axes:
    pc: raw pc value (profiled grid point)
    kp_bins: [-1, 0, 512, 1000000000]
    kp_labels: [kp=0, kp<=512, kp>8k]
    sr_labels: [sr<=5%, "sr>70%"]
  per_tp:
    1:
      alpha_default: 0.0543
    2: {alpha_default: 0.0654, bucket_table: tp2/skew_fit.csv}
quoted: "a # inside quotes, not a comment"
single: 'it''s'
nothing: ~
empty:
items:
- a
- b: 1
  c: [x, y]
"""


def test_the_parser_reads_what_the_profiler_writes():
    assert parse_yaml(DOC, "doc") == {
        "profiler_version": "1.0.0", "cuda_version": "12.8", "profiled_at": "2026-08-17T19:43:32+00:00",
        "gpu": "NVIDIA GeForce RTX 4090", "model": "<upstream-temporary-path>", "tp_degrees": [1, 2],
        "engine_effective": {"enforce_eager": True, "enable_prefix_caching": False, "gpu_memory_utilization": 0.9,
                             "hf_overrides": {"num_hidden_layers": 1}},
        "attention_grid": {"chunk_factor": 2.0, "chunks": "0, 16-2048 x2"},
        "skew_fit": {"bucket_axes": {"pc": "raw pc value (profiled grid point)", "kp_bins": [-1, 0, 512, 10**9],
                                     "kp_labels": ["kp=0", "kp<=512", "kp>8k"], "sr_labels": ["sr<=5%", "sr>70%"]},
                     "per_tp": {1: {"alpha_default": 0.0543},
                                2: {"alpha_default": 0.0654, "bucket_table": "tp2/skew_fit.csv"}}},
        "quoted": "a # inside quotes, not a comment", "single": "it's", "nothing": None, "empty": None,
        "items": ["a", {"b": 1, "c": ["x", "y"]}]}
    # YAML's types, not text: the callers convert where they want text (scalar_text) or floats
    d = parse_yaml(DOC, "doc")
    assert type(d["tp_degrees"][0]) is int and type(d["attention_grid"]["chunk_factor"]) is float
    assert parse_yaml("", "doc") == {} and parse_yaml("# only a comment\n", "doc") == {}


@pytest.mark.skipif(not SHIPPED, reason="validation/data is not present (not a source checkout)")
@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.parent.name)
def test_the_shipped_files_read_whole(path):
    d = read_profile_meta(path.parent)
    assert d["model"] in ("meta-llama/Llama-3.1-8B", "Qwen/Qwen3-30B-A3B-Instruct-2507")
    assert d["engine_effective"]["hf_overrides"]["num_hidden_layers"] == 1
    assert isinstance(d["cuda_version"], str) and all(type(t) is int for t in d["tp_degrees"])
    assert d["skew_fit"]["enabled"] in (True, False)
    for tp, entry in (d["skew_fit"].get("per_tp") or {}).items():
        assert type(tp) is int and type(entry["alpha_default"]) is float


@pytest.mark.parametrize("text, line, col, why", [
    ("garbage: [\n", 1, 10, "never closed"),
    ("model: 'acme/X\n", 1, 8, "quote opened here is never closed"),
    ("model: acme/X\n\ttp: 1\n", 2, 1, "a tab in the indentation"),
    ("model: acme/X\n  tp: 1\n", 2, 3, "bad indentation"),
    ("model: acme/X\njunk\n", 2, 1, "expected 'key: value'"),
    ("model: a: b\n", 1, 9, "a mapping value is not allowed here"),
    ("model: acme/X\n---\ngpu: X\n", 2, 1, "a second YAML document"),
    ("skew_fit:\n  enabled: true\n per_tp: 1\n", 3, 2, "bad indentation"),
    ("tp_degrees: [1] 2\n", 1, 17, "text after the end of a flow collection"),
    ("model: ]\n", 1, 8, "a value cannot start with ']'"),
    ("- a\nmodel: b\n", 2, 1, "matches no enclosing block"),
])
def test_an_invalid_document_is_refused_at_its_line_and_column(text, line, col, why):
    with pytest.raises(DataError, match=rf"^where\.yaml: invalid YAML at line {line}, column {col}: .*{why}"):
        parse_yaml(text, "where.yaml")


def test_a_document_that_is_not_a_mapping_is_refused_by_the_file(tmp_path):
    for text, what in (("- a\n- b\n", "sequence"), ("[a, b]\n", "sequence")):
        (tmp_path / "profile_meta.yaml").write_text(text)
        with pytest.raises(DataError, match=rf"{tmp_path / 'profile_meta.yaml'}: expected a YAML mapping.*{what}"):
            read_profile_meta(tmp_path)
    (tmp_path / "profile_meta.yaml").write_bytes(b"model: \xff\xfe acme\n")
    with pytest.raises(DataError, match=rf"{tmp_path / 'profile_meta.yaml'}: not UTF-8"):
        read_profile_meta(tmp_path)
    assert read_profile_meta(tmp_path / "none") == {}  # no file: nothing recorded


def test_scalar_text():
    assert [scalar_text(v) for v in ("acme/X", 7, 2.5, None, True, "", [1], {"a": 1})] == \
        ["acme/X", "7", "2.5", None, None, None, None, None]


# -- each caller on a malformed file: the strict reader's error, naming the file, line and column

BAD = "model: meta-llama/Llama-3.1-8B\ngarbage: [\n"


def _where(d):
    return rf"{d / 'profile_meta.yaml'}: invalid YAML at line 2, column 10"


@pytest.fixture
def lss_folder(tmp_path):
    """A copy of the shipped RTX 4090 folder, its attention table unzipped (load_llmservingsim reads it plain)."""
    if not SHIPPED:
        pytest.skip("validation/data is not present (not a source checkout)")
    d = tmp_path / "RTX4090_Llama-3.1-8B"
    shutil.copytree(LSS / d.name, d)
    gz = d / "profile_tp1_attention.csv.gz"
    (d / "profile_tp1_attention.csv").write_bytes(gzip.decompress(gz.read_bytes()))
    gz.unlink()
    return d


def test_the_loader_refuses_a_malformed_file_by_name(lss_folder):
    # before: read as the lines that matched (model found), the rest ignored, and loaded
    (lss_folder / "profile_meta.yaml").write_text(BAD)
    with pytest.raises(DataError, match=_where(lss_folder)):
        load_llmservingsim(lss_folder)


def test_the_loader_reads_the_model_and_gpu_as_text(lss_folder):
    # without vllm_meta.json the model and the GPU come from profile_meta.yaml
    (lss_folder / "vllm_meta.json").unlink()
    m = load_llmservingsim(lss_folder)
    assert m.meta.model == "Llama-3.1-8B" and m.meta.n_layers == 32 and m.meta.gpu == "NVIDIA GeForce RTX 4090"
    # a number where the old reader returned text: the same text
    (lss_folder / "profile_meta.yaml").write_text("model: meta-llama/Llama-3.1-8B\ngpu: 4090\n")
    assert load_llmservingsim(lss_folder).meta.gpu == "4090"
    # a model that is no name (a mapping): none, so the layer count must be given, as for a file naming no model
    (lss_folder / "profile_meta.yaml").write_text("model:\n  name: x\n")
    with pytest.raises(ParameterError, match="n_layers"):
        load_llmservingsim(lss_folder)
    assert load_llmservingsim(lss_folder, n_layers=32).meta.model == ""


@pytest.fixture
def pro6000_meta(tmp_path):
    if not SHIPPED:
        pytest.skip("validation/data is not present (not a source checkout)")
    return (LSS / "RTXPRO6000_Llama-3.1-8B" / "profile_meta.yaml").read_text()


def test_the_skew_fit_refuses_a_malformed_file_by_name(tmp_path, pro6000_meta):
    # before: only the lines under `skew_fit:` were read; an unclosed list elsewhere went unnoticed
    (tmp_path / "profile_meta.yaml").write_text(pro6000_meta.replace("variant: bf16", "variant: [bf16"))
    with pytest.raises(DataError, match=rf"{tmp_path / 'profile_meta.yaml'}: invalid YAML at line 10, column 10"):
        AttentionSkew.from_profile(tmp_path)
    d = tmp_path / "folder"
    shutil.copytree(LSS / "RTXPRO6000_Llama-3.1-8B", d)
    (d / "profile_meta.yaml").write_text(BAD)
    with pytest.raises(DataError, match=_where(d)):
        lss_iteration_model(d, n_layers=32, attention_skew="profile")


def test_the_skew_fit_converts_what_yaml_types(tmp_path, pro6000_meta):
    (tmp_path / "profile_meta.yaml").write_text(pro6000_meta)
    s = AttentionSkew.from_profile(tmp_path, 2)
    # per_tp's keys are ints in YAML (`2:`): looked up as the TP size; the bins floats, the labels text
    assert s.alpha_default == 0.0654
    assert all(type(x) is float for x in s.axes["kp_bins"]) and s.axes["kp_bins"][:3] == [-1.0, 0.0, 512.0]
    assert "pc" not in s.axes
    # labels YAML would type as numbers are text, as the bucket table's label columns are
    (tmp_path / "profile_meta.yaml").write_text(pro6000_meta.replace(
        "kp_labels: [kp=0, kp<=512, kp<=1k, kp<=2k, kp<=4k, kp<=8k, kp>8k]", "kp_labels: [0, 512, 1024, 2048, 4096, 8192, 9]"))
    (tmp_path / "profile_tp1_skew_fit.csv").write_text(
        "layer,pc,n_label,skew_rate_label,kv_big_label,kp_label,alpha,n_samples\n"
        "attention,16,n<=8,sr>70%,kvB<=1k,512,0.4,7\n")
    t = AttentionSkew.from_profile(tmp_path)
    assert t.axes["kp_labels"][1] == "512" and t.alpha(16, 8, 0.9, 1024, 512) == 0.4
    # an integer alpha is a number (the old reader read every number as a float)
    (tmp_path / "profile_tp1_skew_fit.csv").unlink()
    (tmp_path / "profile_meta.yaml").write_text(pro6000_meta.replace("alpha_default: 0.0543", "alpha_default: 0"))
    assert AttentionSkew.from_profile(tmp_path).alpha_default == 0.0


@pytest.mark.parametrize("old, new, key", [
    ("skew_fit:\n  enabled: true", "skew_fit: yes please\nold_skew_fit:\n  enabled: true", "skew_fit"),
    ("  per_tp:\n", "  per_tp: every\n  old_per_tp:\n", "skew_fit.per_tp"),
    ("alpha_default: 0.0543", "alpha_default: high", r"skew_fit.per_tp.1.alpha_default"),
    ("kp_bins: [-1,", "kp_bins: [low,", r"skew_fit.bucket_axes.kp_bins"),
    ("kp_labels: [kp=0, kp<=512, kp<=1k, kp<=2k, kp<=4k, kp<=8k, kp>8k]", "kp_labels: kp", "skew_fit.bucket_axes.kp_labels"),
])
def test_a_skew_fit_of_another_shape_is_refused_by_its_key(tmp_path, pro6000_meta, old, new, key):
    # valid YAML the fit cannot be read from: a DataError naming the file and the key (the old reader returned None
    # for a value that was not a float, and a per_tp that was not a mapping was an AttributeError)
    assert old in pro6000_meta
    (tmp_path / "profile_meta.yaml").write_text(pro6000_meta.replace(old, new, 1))
    with pytest.raises(DataError, match=rf"{tmp_path / 'profile_meta.yaml'}: {key}: expected"):
        AttentionSkew.from_profile(tmp_path)


def test_no_skew_fit_for_a_tp_size_the_fit_lacks_or_one_disabled(tmp_path, pro6000_meta):
    (tmp_path / "profile_meta.yaml").write_text(pro6000_meta)
    assert AttentionSkew.from_profile(tmp_path, 4) is None
    (tmp_path / "profile_meta.yaml").write_text(pro6000_meta.replace("skew_fit:\n  enabled: true",
                                                                     "skew_fit:\n  enabled: false"))
    assert AttentionSkew.from_profile(tmp_path) is None
    (tmp_path / "profile_meta.yaml").write_text("model: acme/X\n")
    assert AttentionSkew.from_profile(tmp_path) is None
