"""The main job: ``fluidq report`` writes a folder with Markdown, a self-contained HTML page and PNGs.

The report is a list of sections; each section is a module in ``fluidq/report/sections/`` named
``sNN_topic.py`` (``NN`` orders them) with ``render(ctx) -> Section``.  Adding a section touches
one new file.  ``ctx`` is a :class:`ReportContext`: the engine, the workload, the output folder
and a ``figure(name)`` helper that returns a path for a PNG.
"""
from __future__ import annotations

import base64
import html
import importlib
import pkgutil
import re
import time
from dataclasses import dataclass, field
from pathlib import Path

from .._version import __version__
from ..engine import Engine
from ..workload import Workload
from .._io import staged_folder, write_output

__all__ = ["ReportContext", "Section", "build_report", "default_inputs"]


@dataclass
class Section:
    """One part of the report: a title, Markdown text, PNG paths and a machine-readable summary."""

    title: str
    markdown: str
    figures: list = field(default_factory=list)
    data: dict = field(default_factory=dict)


@dataclass
class ReportContext:
    engine: Engine
    workload: Workload
    out_dir: Path
    quick: bool = False
    profile_name: str | None = None
    results: dict = field(default_factory=dict)
    _reference: object = field(default=None, repr=False)

    def figure(self, name: str) -> Path:
        return self.out_dir / f"{name}.png"

    @property
    def reference(self):
        """The :class:`~fluidq.report.reference.Reference` every section uses: one scheduler
        configuration, one reference capacity ``lambda*``, the loads shown."""
        if self._reference is None:
            from .reference import reference

            self._reference = reference(self.engine, self.workload)
        return self._reference


def default_inputs():
    """The embedded default: the paper's CodeLlama-34B/A100 profile and the Azure conversation trace."""
    from ..profiles import DEFAULT_PROFILE, load_profile

    prof = load_profile(DEFAULT_PROFILE)
    return prof.engine(), Workload.from_trace("azure-conv", name="Azure LLM inference trace 2023, conversation"), prof.name


def _sections():
    from . import sections

    mods = sorted(m.name for m in pkgutil.iter_modules(sections.__path__) if re.match(r"s\d\d_", m.name))
    return [importlib.import_module(f"{sections.__name__}.{m}") for m in mods]


#: what a --quick report says at its top (and each of its figures in its caption)
QUICK_NOTE = ("**Quick run** (`--quick`): simulations of 60 s (latency: 80 s, four orderings, two replications) and no "
              "simulated region; every figure below comes from these short runs. Leave out `--quick` for the "
              "full report (240 s simulations; latency 400 s, six orderings, four replications).")


def _html(title: str, parts: list[Section], out_dir: Path, *, quick: bool = False) -> str:
    """A self-contained page: PNGs inlined as data URIs, Markdown rendered by a tiny converter."""
    body = [_md_to_html(QUICK_NOTE)] if quick else []
    for s in parts:
        body.append(f"<section><h2>{html.escape(s.title)}</h2>{_md_to_html(s.markdown)}")
        for fig in s.figures:
            data = base64.b64encode(Path(fig).read_bytes()).decode()
            cap = Path(fig).name + (" (quick run)" if quick else "")
            body.append(f'<figure><img alt="{html.escape(Path(fig).stem)}" src="data:image/png;base64,{data}"/>'
                        f"<figcaption>{html.escape(cap)}</figcaption></figure>")
        body.append("</section>")
    css = ("body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}"
           "table{border-collapse:collapse;margin:1rem 0}td,th{border:1px solid #ccc;padding:.25rem .5rem;text-align:left}"
           "img{max-width:100%}code{background:#f4f4f4;padding:0 .2rem}figure{margin:1rem 0}")
    return (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            f"<style>{css}</style></head><body><h1>{html.escape(title)}</h1>{''.join(body)}</body></html>")


def _inline(text: str) -> str:
    t = html.escape(text)
    t = re.sub(r"`([^`]+)`", r"<code>\1</code>", t)
    t = re.sub(r"\*\*([^*]+)\*\*", r"<strong>\1</strong>", t)
    return t


