"""A Mooncake record giving a field twice is refused (found by the independent probe: ``{"input_length": 5,
"input_length": 7, ...}`` was read as 7, JSON keeping the last value silently)."""
import pytest

from fluidq.errors import DataError
from fluidq.workload import load_trace


def _write(tmp_path, text):
    p = tmp_path / "t.jsonl"
    p.write_text(text)
    return str(p)


@pytest.mark.parametrize("field", ["timestamp", "input_length", "output_length"])
def test_a_field_twice_is_refused(tmp_path, field):
    rec = {"timestamp": 0, "input_length": 5, "output_length": 1}
    body = ", ".join(f'"{k}": {v}' for k, v in rec.items()) + f', "{field}": 7'
    path = _write(tmp_path, "{" + body + "}\n" + '{"timestamp": 5, "input_length": 5, "output_length": 1}\n')
    with pytest.raises(DataError, match=f"line 1: {field} is given twice"):
        load_trace(path)


def test_the_name_inside_another_value_is_not_a_repeat(tmp_path):
    path = _write(tmp_path, '{"timestamp": 0, "input_length": 5, "output_length": 1, '
                            '"meta": {"input_length": 3, "note": "\\"input_length\\""}}\n'
                            '{"timestamp": 5, "input_length": 6, "output_length": 2}\n')
    tr = load_trace(path)
    assert list(tr.prompt_tokens) == [5, 6] and list(tr.output_tokens) == [1, 2]


def test_a_suspect_line_is_parsed_once(tmp_path, monkeypatch):
    # a line naming a field twice (here inside another value) is read once, keeping every key, not once to
    # build the record and again to look for repeats
    import json

    path = _write(tmp_path, '{"timestamp": 0, "input_length": 5, "output_length": 1, "meta": {"input_length": 3}}\n'
                            '{"timestamp": 5, "input_length": 6, "output_length": 2}\n')
    calls = []
    real = json.loads

    def counted(*a, **kw):
        calls.append(a[0])
        return real(*a, **kw)

    monkeypatch.setattr(json, "loads", counted)
    tr = load_trace(path)
    assert list(tr.prompt_tokens) == [5, 6]
    assert len(calls) == 2, calls  # one parse per line


@pytest.mark.parametrize("line, match", [
    ('{"timestamp": NaN, "input_length": 5, "input_length": 5, "output_length": 1}', "not valid JSON"),
    ('[{"timestamp": 0, "input_length": 5, "input_length": 5, "output_length": 1}]', "not a Mooncake record"),
    ('{"timestamp": 0, "input_length": 5, "output_length": 1, "input_length": 9', "not valid JSON"),
])
def test_a_suspect_line_keeps_the_plain_refusals(tmp_path, line, match):
    path = _write(tmp_path, '{"timestamp": 5, "input_length": 6, "output_length": 2}\n' + line + "\n")
    with pytest.raises(DataError, match=f"line 2: {match}"):
        load_trace(path)
