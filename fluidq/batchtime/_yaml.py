"""The one YAML reader of fluidq: ``profile_meta.yaml`` of an LLMServingSim operator-profile folder, read whole and
checked (rev-indep review 2026-12-07, finding 7): the file that names the profiled model (``model``), the GPU
(``gpu``), the tensor-parallel sizes profiled (``tp_degrees``), the shapes the profiler gave vLLM
(``engine_effective.hf_overrides``) and the attention-skew fit (``skew_fit``).  Its readers --
:func:`fluidq.batchtime.loaders.load_llmservingsim` (model, GPU), :meth:`fluidq.batchtime.operators.AttentionSkew.
from_profile` (``skew_fit``) and :mod:`fluidq.validate.deployment` (model, shapes, through
:mod:`fluidq.validate.profile_meta`) -- all read it through :func:`read_profile_meta`; it lives in batchtime, the
lowest of them, so that batchtime need not import validate (h-tidy5: before, batchtime had two hand-written readers
of its own, one of top-level ``key: value`` lines returning text and one of a single block, both accepting what is
not YAML).

fluidq reads it without a YAML library (none is a dependency): :func:`parse_yaml` reads the block YAML the
profiler writes (``key: value`` mappings nested by indentation, ``- item`` sequences, ``[a, b]`` / ``{k: v}`` flow
collections, also over several lines, quoted and plain scalars, ``|`` / ``>`` block scalars, comments) and refuses
what is not YAML -- a flow collection never closed (``garbage: [``), a quote never closed, a tab in the
indentation, a line that is neither ``key: value`` nor ``- item``, an indentation that matches no open block --
as a :class:`~fluidq.errors.DataError` naming the file, the line and the column.  Plain scalars are typed as YAML
1.2's core schema types them (``1`` an int, ``0.05`` a float, ``true`` a bool, ``~`` None), keys too (``per_tp:
1:`` is the int 1); a caller that wants text converts explicitly (:func:`scalar_text`).  Anchors, aliases and tags
are kept as the text they are (the profiler writes none); a line of a quoted value folded over several lines that
begins with ``#`` is read as a comment (a known limit; a random-document check against PyYAML is in
tests/validation/test_profile_folder_identity.py).  Before 2026-12-07 only top-level ``key: value`` lines were
read: an invalid file read as one that "names no model", and with ``--model-config`` was accepted silently.
"""
from __future__ import annotations

import re
from pathlib import Path

from ..errors import DataError

__all__ = ["read_profile_meta", "parse_yaml", "scalar_text"]

_INT = re.compile(r"^[-+]?(0|[1-9][0-9_]*)$")
#: characters that cannot start a plain (unquoted) scalar in block context (YAML 1.2, 7.3.3; ``&``, ``*``, ``!``
#: start anchors, aliases and tags, kept as text here)
_NOT_PLAIN = "]},%@`"
_FLOAT = re.compile(r"^[-+]?(\.[0-9]+|[0-9][0-9_]*(\.[0-9_]*)?)([eE][-+]?[0-9]+)?$")


class _Bad(Exception):
    def __init__(self, line: int, col: int, msg: str):
        super().__init__(msg)
        self.line, self.col, self.msg = line, col, msg


def _scalar(text: str):
    t = text.strip()
    if t in ("", "~", "null", "Null", "NULL"):
        return None
    if t in ("true", "True", "TRUE"):
        return True
    if t in ("false", "False", "FALSE"):
        return False
    if _INT.match(t):
        return int(t.replace("_", ""))
    if _FLOAT.match(t) and any(c.isdigit() for c in t):
        return float(t.replace("_", ""))
    return t


def _quoted(s: str, i: int, line: int, col0: int) -> tuple[str, int]:
    """The quoted scalar starting at ``s[i]`` and the index after it."""
    q = s[i]
    out, j = [], i + 1
    while j < len(s):
        c = s[j]
        if q == "'" and c == "'":
            if j + 1 < len(s) and s[j + 1] == "'":
                out.append("'")
                j += 2
                continue
            return "".join(out), j + 1
        if q == '"' and c == "\\" and j + 1 < len(s):
            out.append({"n": "\n", "t": "\t", '"': '"', "\\": "\\"}.get(s[j + 1], s[j + 1]))
            j += 2
            continue
        if q == '"' and c == '"':
            return "".join(out), j + 1
        out.append(c)
        j += 1
    raise _Bad(line, col0 + i, f"the {q} quote opened here is never closed")


