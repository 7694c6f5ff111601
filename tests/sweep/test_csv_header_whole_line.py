"""``sweep --csv`` replaces only a table whose whole header is this sweep's (audit 2026-12-07, robust6 finding 4).

Before: any existing file whose first 6 bytes were ``index,`` was taken for a sweep table and overwritten --
a user's own ``index,name,value`` spreadsheet included.  Now the header line is read whole as CSV: before the
run it must start with ``index`` and this case's point columns, and when the table is written it must be the
header this sweep's table has; else the file is left as it was, named under ``--csv``.
"""
import pytest

from fluidq.cli import main

CASE = ('[sweep]\nanalysis = "capacity"\n[fixed]\nprompt_tokens = 100\noutput_tokens = 100\n'
        '[grid]\nb_max = [256, 512]\n')


@pytest.fixture()
def case(tmp_path):
    p = tmp_path / "case.toml"
    p.write_text(CASE)
    return p


@pytest.mark.parametrize("text", ["index,name,value\n1,my,data\n",              # a user's indexed table
                                  "index,prompt_tokens,output_tokens,b_max,mine\n0,1,2,3,4\n",  # its own columns
                                  "index,\n", "index,b_max"])                   # no whole header line
def test_a_users_index_file_is_refused_and_left_as_it_was(case, tmp_path, capsys, text):
    mine = tmp_path / "mine.csv"
    mine.write_text(text)
    assert main(["sweep", str(case), "--serial", "--csv", str(mine)]) == 2
    err = capsys.readouterr().err
    assert err.strip().splitlines()[-1].startswith("fluidq sweep: error: --csv") and "not replaced" in err, err
    assert mine.read_text() == text


def test_another_cases_table_is_refused_before_the_run(case, tmp_path, capsys, monkeypatch):
    other = tmp_path / "other.toml"
    other.write_text(CASE.replace("b_max = [256, 512]", "k_max = [8, 16]"))
    t = tmp_path / "t.csv"
    assert main(["sweep", str(other), "--serial", "--csv", str(t)]) == 0
    theirs = t.read_text()
    import fluidq.sweep.core as core

    def boom(*a, **k):
        raise AssertionError("the sweep ran before --csv was checked")

    monkeypatch.setattr(core, "_drive", boom)
    capsys.readouterr()
    assert main(["sweep", str(case), "--serial", "--csv", str(t)]) == 2
    err = capsys.readouterr().err
    assert "--csv" in err and "not replaced" in err and "ran before" not in err, err
    assert t.read_text() == theirs


def test_this_sweeps_own_table_is_replaced(case, tmp_path, capsys):
    t = tmp_path / "t.csv"
    assert main(["sweep", str(case), "--serial", "--csv", str(t)]) == 0
    first = t.read_text()
    t.write_text(first.replace("256", "999"))  # the same header, other numbers: replaced by this sweep's
    assert main(["sweep", str(case), "--serial", "--csv", str(t)]) == 0
    assert t.read_text() == first


def test_same_point_columns_other_outputs_are_not_replaced(case, tmp_path, capsys):
    """A table that starts as this case's but has other result columns (another analysis's) is kept: the
    results are printed, the command fails naming --csv."""
    t = tmp_path / "t.csv"
    text = "index,prompt_tokens,output_tokens,b_max,status\n0,100,100,256,stable\n"
    t.write_text(text)
    rc = main(["sweep", str(case), "--serial", "--csv", str(t)])
    out, err = capsys.readouterr()
    assert rc == 2 and out.strip() and "--csv" in err and "not replaced" in err, err
    assert t.read_text() == text
