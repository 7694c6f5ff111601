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


def test_a_trace_file_in_a_case_is_read_relative_to_the_case_file_like_the_store(tmp_path, capsys, monkeypatch):
    # before: read relative to the current folder, so the same case failed from another folder (or read a
    # different file of the same name there)
    import gzip
    from importlib.resources import files

    sub = tmp_path / "cases"
    sub.mkdir()
    with gzip.open(files("fluidq") / "data" / "azure2023_conv.csv.gz", "rt") as fh:
        head = [next(fh) for _ in range(200)]
    (sub / "t.csv").write_text("".join(head))
    (sub / "c.toml").write_text('[sweep]\nanalysis = "capacity"\n[grid]\ntrace = ["t.csv", "azure-code"]\n'
                                'b_max = [512]\n')
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.chdir(elsewhere)
    assert main(["sweep", str(sub / "c.toml"), "--serial", "--json"]) == 0
    import json

    rows = json.loads(capsys.readouterr().out)["rows"]
    assert rows[0]["trace"] == str((sub / "t.csv").resolve()) and rows[1]["trace"] == "azure-code"
    assert rows[0]["requests_per_s"] > 0
