"""``fluidq sweep --csv PATH`` replaces only a table a sweep wrote (review 2026-12-06).

Before: ``--csv mine.csv`` on a user's own file replaced it with the sweep table, silently.
"""
import pytest

from fluidq.cli import main

CASE = '[sweep]\nanalysis = "capacity"\n[fixed]\nprompt_tokens = 100\noutput_tokens = 100\n[grid]\nb_max = [256, 512]\n'


@pytest.fixture()
def case(tmp_path):
    p = tmp_path / "case.toml"
    p.write_text(CASE)
    return p


def test_a_users_file_is_refused_and_left_as_it_was(case, tmp_path, capsys):
    mine = tmp_path / "mine.csv"
    mine.write_text("name,value\nmy,data\n")
    assert main(["sweep", str(case), "--serial", "--csv", str(mine)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--csv" in err and "not replaced" in err, err
    assert mine.read_text() == "name,value\nmy,data\n"


def test_a_table_the_sweep_wrote_is_replaced_and_an_empty_file_is_used(case, tmp_path, capsys):
    out = tmp_path / "t.csv"
    assert main(["sweep", str(case), "--serial", "--csv", str(out)]) == 0
    first = out.read_text()
    assert first.startswith("index,") and first.count("\n") == 3
    assert main(["sweep", str(case), "--serial", "--csv", str(out)]) == 0  # its own table: written over
    assert out.read_text() == first
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    assert main(["sweep", str(case), "--serial", "--csv", str(empty)]) == 0
    assert empty.read_text() == first
    capsys.readouterr()
