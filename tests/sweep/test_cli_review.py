"""`fluidq sweep` messages a new user reads (review 2026-12-06)."""
from fluidq.cli import main

CASE = '[sweep]\nanalysis = "capacity"\nstore = "r.jsonl"\n[fixed]\nprompt_tokens = 100\noutput_tokens = 100\n' \
       '[grid]\nb_max = [256, 512]\n'


def test_an_empty_case_name_is_named_as_empty_not_as_the_current_folder(capsys):
    assert main(["sweep", ""]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "case file" in err and "''" in err and "folder" not in err, err


def test_a_sweep_resumed_whole_says_nothing_was_left_to_compute(tmp_path, capsys):
    p = tmp_path / "case.toml"
    p.write_text(CASE)
    assert main(["sweep", str(p), "--serial"]) == 0
    capsys.readouterr()
    assert main(["sweep", str(p), "--serial"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert " on none " not in first and "nothing left to compute" in first, first
