"""One mapping from the library's parameter names to the command line's flags (fluidq.cli.common.parameters_as_flags):
``fluidq capacity --profile-dir``, the engine ``check``/``simulate`` build from the folder (profile_dir_engine) and the
capacity ``simulate --load`` reads (profile_dir_capacity) each wrote their own ``except ParameterError`` block, and
the network runs' sizes and ``models kv`` two more.  The faces must refuse the same input with the same words."""
import json
from pathlib import Path
from types import SimpleNamespace

import pytest

from fluidq.cli import CliError
from fluidq.cli.common import parameters_as_flags, profile_dir_flags
from fluidq.errors import ParameterError
from fluidq.testing.cli import assert_one_line

ROOT = Path(__file__).resolve().parents[2]
FOLDER = ROOT / "validation" / "data" / "llmservingsim" / "RTXPRO6000_Llama-3.1-8B"
from hf_configs import LLAMA_8B  # tests/models/hf_configs.py


def _raise(name, value=3, expected="something", hint=None):
    raise ParameterError(name, value, expected, hint)


def test_the_helper_renames_shows_and_passes_through():
    with pytest.raises(ParameterError) as e:
        with parameters_as_flags({"horizon_s": "--horizon"}):
            _raise("horizon_s", 0.5, "a horizon >= 1 s", "longer")
    assert (e.value.name, e.value.value, e.value.expected, e.value.hint) == ("--horizon", 0.5, "a horizon >= 1 s", "longer")
    with pytest.raises(ParameterError) as e:  # a name the command does not set passes unchanged
        with parameters_as_flags({"horizon_s": "--horizon"}):
            _raise("rate_per_s")
    assert e.value.name == "rate_per_s"
    with pytest.raises(ParameterError) as e:  # the value typed, not the one the library read from it
        with parameters_as_flags({"model": "--model-config"}, shown={"model": "cfg.json"}):
            _raise("model", "Llama-half")
    assert str(e.value).startswith("--model-config='cfg.json': expected")
    with pytest.raises(CliError, match=r"^--profile-dir /x: expected a folder \(no meta\)$"):
        with parameters_as_flags({"profile_dir": "--profile-dir"}, folders=("profile_dir",)):
            _raise("profile_dir", "/x", "a folder", "no meta")


def test_a_kv_cache_not_given_is_named_as_the_planners_estimate():
    args = SimpleNamespace(kv_capacity=None, kv_estimate="Llama from the folder", model_config=None)
    with pytest.raises(CliError, match="vLLM's memory planner's estimate \\(Llama from the folder\\)"):
        with parameters_as_flags(**profile_dir_flags(args)):
            _raise("kv_capacity_tokens", 900, "a cache that holds one request")
    args.kv_capacity = 900  # given: its flag
    with pytest.raises(ParameterError, match="^--kv-capacity=900: expected"):
        with parameters_as_flags(**profile_dir_flags(args)):
            _raise("kv_capacity_tokens", 900, "a cache that holds one request")


def _tail(err):
    return err.split(": error: ", 1)[1]


def test_the_profile_dir_faces_refuse_alike(tmp_path, capsys):
    empty = tmp_path / "notprofiles"
    empty.mkdir()
    (empty / "readme.txt").write_text("x")
    half = tmp_path / "half.json"
    half.write_text(json.dumps({**LLAMA_8B, "num_hidden_layers": 16}))
    faces = (["capacity"], ["check", "--rate", "5", "--policy", "vllm-chunked"],
             ["simulate", "--load", "0.5", "--horizon", "3", "--policy", "vllm-chunked"])
    folder = {_tail(assert_one_line([*f, "--profile-dir", str(empty)], capsys, f"--profile-dir {empty}: expected"))
              for f in faces}
    assert len(folder) == 1 and "no profile_meta.yaml" in folder.pop()
    model = {_tail(assert_one_line([*f, "--profile-dir", str(FOLDER), "--model-config", str(half)], capsys,
                                   f"--model-config={str(half)!r}", "n_layers 16 (the profiled Llama-3.1-8B: 32)"))
             for f in faces}
    assert len(model) == 1, model

