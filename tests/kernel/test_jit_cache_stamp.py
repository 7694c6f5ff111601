"""numba's cache of fluidq's kernels follows every source the compiled code depends on (fluidq/kernel/_jit.py).

numba stamps a cached function with the file that defines it only; a compiled loop that inlines a rule from
another module kept its machine code after an edit of that module alone.  The first test edits only the rule's
module in a copy of the package, between two processes sharing one NUMBA_CACHE_DIR, and requires the compiled
result to follow the edit (it fails with numba's plain ``cache=True``: the second process returns the old rule's
result from the cache), and requires the warm path to load from the cache when nothing changed.  The second
walks the jitted functions' globals: every module they take a function or a constant from must be in the stamp.
"""
from __future__ import annotations

import ast
import functools
import importlib
import importlib.util
import inspect
import json
import os
import shutil
import subprocess
import sys
import types
from pathlib import Path

import pytest

import fluidq
from fluidq.kernel import _jit

PACKAGE = Path(fluidq.__file__).resolve().parent

needs_numba = pytest.mark.skipif(not _jit.compiled(), reason="numba missing or NUMBA_DISABLE_JIT set")

# module A (a kernel) calls module B's rule (kernel/memory.py, as kv.py's loop calls token_next through kvrules),
# inlined and as a call, and reads a constant from outside fluidq.kernel (policies/batch_rule.py, as compose.py
# reads batchtime/operators.py's KT_* header)
RULE = "\n\ndef _stamp_probe_rule(x):\n    return x + 1\n"
CONSTANT = "\n_STAMP_PROBE_K = 1000\n"
KERNEL = '''from ..policies.batch_rule import _STAMP_PROBE_K
from . import memory
from ._jit import jit

_inlined = jit(memory._stamp_probe_rule, inline="always")
_called = jit(memory._stamp_probe_rule)


@jit
def kernel(x):
    return _inlined(x) * 100 + _called(x) + _STAMP_PROBE_K
'''
DRIVER = '''import json, sys
from fluidq.kernel import _stamp_probe as a, memory
from fluidq.policies import batch_rule
assert a.__file__.startswith(sys.argv[1]), a.__file__
got = a.kernel(5)
rule = memory._stamp_probe_rule(5)
stats = a.kernel.stats
print(json.dumps({"compiled": int(got), "python": rule * 100 + rule + batch_rule._STAMP_PROBE_K,
                  "hits": sum(stats.cache_hits.values()), "misses": sum(stats.cache_misses.values())}))
'''


def _copy_package(tmp_path: Path) -> Path:
    root = tmp_path / "src"
    pkg = root / "fluidq"
    shutil.copytree(PACKAGE, pkg, ignore=shutil.ignore_patterns("__pycache__", "*.pyc", "*.nbi", "*.nbc"))
    with open(pkg / "kernel" / "memory.py", "a") as f:
        f.write(RULE)
    with open(pkg / "policies" / "batch_rule.py", "a") as f:
        f.write(CONSTANT)
    (pkg / "kernel" / "_stamp_probe.py").write_text(KERNEL)
    (root / "driver.py").write_text(DRIVER)
    return root


def _run(root: Path, cache: Path) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("NUMBA_", "PYTHON"))}
    env.update(NUMBA_CACHE_DIR=str(cache), PYTHONPATH=str(root), PYTHONDONTWRITEBYTECODE="1")
    out = subprocess.run([sys.executable, str(root / "driver.py"), str(root)], cwd=root, env=env,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-3000:]
    return json.loads(out.stdout.strip().splitlines()[-1])


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert text.count(old) == 1, (path, old)
    path.write_text(text.replace(old, new))  # same size: numba 0.6x's (mtime, size) stamp of that file would see
    # only the mtime, and no stamp of the kernel's file changes at all


