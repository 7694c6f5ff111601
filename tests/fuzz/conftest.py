"""The fuzz suite's folder of hostile inputs (see fuzzcore.make_hostile_files)."""
import itertools
import os

import pytest

from fuzzcore import make_hostile_files

os.environ.setdefault("MPLBACKEND", "Agg")


@pytest.fixture(scope="session")
def _hostile_root(tmp_path_factory):
    return {"root": tmp_path_factory.mktemp("hostile"), "n": itertools.count(), "h": None}


@pytest.fixture
def hostile(_hostile_root):
    """The hostile folder, made again when an earlier test changed one of its inputs (that test failed
    for it; the next ones get intact inputs)."""
    s = _hostile_root
    if s["h"] is None or s["h"].changed():
        s["h"] = make_hostile_files(s["root"] / f"h{next(s['n'])}")
    return s["h"]
