"""A profile_meta.yaml that names no model and records no shapes cannot vouch for the served model (review revbad2
M3).

``validate --run`` checks the model the run served against the model profile_meta.yaml names (or, for a model in
no table, against the shapes it records in ``engine_effective.hf_overrides``).  An empty profile_meta.yaml, or one
whose ``model`` and ``hf_overrides`` are gone, skipped the check: a run serving Llama-3.1-70B was predicted from
Llama-3.1-8B profiles, 19 rows MISS, no word.  It is now refused as a missing file is, naming the file and
``--served-model-is-profiled`` (the user's word that the profiles are of the served model).
"""
import re

import pytest

import run_variants as rv
from fluidq.errors import DataError
from fluidq.validate import validate
from fluidq.validate.cases import case_for_run


def _folder(tmp_path, served, yaml_edit):
    d = rv.copy_run(rv.LLAMA_4090, tmp_path / "run")
    m = rv.meta(d)
    m["model"] = served
    m.setdefault("engine_kwargs", {})["model"] = served
    rv.set_meta(d, m)
    p = d / "profile_meta.yaml"
    p.write_text(yaml_edit(p.read_text()))
    return d


def _no_model_no_overrides(s):
    s = s.replace("model: meta-llama/Llama-3.1-8B\n", "")
    return re.sub(r"  hf_overrides:\n(    .*\n)+", "", s)


@pytest.mark.parametrize("edit, words", [(lambda s: "", "empty"),
                                          (_no_model_no_overrides, "names no model")])
@pytest.mark.parametrize("served", ["meta-llama/Llama-3.1-70B", "meta-llama/Llama-3.1-8B"])
def test_a_profile_meta_naming_no_model_is_refused_naming_the_file_and_the_option(tmp_path, edit, words, served):
    d = _folder(tmp_path, served, edit)
    with pytest.raises(DataError) as e:
        validate(run=d, out_dir=tmp_path / "out")
    msg = str(e.value)
    assert "profile_meta.yaml" in msg and words in msg and "--served-model-is-profiled" in msg, msg
    assert not (tmp_path / "out").exists()
    # the user's word that the profiles are the served model's: read as before (the served model's facts)
    case, _ = case_for_run(d, served_model_is_profiled=True)
    assert case.spec["_facts"].name == ("Llama-3.1-70B" if "70B" in served else "Llama-3.1-8B")
