"""Response-length tables: prompts and the response length of several models.

``load_lengths("alpaca_eval")`` / ``load_lengths("gsm8k")`` read the copies kept in the source tree
(``validation/data/lengths/``, see its PROVENANCE.md; AlpacaEval model outputs are CC BY-NC 4.0:
research use); any path to a JSONL file (optionally ``.gz``) of the same shape also works:
one object per line with the prompt text under ``instruction`` or ``question`` and
``{"words": {model: n}, "chars": {model: n}}``.
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .._io import json_loads, read_text
from ..errors import DataError, ParameterError, UnknownNameError

__all__ = ["BUILTIN_LENGTHS", "LengthDataset", "MAX_LENGTH", "load_lengths"]

BUILTIN_LENGTHS = {"alpaca_eval": "alpaca_eval_lengths.jsonl.gz",
                   "gsm8k": "gsm8k_model_solution_lengths.jsonl.gz"}
_UNITS = ("words", "chars")


def _data_dir() -> Path:
    from .._shipped import validation_root

    return validation_root() / "data" / "lengths"


@dataclass(frozen=True, eq=False)
class LengthDataset:
    """Prompts and per-model response lengths.

    Attributes
    ----------
    prompts : tuple of str
    lengths : dict
        ``model -> ndarray`` of lengths in ``unit`` (NaN where a model has no response).
    unit : str
        ``"words"`` or ``"chars"``.
    source : str
    """

    prompts: tuple
    lengths: dict
    unit: str
    source: str

    @property
    def models(self) -> tuple:
        return tuple(self.lengths)

    def __len__(self) -> int:
        return len(self.prompts)

    def of(self, model: str) -> np.ndarray:
        if model not in self.lengths:
            raise UnknownNameError("model", model, self.lengths)
        return self.lengths[model]

    def split(self, test_fraction: float = 0.25, rng=None):
        """Random (train_index, test_index) arrays."""
        if not 0 < test_fraction < 1:
            raise ParameterError("test_fraction", test_fraction, "a fraction in (0, 1)")
        perm = np.random.default_rng(rng).permutation(len(self.prompts))
        k = max(1, int(round(test_fraction * len(perm))))
        return np.sort(perm[k:]), np.sort(perm[:k])


#: the largest response length a table may give (words or characters): far beyond any response, and
#: small enough to be exact as a float and to rank without overflow
MAX_LENGTH = 2**31 - 1


def load_lengths(name_or_path, *, unit: str = "words") -> LengthDataset:
    """Read a response-length table (``"alpaca_eval"``, ``"gsm8k"`` or a path).

    Only a regular file is read (a FIFO or a device is refused: it could block forever); gzip is
    detected from the content.  Every problem (an unreadable, binary or corrupt file, a line that
    is not a JSON object, a prompt that is not text, a length that is not a number in
    ``[0, MAX_LENGTH]``) is a :class:`~fluidq.errors.DataError` naming the file and the line.
    """
    if unit not in _UNITS:
        raise ParameterError("unit", unit, "'words' or 'chars'")
    key = str(name_or_path)
    if key in BUILTIN_LENGTHS:
        path = _data_dir() / BUILTIN_LENGTHS[key]
        if not path.exists():
            raise DataError(f"built-in length table {key!r} is kept in the source tree ({path}), which this "
                            "installation does not have: pass the path of a JSONL copy")
    else:
        path = Path(key)
        try:
            os.stat(key)
        except FileNotFoundError:
            raise DataError(f"{path}: no such file (built-in tables: {', '.join(BUILTIN_LENGTHS)})") from None
        except (OSError, ValueError):
            pass  # a loop, a name too long...: read_text says which
    text = read_text("length table", path, what="length table")
    prompts, rows = [], []
    for i, line in enumerate(text.splitlines()):
        if not line.strip():
            continue
        where = f"{path}, line {i + 1}"
        d = json_loads(line, where=where)
        try:
            if not isinstance(d, dict):
                raise KeyError("a JSON object")
            text_ = d.get("instruction", d.get("question"))
            if not isinstance(text_, str):
                raise KeyError("instruction/question")
            row = d[unit]
            if not isinstance(row, dict):
                raise KeyError(f"{unit} as an object {{model: length}}")
        except KeyError as exc:
            raise DataError(f"{where}: expected a JSON object with a prompt and {unit!r} lengths ({exc})") from None
        for m, v in row.items():  # a length is a finite number >= 0, or null for "not answered"
            ok = v is None or (isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)
                               and v >= 0)
            if not ok:
                raise DataError(f"{where}: {unit}[{m!r}] = {v!r}: expected a finite length >= 0 "
                                "(or null when the model has no answer)")
            if v is not None and v > MAX_LENGTH:
                raise DataError(f"{where}: {unit}[{m!r}] = {v!r}: more than {MAX_LENGTH:,} (2**31-1) {unit}, "
                                "the most fluidq takes for one response")
        prompts.append(text_)
        rows.append(row)
    if not prompts:
        raise DataError(f"{path}: no rows")
    models = list(dict.fromkeys(m for r in rows for m in r))
    lengths = {m: np.array([float(r[m]) if r.get(m) is not None else np.nan for r in rows]) for m in models}
    return LengthDataset(prompts=tuple(prompts), lengths=lengths, unit=unit, source=str(path))
