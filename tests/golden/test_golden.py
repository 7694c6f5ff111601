"""Golden results: today's numbers that issue 14's one-engine-model move must keep.

tests/golden/golden.json holds them (see its header and tests/golden/record.py).  A difference fails
with every changed number listed.  When a change is MEANT to alter them, re-record with
``PYTHONPATH=. python tests/golden/record.py`` and say so in that commit's message.
"""
import importlib.util
import json
from pathlib import Path

HERE = Path(__file__).resolve().parent
_spec = importlib.util.spec_from_file_location("_golden_record", HERE / "record.py")
record = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(record)

GOLDEN = json.loads((HERE / "golden.json").read_text())
WANT = GOLDEN["results"]


def _check(part: str, got: dict):
    d = record.diff(WANT[part], json.loads(json.dumps(got)), part)
    assert not d, (f"{len(d)} golden number(s) changed (re-record only if meant; see tests/golden/record.py):\n"
                   + "\n".join(d[:60]) + ("\n..." if len(d) > 60 else ""))


def test_header_says_how_to_re_record():
    h = GOLDEN["header"]
    assert h["recorded_at_commit"] and "record.py" in h["how_to_re_record"]


def test_network():
    _check("network", record.network_cases())


def test_single_engine():
    _check("single", record.single_cases())


def test_validation_latency_rows():
    _check("validation", record.validation_cases())


def test_diff_sees_a_change():
    # the comparison itself: a float off by more than 1e-9 relative, a changed integer, a lost key
    want = {"a": 1.0, "b": 3, "c": {"d": 2.0}}
    assert record.diff(want, {"a": 1.0 + 1e-12, "b": 3, "c": {"d": 2.0}}) == []
    assert len(record.diff(want, {"a": 1.0 + 1e-6, "b": 4, "c": {}})) == 3
