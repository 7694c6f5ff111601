"""fluidq/kernel/select.py split into the driver and three private modules (branch h-selsplit, 2026-12-07): every name
the one module held is still importable from ``fluidq.kernel.select`` and is the very object the new module defines,
and numba's cache stamp covers the new files (a compiled phase edited alone must recompile, tests/kernel/
test_jit_cache_stamp.py)."""
from __future__ import annotations

import ast
import inspect
from pathlib import Path

import pytest

from fluidq.kernel import _jit, _select_checks, _select_phases, _select_state
from fluidq.kernel import select as sel

PARTS = (_select_state, _select_phases, _select_checks)


def _defined(module) -> list:
    """The names a module's top level assigns, or defines as functions and classes (ast: imports are not counted)."""
    names = []
    for node in ast.parse(inspect.getsource(module)).body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            names.append(node.name)
        elif isinstance(node, ast.Assign):
            names += [x.id for t in node.targets for x in ast.walk(t) if isinstance(x, ast.Name)]
    return names


@pytest.mark.parametrize("part", PARTS, ids=lambda m: m.__name__.rsplit(".", 1)[-1])
def test_every_moved_name_is_importable_from_select_as_the_same_object(part):
    names = _defined(part)
    assert len(names) >= 7, names  # (the walk found the module's names)
    missing = [n for n in names if getattr(sel, n, None) is not getattr(part, n)]
    assert not missing, f"not re-exported by fluidq.kernel.select (or another object there): {missing}"


def test_the_driver_calls_advance_by_its_name_in_select():
    """A test that wraps ``_advance`` patches ``fluidq.kernel.select._advance``: the driver must read it there."""
    assert sel.run_select.__globals__ is vars(sel)
    assert "_advance" in sel.run_select.__code__.co_names


def test_the_cache_stamp_covers_the_new_modules():
    base = Path(_jit.__file__).resolve().parent.parent
    stamped = {p.resolve() for pattern in _jit._STAMP_SOURCES for p in base.glob(pattern)}
    for module in (sel, *PARTS):
        assert Path(module.__file__).resolve() in stamped, module.__name__