def _md_to_html(md: str) -> str:
    out, table, para, items = [], [], [], []

    def flush():
        nonlocal table, para, items
        if table:
            rows = [r for r in table if not re.match(r"^\|[\s:|-]+\|$", r)]
            cells = [[_inline(c.strip()) for c in r.strip("|").split("|")] for r in rows]
            head = "".join(f"<th>{c}</th>" for c in cells[0])
            rest = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in r) + "</tr>" for r in cells[1:])
            out.append(f"<table><thead><tr>{head}</tr></thead><tbody>{rest}</tbody></table>")
            table = []
        if items:
            out.append("<ul>" + "".join(f"<li>{_inline(i)}</li>" for i in items) + "</ul>")
            items = []
        if para:
            out.append(f"<p>{_inline(' '.join(para))}</p>")
            para = []

    for line in md.splitlines():
        s = line.strip()
        if s.startswith("|"):
            if para or items:
                flush()
            table.append(s)
        elif s.startswith(("- ", "* ")):
            if para or table:
                flush()
            items.append(s[2:])
        elif s.startswith("#"):
            flush()
            level = min(6, len(s) - len(s.lstrip("#")) + 2)
            out.append(f"<h{level}>{_inline(s.lstrip('#').strip())}</h{level}>")
        elif not s:
            flush()
        else:
            if table or items:
                flush()
            para.append(s)
    flush()
    return "".join(out)


def build_report(out_dir="fluidq-report", engine: Engine | None = None, workload: Workload | None = None, *,
                 quick: bool = False, profile_name: str | None = None, progress=None) -> dict:
    """Write the report; return ``{"markdown": path, "html": path, "figures": [...], "sections": [...]}``.

    An existing folder is reused: the report files themselves (``report.md``, ``report.html``, the
    PNGs) are replaced, other files are left alone.  What survives an interruption: every section
    renders into a temporary folder beside ``out_dir`` (same file system; see
    :func:`fluidq._io.staged_folder`), and the files are moved into ``out_dir`` only once the whole
    report -- figures, Markdown and HTML -- is written.  A Ctrl-C or an error before that leaves
    ``out_dir`` exactly as it was (an earlier report stays whole: its text and its figures still belong
    together) and removes the temporary folder; the move itself is a few renames during which
    SIGINT/SIGTERM are held back.  A stop that raises no exception can leave a hidden
    ``.NAME.partial-XXXX`` folder beside ``out_dir``: ``kill -9``, or SIGTERM in a program that does not
    handle it (``fluidq report`` turns SIGTERM into the Ctrl-C path, exit 143).  Each file is moved by a rename: a symlink
    planted at one of those names is replaced by the new file and the file it points to is never
    written; a folder, FIFO or device at one of them is refused (``DataError``) before any file is
    moved.  ``fluidq report`` also refuses an ``--out`` that is a symlink or a folder it did not write.
    """
    if engine is None or workload is None:
        e0, w0, p0 = default_inputs()
        engine = engine or e0
        workload = workload or w0
        profile_name = profile_name or p0
    out = Path(out_dir)
    with staged_folder(out, what="report file") as stage:
        res = _render(stage, engine, workload, quick=quick, profile_name=profile_name, progress=progress)
    # the files now lie in ``out``: say where
    figs = [str(out / Path(f).name) for f in res["figures"]]
    return {"markdown": str(out / "report.md"), "html": str(out / "report.html"), "figures": figs,
            "sections": res["sections"]}


def _render(out: Path, engine, workload, *, quick, profile_name, progress) -> dict:
    """Every section, the Markdown and the HTML, written into ``out`` (the temporary folder)."""
    ctx = ReportContext(engine=engine, workload=workload, out_dir=out, quick=quick, profile_name=profile_name)
    t0 = time.time()
    parts = []
    mods = _sections()
    for i, mod in enumerate(mods):
        if progress:
            progress(i, len(mods), mod.__name__.rsplit(".", 1)[-1])
        sec = mod.render(ctx)
        if sec is not None:
            parts.append(sec)
    title = f"fluidq report: {engine.name} under {workload.name}"
    md = [f"# {title}", "", f"fluidq {__version__}, generated in {time.time() - t0:.1f} s.", ""]
    if quick:
        md += [QUICK_NOTE, ""]
    for s in parts:
        md += [f"## {s.title}", "", s.markdown.strip(), ""]
        md += [f"![{Path(f).stem}{' (quick run)' if quick else ''}]({Path(f).name})" for f in s.figures] + [""]
    write_output(out / "report.md", "\n".join(md), what="report file")
    write_output(out / "report.html", _html(title, parts, out, quick=quick), what="report file")
    figs = [str(f) for s in parts for f in s.figures]
    return {"markdown": str(out / "report.md"), "html": str(out / "report.html"), "figures": figs,
            "sections": [{"title": s.title, "data": s.data} for s in parts]}