def _strip_comment(s: str) -> str:
    """A plain scalar without its trailing `` # comment``."""
    m = re.search(r"\s#", s)
    return (s[:m.start()] if m else s).rstrip()


class _Flow:
    """A flow collection (``[...]``, ``{...}``) over a text joined from one or more lines; ``pos`` maps an index of
    the text to its (line, column)."""

    def __init__(self, text: str, pos: list[tuple[int, int]]):
        self.s, self.pos, self.i = text, pos, 0

    def at(self, i=None):
        i = self.i if i is None else i
        return self.pos[min(i, len(self.pos) - 1)]

    def bad(self, msg, i=None):
        line, col = self.at(i)
        raise _Bad(line, col, msg)

    def ws(self):
        while self.i < len(self.s) and self.s[self.i] in " \t":
            self.i += 1

    def value(self, closers: str):
        self.ws()
        if self.i >= len(self.s):
            self.bad("a value was expected")
        c = self.s[self.i]
        if c in "[{":
            return self.collection()
        if c in "'\"":
            line, col = self.at()
            v, self.i = _quoted(self.s, self.i, line, col - self.i)
            return v
        j = self.i
        while j < len(self.s) and self.s[j] not in closers + ",":
            if self.s[j] in "[{":
                self.bad(f"a {self.s[j]!r} inside a plain value", j)
            j += 1
        v, self.i = self.s[self.i:j], j
        return _scalar(v)

    def collection(self):
        open_i, c = self.i, self.s[self.i]
        close = "]" if c == "[" else "}"
        self.i += 1
        out: list | dict = [] if c == "[" else {}
        while True:
            self.ws()
            if self.i >= len(self.s):
                self.bad(f"the {c!r} opened here is never closed", open_i)
            if self.s[self.i] == close:
                self.i += 1
                return out
            if c == "[":
                out.append(self.value("]"))
            else:
                key_i = self.i
                key = self.value(":}")
                if isinstance(key, (list, dict)):
                    self.bad("a collection as a mapping key", key_i)
                if key in out:
                    self.bad(f"the key {key!r} again in this mapping: expected each key once", key_i)
                self.ws()
                if self.i >= len(self.s) or self.s[self.i] != ":":
                    if self.i < len(self.s) and self.s[self.i] in ",}":
                        out[key] = None
                    else:
                        self.bad(f"the {c!r} opened here is never closed", open_i)
                else:
                    self.i += 1
                    out[key] = self.value("},")
            self.ws()
            if self.i >= len(self.s):
                self.bad(f"the {c!r} opened here is never closed", open_i)
            if self.s[self.i] == ",":
                self.i += 1
            elif self.s[self.i] != close:
                self.bad(f"',' or {close!r} expected")


