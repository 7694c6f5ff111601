"""Progress lines on stderr: redrawn in place on a terminal, whole lines otherwise.

A carriage return (``\\r``) redraws a line on a terminal; in a log file or a pipe it would leave one
long line with every step in it, so there each step is its own line.
"""
from __future__ import annotations

import sys

__all__ = ["Steps", "draw", "clear", "end_line"]

#: the stream whose last line is a progress line still being redrawn (``None``: no such line)
_open_line = [None]


def draw(text: str, stream=None) -> None:
    """Redraw the progress line with ``text`` (a terminal only: callers check)."""
    stream = stream if stream is not None else sys.stderr
    stream.write("\r" + text)
    stream.flush()
    _open_line[0] = stream


def clear(stream=None, width: int = 60) -> None:
    """Blank the progress line, the cursor back at its start (the run is over; its output follows)."""
    stream = stream if stream is not None else sys.stderr
    stream.write("\r" + " " * width + "\r")
    stream.flush()
    _open_line[0] = None


def end_line() -> None:
    """End a progress line still open, so that a message (interrupted, an error) starts its own line."""
    stream, _open_line[0] = _open_line[0], None
    if stream is not None:
        try:
            stream.write("\n")
            stream.flush()
        except (OSError, ValueError):  # the stream is gone: nothing to end
            pass


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
            _open_line[0] = self.stream
        else:
            self.stream.write(text.rstrip() + "\n")
        self.stream.flush()

    def done(self) -> None:
        """End the redrawn line on a terminal (nothing to do otherwise)."""
        if self.enabled and self._drawn:
            self.stream.write("\n")
            self.stream.flush()
            self._drawn = False
            _open_line[0] = None