@needs_numba
def test_an_edit_of_a_rule_module_alone_recompiles_the_kernel_that_uses_it(tmp_path):
    root = _copy_package(tmp_path)
    cache = tmp_path / "numba_cache"
    first = _run(root, cache)
    assert first["compiled"] == first["python"] == 6 * 100 + 6 + 1000 and first["misses"] >= 1
    warm = _run(root, cache)  # nothing changed: loaded from the cache, not compiled again
    assert warm == {"compiled": 1606, "python": 1606, "hits": 1, "misses": 0}

    _edit(root / "fluidq" / "kernel" / "memory.py", "return x + 1\n", "return x + 2\n")
    edited = _run(root, cache)
    assert edited["python"] == 7 * 100 + 7 + 1000
    assert edited["compiled"] == edited["python"], "the compiled kernel ran the rule from before the edit"
    assert edited["misses"] >= 1 and edited["hits"] == 0
    assert _run(root, cache) == {"compiled": 1707, "python": 1707, "hits": 1, "misses": 0}

    _edit(root / "fluidq" / "policies" / "batch_rule.py", "_STAMP_PROBE_K = 1000", "_STAMP_PROBE_K = 2000")
    constant = _run(root, cache)
    assert constant["compiled"] == constant["python"] == 2707, "the compiled kernel kept the old constant"


def _stamped_files(sources) -> set:
    return {p.resolve() for pattern in sources for p in PACKAGE.glob(pattern)}


@functools.lru_cache(maxsize=None)
def _imports(module_name: str) -> dict:
    """name -> the module it is imported from, by the module's own import statements (ast; top level)."""
    module = sys.modules[module_name]
    tree = ast.parse(inspect.getsource(module))
    names = {}
    for node in tree.body:
        if isinstance(node, ast.ImportFrom):
            base = importlib.util.resolve_name("." * node.level + (node.module or ""), module.__package__) \
                if node.level else node.module
            for alias in node.names:
                sub = f"{base}.{alias.name}"  # `from . import memory`: the module itself
                names[alias.asname or alias.name] = sub if sub.startswith("fluidq.") and _is_module(sub) else base
        elif isinstance(node, ast.Import):
            for alias in node.names:
                names[alias.asname or alias.name.split(".")[0]] = alias.name
    return names