class _Parser:
    def __init__(self, text: str):
        self.lines = []  # (line number, indent, content)
        for n, raw in enumerate(text.removeprefix("\ufeff").splitlines(), 1):
            body = raw.rstrip()
            stripped = body.lstrip(" \t")
            if not stripped or stripped.startswith("#"):
                continue
            lead = body[:len(body) - len(stripped)]
            if "\t" in lead:
                raise _Bad(n, lead.index("\t") + 1, "a tab in the indentation (YAML indents with spaces)")
            if n == 1 and stripped in ("---", "..."):
                continue
            if stripped in ("---", "..."):
                raise _Bad(n, 1, "a second YAML document: profile_meta.yaml holds one")
            self.lines.append((n, len(body) - len(stripped), stripped))
        self.k = 0

    def parse(self):
        if not self.lines:
            return {}
        n, ind, s = self.lines[0]
        v = self.inline(ind, n, s, -1) if s[0] in "[{" else self.block(ind)  # a flow document: {a: 1}
        if self.k < len(self.lines):
            n, ind, _ = self.lines[self.k]
            raise _Bad(n, ind + 1, "this line is indented less than its block and matches no enclosing block")
        return v

    def block(self, indent: int):
        n, ind, s = self.lines[self.k]
        if s == "-" or s.startswith("- "):
            return self.sequence(indent)
        return self.mapping(indent)

    def sequence(self, indent: int):
        out = []
        while self.k < len(self.lines):
            n, ind, s = self.lines[self.k]
            if ind < indent:
                break
            if ind > indent:
                raise _Bad(n, ind + 1, "bad indentation: more than the sequence's items")
            if not (s == "-" or s.startswith("- ")):
                break  # a key of the enclosing mapping at the same indentation ("key:\n- a\nother: b")
            rest = s[1:].lstrip(" ")
            if not rest:
                self.k += 1
                out.append(self.child(indent, n))
                continue
            off = ind + (len(s) - len(rest))
            self.lines[self.k] = (n, off, rest)  # the item's content, read as a block of its own
            out.append(self.block(off) if self._is_key(rest) or rest.startswith("- ") else self.inline(off, n, rest, ind))
        return out

    @staticmethod
    def _key_end(s: str) -> int:
        """The index of the ``:`` that ends a mapping key in ``s``, or -1."""
        i = 0
        if s[:1] in ("'", '"'):
            try:
                _, i = _quoted(s, 0, 0, 0)
            except _Bad:
                return -1
        m = re.compile(r":(\s|$)").search(s, i)
        if m is None or (s[:1] in "[{" and i == 0):
            return -1
        if s[:1] not in ("'", '"') and re.search(r"\s#", s[:m.start()]):
            return -1
        return m.start()

    def _is_key(self, s: str) -> bool:
        return self._key_end(s) > 0

    def mapping(self, indent: int):
        out: dict = {}
        first: dict = {}  # each key's line
        while self.k < len(self.lines):
            n, ind, s = self.lines[self.k]
            if ind < indent:
                break
            if ind > indent:
                raise _Bad(n, ind + 1, "bad indentation: more than the mapping's keys, after a complete value")
            if s == "-" or s.startswith("- "):
                if out:
                    raise _Bad(n, ind + 1, "a sequence item '- ' among a mapping's keys")
                break
            e = self._key_end(s)
            if e <= 0:
                raise _Bad(n, ind + 1, "expected 'key: value'")
            key_text = s[:e].rstrip()
            if key_text[0] in _NOT_PLAIN:
                raise _Bad(n, ind + 1, f"a key cannot start with {key_text[0]!r} (quote it)")
            key = _quoted(key_text, 0, n, ind + 1)[0] if key_text[:1] in ("'", '"') else _scalar(key_text)
            if key in out:  # YAML keys are unique; a reader would keep one of the two values without a word
                raise _Bad(n, ind + 1, f"the key {key_text!r} again (first on line {first[key]}): expected each key "
                                       "once in a mapping")
            first[key] = n
            rest = s[e + 1:].lstrip(" ")
            col = ind + 1 + (len(s) - len(rest))
            if not rest or rest.startswith("#"):
                self.k += 1
                out[key] = self.child(indent, n)
            else:
                out[key] = self.inline(col - 1, n, rest, ind)
        return out

    def child(self, indent: int, n: int):
        """The block value under a key or ``-`` with nothing after it: the lines indented more (or a sequence at the
        key's own indentation), else null."""
        if self.k < len(self.lines):
            _, ind, s = self.lines[self.k]
            item = s == "-" or s.startswith("- ")
            if ind > indent and not item and not self._is_key(s):
                return self.inline(ind, self.lines[self.k][0], s, indent)  # "key:\n  value"
            if ind > indent or (ind == indent and item):
                return self.block(ind)
        return None

    def inline(self, col0: int, n: int, rest: str, indent_here: int):
        """The value that starts on line ``n`` at 0-based column ``col0`` (``rest``), and the lines it takes that are
        indented more than ``indent_here`` (its key's, or its ``-``'s)."""
        self.k += 1
        if rest[0] in "[{":
            text, pos = rest, [(n, col0 + 1 + i) for i in range(len(rest))]
            while True:
                try:
                    f = _Flow(text, pos)
                    v = f.collection()
                except _Bad as exc:
                    if "never closed" in exc.msg and self.k < len(self.lines) \
                            and self.lines[self.k][1] > indent_here:
                        ln, ind, s = self.lines[self.k]  # a flow collection over several lines
                        self.k += 1
                        text += " " + s
                        pos += [(ln, ind)] + [(ln, ind + 1 + i) for i in range(len(s))]
                        continue
                    raise
                tail = text[f.i:].strip()
                if tail and not tail.startswith("#"):
                    f.bad("text after the end of a flow collection", f.i + (len(text[f.i:]) - len(text[f.i:].lstrip())))
                return v
        if rest[0] in "'\"":
            text = rest
            while True:
                try:
                    v, j = _quoted(text, 0, n, col0 + 1)
                    break
                except _Bad:
                    if self.k < len(self.lines) and self.lines[self.k][1] > indent_here:
                        text += " " + self.lines[self.k][2]  # a quoted value folded over several lines
                        self.k += 1
                        continue
                    raise
            rest = text
            tail = rest[j:].strip()
            if tail and not tail.startswith("#"):
                raise _Bad(n, col0 + 1 + j, "text after the end of a quoted value")
            return v
        if rest[0] in "|>":
            lines = []
            while self.k < len(self.lines) and self.lines[self.k][1] > indent_here:
                lines.append(self.lines[self.k][2])
                self.k += 1
            return ("\n" if rest[0] == "|" else " ").join(lines)
        if rest.startswith("- ") or rest == "-":
            raise _Bad(n, col0 + 1, "a block sequence cannot start on a key's line")
        if rest[0] in _NOT_PLAIN:
            raise _Bad(n, col0 + 1, f"a value cannot start with {rest[0]!r} (quote it)")
        text = _strip_comment(rest)
        if self._is_key(text):
            raise _Bad(n, col0 + 1 + self._key_end(text), "a mapping value is not allowed here (a second ': ' on the "
                       "line; quote the value)")
        parts = [text]
        while self.k < len(self.lines) and self.lines[self.k][1] > indent_here:
            ln, ind, s = self.lines[self.k]  # a plain scalar folded over several lines
            if self._is_key(s) or s.startswith("- "):
                raise _Bad(ln, ind + 1, "bad indentation: a key or item under a plain value")
            parts.append(_strip_comment(s))
            self.k += 1
        return _scalar(" ".join(parts))


