"""mkdocs hook: replace ``<!-- fluidq-cli-help -->`` by the ``--help`` of every ``fluidq`` command.

The command list comes from the parser itself (commands are discovered modules), so the CLI
reference cannot fall behind the code.
"""
from __future__ import annotations

import os

MARKER = "<!-- fluidq-cli-help -->"


def _sections() -> str:
    from fluidq.cli import build_parser

    os.environ.setdefault("COLUMNS", "100")
    parser = build_parser()
    sub = next(a for a in parser._actions if a.__class__.__name__ == "_SubParsersAction")
    helps = {a.dest: a.help for a in sub._choices_actions}
    out = []
    for name in sorted(sub.choices):
        p = sub.choices[name]
        out.append(f"## `fluidq {name}`\n\n{helps.get(name) or ''}\n\n```text\n{p.format_help().rstrip()}\n```\n")
    return "\n".join(out)


def on_page_markdown(markdown, page, config, files, **kwargs):
    if MARKER not in markdown:
        return markdown
    return markdown.replace(MARKER, _sections())
