"""Plotting takes results and never recomputes an analysis (issue 14, T9): no module of ``fluidq.plotting``
imports an analysis package, at module level or inside a function, by ``import``/``from`` statements,
``importlib.import_module`` or ``__import__`` with a literal name."""
import ast
from pathlib import Path

import pytest

import fluidq

ROOT = Path(fluidq.__file__).parent
ANALYSES = ("capacity", "dtmc", "fluid", "sim", "stability", "latency", "predict", "validate")


def _absolute(module: str, node) -> list[str]:
    """The absolute names an import node brings in (``from .. import x`` -> ``fluidq.x``)."""
    if isinstance(node, ast.Import):
        return [a.name for a in node.names]
    if node.level:
        base = module.split(".")[: -node.level] if module.count(".") >= node.level else []
        # a package's __init__ resolves one level less: the module name is the package itself
        pkg = ".".join(base)
        head = f"{pkg}.{node.module}" if node.module else pkg
    else:
        head = node.module or ""
    return [head] + [f"{head}.{a.name}" for a in node.names]


def _imports(path: Path, module: str) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            found += [(node.lineno, n) for n in _absolute(module, node)]
        elif isinstance(node, ast.Call) and node.args and isinstance(node.args[0], ast.Constant) \
                and isinstance(node.args[0].value, str):
            f = node.func
            name = f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", "")
            if name in ("import_module", "__import__"):
                found.append((node.lineno, node.args[0].value))
    return found


def _modules():
    for path in sorted((ROOT / "plotting").rglob("*.py")):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        parts = list(rel.parts)
        # a package's __init__: relative imports resolve against the package, so name it one level deeper
        module = ".".join(parts) if parts[-1] != "__init__" else ".".join(parts[:-1] + ["__init__"])
        yield path, module


def _is_analysis(name: str) -> bool:
    parts = name.split(".")
    return len(parts) >= 2 and parts[0] == "fluidq" and parts[1] in ANALYSES


def test_plotting_imports_no_analysis_even_inside_functions():
    bad = [f"{path.relative_to(ROOT.parent)}:{line} imports {name}"
           for path, module in _modules() for line, name in _imports(path, module) if _is_analysis(name)]
    assert bad == [], "fluidq.plotting must draw results, not compute them:\n" + "\n".join(bad)


@pytest.mark.parametrize("src, caught", [
    ("def f():\n    from ..capacity import max_throughput\n", True),
    ("def f():\n    from .. import stability\n", True),
    ("import fluidq.sim\n", True),
    ("def f():\n    import importlib\n    importlib.import_module('fluidq.dtmc')\n", True),
    ("from ..errors import ParameterError\nfrom . import axes\n", False),
    ("from ..network.model import Hop\n", False),
])
def test_the_check_sees_every_kind_of_import(tmp_path, src, caught):
    p = tmp_path / "m.py"
    p.write_text(src)
    names = [n for _, n in _imports(p, "fluidq.plotting.m")]
    assert any(_is_analysis(n) for n in names) is caught, names
