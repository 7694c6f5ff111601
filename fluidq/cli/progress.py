"""Progress lines on stderr: redrawn in place on a terminal, whole lines otherwise.

A carriage return (``\\r``) redraws a line on a terminal; in a log file or a pipe it would leave one
long line with every step in it, so there each step is its own line.
"""
from __future__ import annotations

import sys

__all__ = ["Steps"]


class Steps:
    """``Steps(width)``; call ``step(i, n, name)`` for each step and ``done()`` at the end."""

    def __init__(self, width: int = 28, *, stream=None, enabled: bool = True):
        self.width = width
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = enabled
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        self._drawn = False

    def step(self, i: int, n: int, name: str) -> None:
        if not self.enabled:
            return
        text = f"[{i + 1}/{n}] {name:<{self.width}}"
        if self.tty:
            self.stream.write("\r" + text)
            self._drawn = True
        else:
            self.stream.write(text.rstrip() + "\n")
        self.stream.flush()

    def done(self) -> None:
        """End the redrawn line on a terminal (nothing to do otherwise)."""
        if self.enabled and self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False
