"""A response-length table with a bad length names the file, the line and the model (no traceback, no NaN)."""
from __future__ import annotations

import pytest

from fluidq.errors import DataError
from fluidq.predict.data import load_lengths

GOOD = '{"instruction": "a", "words": {"m": 3}}\n'


@pytest.mark.parametrize("bad, words", [('{"m": "x"}', "line 2: words['m'] = 'x'"), ('{"m": NaN}', "line 2: not valid JSON"),
                                        ('{"m": -5}', "= -5"), ('{"m": true}', "= True"), ('[3]', "line 2")])
def test_bad_lengths_are_located(tmp_path, bad, words):
    p = tmp_path / "t.jsonl"
    p.write_text(GOOD + '{"instruction": "b", "words": ' + bad + "}\n")
    with pytest.raises(DataError, match=words.replace("[", r"\[").replace("]", r"\]")):
        load_lengths(p)


def test_null_is_a_missing_answer(tmp_path):
    p = tmp_path / "t.jsonl"
    p.write_text(GOOD + '{"instruction": "b", "words": {"m": null, "n": 4}}\n')
    ds = load_lengths(p)
    assert ds.lengths["m"][0] == 3 and ds.lengths["m"][1] != ds.lengths["m"][1] and ds.lengths["n"][1] == 4