def parse_yaml(text: str, where: str):
    """The document of ``text`` (see the module docstring for what is read), refused as a ``DataError`` saying
    ``where: invalid YAML at line L, column C: why`` when it is not YAML."""
    try:
        return _Parser(text).parse()
    except _Bad as exc:
        raise DataError(f"{where}: invalid YAML at line {exc.line}, column {exc.col}: {exc.msg}") from None
    except RecursionError:
        raise DataError(f"{where}: YAML nested too deeply to read") from None


def read_profile_meta(folder) -> dict:
    """The mapping of ``folder``'s ``profile_meta.yaml`` (``{}`` when the folder has none); an invalid file, or one
    whose document is not a mapping, is a ``DataError`` naming the file, line and column."""
    from .._io import read_text

    p = Path(folder) / "profile_meta.yaml"
    if not p.is_file():
        return {}
    doc = parse_yaml(read_text("profile_meta.yaml", p, what="profile description", max_bytes=1 << 20), str(p))
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise DataError(f"{p}: expected a YAML mapping (model: ..., engine_effective: ...), not a "
                        f"{'sequence' if isinstance(doc, list) else 'single value'}")
    return doc


def scalar_text(value) -> str | None:
    """``value`` of a :func:`read_profile_meta` mapping as text where it is a scalar YAML typed (``model: 7``, the int
    7: ``"7"``), ``None`` for a missing or null value, a boolean, an empty text, a mapping or a
    sequence (no name is one of those)."""
    if isinstance(value, bool) or not isinstance(value, (str, int, float)):
        return None
    return str(value) or None
