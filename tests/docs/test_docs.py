"""The documentation builds with ``mkdocs build --strict``, and its Python snippets run.

Fenced blocks marked ```` ```python ```` in the tutorials and how-to guides are executed in order,
one namespace per page, in a temporary folder; blocks marked ```` ```py ```` are shown but not run
(they need a cluster or take long).  So a tutorial that no longer matches the API fails here.
"""
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
GUIDES = sorted([*(DOCS / "tutorials").glob("*.md"), *(DOCS / "how-to").glob("*.md")])


def _mkdocs_available():
    try:
        import material  # noqa: F401
        import mkdocs  # noqa: F401
        import mkdocstrings  # noqa: F401
    except ImportError:
        return False
    return True


@pytest.mark.skipif(not _mkdocs_available(), reason="mkdocs, mkdocs-material or mkdocstrings not installed "
                    "(pip install -e '.[docs]')")
def test_mkdocs_build_strict(tmp_path):
    site = tmp_path / "site"
    run = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(site)],
                         cwd=ROOT, capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert (site / "index.html").exists()
    api = (site / "reference" / "analyses" / "index.html").read_text()
    assert "max_throughput" in api and "check_stability" in api  # mkdocstrings rendered the docstrings


def test_every_nav_page_exists_and_the_guides_are_in_the_nav():
    nav = re.findall(r":\s*([\w\-/]+\.md)\s*$", (ROOT / "mkdocs.yml").read_text(), re.M)
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md")}
    assert set(nav) <= pages, f"nav names missing pages: {sorted(set(nav) - pages)}"
    sections = ("tutorials/", "how-to/", "explanation/", "reference/", "developer/")
    assert {p for p in pages if p.startswith(sections)} <= set(nav)  # pages elsewhere may be linked only


def _blocks(page: Path):
    return re.findall(r"^```python\n(.*?)^```", page.read_text(), re.S | re.M)


RUNNABLE = [p for p in GUIDES if _blocks(p)]
#: reference and explanation pages with ```python blocks: they run too (an example that no longer matches the
#: API fails here), outside the tutorial count above
REFERENCE = sorted(p for p in [*(DOCS / "reference").glob("*.md"), *(DOCS / "explanation").glob("*.md"),
                               *DOCS.glob("*.md")] if _blocks(p))


def test_reference_pages_with_python_are_run():
    assert DOCS / "reference" / "roofline.md" in REFERENCE


def test_every_tutorial_has_runnable_code():
    tutorials = [p for p in GUIDES if p.parent.name == "tutorials"]
    assert tutorials and all(p in RUNNABLE for p in tutorials)
    assert len(RUNNABLE) >= len(GUIDES) - 3  # how-to pages for a cluster or long runs may show code only


@pytest.mark.parametrize("page", RUNNABLE + REFERENCE, ids=lambda p: f"{p.parent.name}/{p.name}")
def test_snippets_run(page, tmp_path, monkeypatch):
    blocks = _blocks(page)
    import matplotlib

    matplotlib.use("Agg")
    monkeypatch.chdir(tmp_path)
    ns = {"__name__": "__docs__"}
    for k, code in enumerate(blocks):
        try:
            exec(compile(code, f"{page.relative_to(ROOT)} block {k + 1}", "exec"), ns)
        except ImportError as exc:  # an optional extra (dask, pandas) missing here; fluidq itself must import
            if (exc.name or "fluidq").split(".")[0] == "fluidq":
                raise
            pytest.skip(f"{page.name} block {k + 1} needs {exc.name}")


#: pages outside the tutorials and how-to guides whose ```python blocks run too (explanation, reference, the
#: latency page): before 2026-12-06 only GUIDES ran, so these could drift from the API unnoticed
OTHER = [p for p in sorted(DOCS.rglob("*.md")) if p not in GUIDES and _blocks(p)]
#: a page whose blocks take minutes (latency.md: compare_orderings over 300 s x 2 replications x 6 orderings
#: x 2 loads, 95 s on the shared 2-vCPU VM): run with -m slow
SLOW_PAGES = {"latency.md"}


def test_the_other_pages_with_code_are_found():
    names = {str(p.relative_to(DOCS)) for p in OTHER}
    assert {"explanation/single-engine.md", "reference/roofline.md", "latency.md"} <= names, names


@pytest.mark.parametrize("page", [pytest.param(p, marks=pytest.mark.slow) if p.name in SLOW_PAGES else p
                                  for p in OTHER], ids=lambda p: str(p.relative_to(DOCS)))
def test_snippets_of_the_other_pages_run(page, tmp_path, monkeypatch):
    test_snippets_run(page, tmp_path, monkeypatch)


def test_every_cli_command_is_in_the_generated_cli_reference(tmp_path):
    """The CLI page is generated from the parser by docs/hooks/cli_help.py: check the hook's output."""
    import importlib.util
    import pkgutil

    from fluidq.cli import commands

    spec = importlib.util.spec_from_file_location("cli_help", DOCS / "hooks" / "cli_help.py")
    hook = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(hook)
    page = (DOCS / "reference" / "cli.md").read_text()
    assert hook.MARKER in page
    text = hook.on_page_markdown(page, None, None, None)
    names = [m.name for m in pkgutil.iter_modules(commands.__path__) if not m.name.startswith("_")]
    missing = [n for n in names if f"## `fluidq {n}`" not in text]
    assert not missing and "usage: fluidq sweep" in text, missing