@functools.lru_cache(maxsize=None)
def _is_module(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except (ImportError, ValueError):
        return False


def _code_names(code) -> set:
    names = set(code.co_names)
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            names |= _code_names(const)
    return names


def _origin(module, name: str):
    """The module that defines the constant ``name`` seen from ``module`` (following `from X import name` chains)."""
    for _ in range(10):
        source = _imports(module.__name__).get(name)
        if source is None or not source.startswith("fluidq") or source == module.__name__:
            break
        module = importlib.import_module(source)
    return module


def _uncovered(sources) -> list:
    """The jitted functions' dependencies (defining modules, modules and functions they name, the modules their
    constants are imported from) whose files ``sources`` does not stamp."""
    from numba.core.dispatcher import Dispatcher

    stamped = _stamped_files(sources)
    todo = []
    for path in sorted((PACKAGE / "kernel").glob("*.py")):
        module = importlib.import_module(f"fluidq.kernel.{path.stem}" if path.stem != "__init__" else "fluidq.kernel")
        todo += [v for v in vars(module).values() if isinstance(v, Dispatcher)]
    assert len(todo) > 50, len(todo)  # the kernels' dispatchers were found
    missing, done = set(), set()
    while todo:
        disp = todo.pop()
        if id(disp) in done:
            continue
        done.add(id(disp))
        fn = disp.py_func
        home = sys.modules[fn.__module__]
        if Path(inspect.getfile(fn)).resolve() not in stamped:
            missing.add((fn.__qualname__, "defined in", fn.__module__))
        for name in _code_names(fn.__code__):
            if name not in fn.__globals__:
                continue  # a builtin, or an attribute name
            value = fn.__globals__[name]
            if isinstance(value, Dispatcher):
                todo.append(value)
                continue
            if isinstance(value, types.ModuleType):
                origin = value
            elif isinstance(value, types.FunctionType):
                origin = sys.modules[value.__module__]
            else:
                origin = _origin(home, name)
            if origin.__name__.startswith("fluidq") and Path(origin.__file__).resolve() not in stamped:
                missing.add((fn.__qualname__, name, origin.__name__))
    return sorted(missing)


@needs_numba
def test_the_stamp_covers_every_module_the_compiled_code_uses():
    assert _uncovered(_jit._STAMP_SOURCES) == []
    # the walk can fail: without one of the modules outside fluidq.kernel, it names what comes from there
    without_operators = [s for s in _jit._STAMP_SOURCES if s != "batchtime/operators.py"]
    assert any(origin == "fluidq.batchtime.operators" and name.startswith("KT_")
               for _, name, origin in _uncovered(without_operators))
    without_rule = [s for s in _jit._STAMP_SOURCES if s != "policies/batch_rule.py"]
    assert any(origin == "fluidq.policies.batch_rule" for *_, origin in _uncovered(without_rule))
    without_kernel = [s for s in _jit._STAMP_SOURCES if s != "kernel/*.py"] + ["kernel/kv.py"]
    assert any(origin == "fluidq.kernel.memory" for *_, origin in _uncovered(without_kernel))


@needs_numba
def test_every_kernel_carries_the_stamped_cache():
    from fluidq.kernel import compose, fcfs, kv, kvrules, network, select

    digest = _jit.source_digest()
    assert digest is not None and len(digest) == 64
    for disp in (kv._advance, fcfs._budget_split, kvrules.token_next, network._token_next, select._advance,
                 compose.chunks_s):
        stamp = disp._cache._impl.locator.get_source_stamp()
        assert stamp[-1] == digest, disp


def _tree(root: Path, files: dict) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def test_the_digest_follows_contents_and_names_and_refuses_what_is_missing(tmp_path):
    sources = ("kernel/*.py", "policies/batch_rule.py")
    _tree(tmp_path, {"kernel/a.py": "A = 1\n", "kernel/b.py": "B = 2\n", "policies/batch_rule.py": "R = 3\n",
                     "policies/other.py": "O = 4\n"})
    first = _jit.source_digest(tmp_path, sources)
    assert first is not None and first == _jit.source_digest(tmp_path, sources)
    (tmp_path / "policies" / "other.py").write_text("O = 5\n")  # not a stamped source
    assert _jit.source_digest(tmp_path, sources) == first
    (tmp_path / "kernel" / "b.py").write_text("B = 3\n")  # same size, other contents
    second = _jit.source_digest(tmp_path, sources)
    assert second != first
    (tmp_path / "kernel" / "b.py").rename(tmp_path / "kernel" / "c.py")  # same contents, another name
    assert _jit.source_digest(tmp_path, sources) not in (first, second)
    (tmp_path / "policies" / "batch_rule.py").unlink()
    assert _jit.source_digest(tmp_path, sources) is None  # unreadable sources: numba's own stamp, no error


@needs_numba
def test_numba_internals_that_differ_fall_back_to_numbas_cache(monkeypatch):
    from numba.core import caching

    assert _jit._stamped_cache_class(types.SimpleNamespace(), "d") is None
    assert _jit._stamped_cache_class(types.SimpleNamespace(FunctionCache=type("F", (), {})), "d") is None
    no_locator = type("F", (), {"_impl_class": type("I", (), {})})
    assert _jit._stamped_cache_class(types.SimpleNamespace(FunctionCache=no_locator), "d") is None
    assert issubclass(_jit._stamped_cache_class(caching, "d"), caching.FunctionCache)

    monkeypatch.setattr(_jit, "_stamped_cache", None)  # as where the internals differ

    def plain(x):
        return x + 1

    disp = _jit.jit(plain)
    assert type(disp._cache) is caching.FunctionCache and disp(1) == 2
