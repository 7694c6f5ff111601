"""``python -m fluidq.profiles.build --out`` checks its output as the command line does, before any fit (audit
2026-12-07, robust6 finding 6).

Before: ``--out mine.json`` overwrote a user's file without a check, and ``--out DIR`` ended in a raw
``IsADirectoryError`` traceback -- each after every profile was fitted.
"""
import os
from pathlib import Path

import pytest

from fluidq.profiles import build


@pytest.fixture
def data(tmp_path, monkeypatch):
    d = tmp_path / "data"
    (d / "measured").mkdir(parents=True)

    def boom(*a, **k):
        raise AssertionError("a profile was fitted before --out was checked")

    monkeypatch.setattr(build, "build_one", boom)
    return d


def _refused(data, out, capsys, *words):
    assert build.main(["--data", str(data), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"build: error: --out {out}:"), err
    for w in words:
        assert w in err, err


def test_a_users_file_is_refused_and_kept(data, tmp_path, capsys):
    mine = tmp_path / "mine.json"
    mine.write_text('{"my": "settings"}\n')
    _refused(data, mine, capsys, "not replaced")
    assert mine.read_text() == '{"my": "settings"}\n'


def test_a_folder_a_link_and_a_missing_folder_are_refused(data, tmp_path, capsys):
    _refused(data, tmp_path, capsys, "folder")
    _refused(data, str(tmp_path) + "/", capsys, "folder")
    os.symlink(tmp_path / "nowhere.json", tmp_path / "link.json")
    _refused(data, tmp_path / "link.json", capsys, "symlink")
    _refused(data, tmp_path / "no" / "x.json", capsys, "no folder")


def test_an_unwritable_folder_is_refused(data, tmp_path, capsys, monkeypatch):
    import errno
    import tempfile

    def refuse(*a, **k):
        raise PermissionError(errno.EACCES, "Permission denied")

    monkeypatch.setattr(tempfile, "mkstemp", refuse)
    _refused(data, tmp_path / "x.json", capsys, "permission denied")


def test_the_shipped_profiles_file_and_an_empty_file_may_be_replaced(tmp_path):
    assert build._out_problem(str(Path(build.__file__).with_name("fitted.json"))) is None
    (tmp_path / "e.json").write_text("")
    assert build._out_problem(str(tmp_path / "e.json")) is None
    assert build._out_problem(str(tmp_path / "new.json")) is None
