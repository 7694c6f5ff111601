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


@pytest.fixture(scope="session", autouse=True)
def _no_litter_at_the_root():
    """`--plot=/` is a hostile output path the suite draws; a fluidq that takes it writes `/.png` (as root).
    Files of that kind that were not there before the session are removed after it."""
    names = ["/.png", "/.svg", "/.pdf", "/-", "/fluidq-report", "/fluidq-validation"]
    before = {n for n in names if os.path.lexists(n)}
    yield
    for n in names:
        if n not in before and os.path.isfile(n) and not os.path.islink(n):
            try:
                os.remove(n)
            except OSError:
                pass
