"""A run that records an option twice with two values (``engine_kwargs.max_num_seqs`` 64, what the bench asked
for; ``resolved_config.scheduler_config.max_num_seqs`` 256, what the engine ran with) is validated with the
resolved value, as ServingRun._option documents -- and says so on stderr, naming both values and the one used
(a new user's `validate --run` used 256 silently)."""
import json
import shutil

from fluidq.validate import validation_dir
from fluidq.validate.runs import read_run

RUN = validation_dir() / "data" / "llmservingsim" / "RTXPRO6000_Llama-3.1-8B"


def _copy(tmp_path, name, resolved):
    dst = tmp_path / name
    shutil.copytree(RUN, dst)
    meta = json.loads((dst / "vllm_meta.json").read_text())
    meta["engine_kwargs"]["max_num_seqs"] = 64
    meta["resolved_config"] = {"scheduler_config": {"max_num_seqs": resolved}}
    (dst / "vllm_meta.json").write_text(json.dumps(meta))
    return dst


def test_two_recorded_values_are_named_with_the_one_used(tmp_path, capsys):
    run = read_run(_copy(tmp_path, "disagree", 256))
    capsys.readouterr()
    assert run.max_num_seqs == 256  # the precedence is unchanged: what the engine ran with
    err = capsys.readouterr().err
    assert "max_num_seqs" in err and "= 256" in err and "= 64" in err
    assert "resolved_config.scheduler_config.max_num_seqs = 256" in err
    assert "engine_kwargs.max_num_seqs = 64" in err and "using 256" in err
    assert run.max_num_seqs == 256 and capsys.readouterr().err == ""  # said once, not at every read


def test_agreeing_values_say_nothing(tmp_path, capsys):
    run = read_run(_copy(tmp_path, "agree", 64))
    capsys.readouterr()
    assert run.max_num_seqs == 64
    assert capsys.readouterr().err == ""
