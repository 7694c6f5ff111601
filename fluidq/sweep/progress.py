"""A tiny progress bar on stderr (no dependency): ``[#####-----] 1200/2000 60% 12 s, eta 8 s``.

On a terminal it is redrawn in place with a carriage return; on any other stream (a log file, a pipe)
each drawing is a whole line, at most one every ``LOG_PERIOD_S`` seconds, so a log reads line by line.
"""
from __future__ import annotations

import sys
import time

__all__ = ["ProgressBar"]

LOG_PERIOD_S = 10.0


class ProgressBar:
    """Redraws at most ``max_hz`` times a second; ``enabled=None`` draws only on a terminal."""

    def __init__(self, total: int, done: int = 0, *, label: str = "sweep", stream=None, enabled=None,
                 width: int = 30, max_hz: float = 8.0):
        self.total, self.done, self.start_done = total, done, done
        self.label, self.width = label, width
        self.stream = stream if stream is not None else sys.stderr
        self.tty = bool(getattr(self.stream, "isatty", lambda: False)())
        if enabled is None:
            enabled = self.tty
        self.enabled = enabled
        self.t0 = time.monotonic()
        self._last = 0.0
        self._period = 1.0 / max_hz if self.tty else LOG_PERIOD_S
        self._last_line = None
        self.draw(force=True)

    def update(self, n: int) -> None:
        self.done += n
        self.draw()

    def line(self) -> str:
        frac = self.done / self.total if self.total else 1.0
        fill = int(round(frac * self.width))
        el = time.monotonic() - self.t0
        new = self.done - self.start_done
        eta = ""
        if 0 < new and self.done < self.total:
            eta = f", eta {el / new * (self.total - self.done):.0f} s"
        resumed = f" ({self.start_done} resumed)" if self.start_done else ""
        return (f"{self.label} [{'#' * fill}{'-' * (self.width - fill)}] {self.done}/{self.total} "
                f"{100 * frac:3.0f}% {el:.0f} s{eta}{resumed}")

    def draw(self, force: bool = False) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self._last < self._period and self.done < self.total:
            return
        self._last = now
        line = self.line()
        if self.tty:
            self.stream.write("\r" + line)
        elif line != self._last_line:
            self.stream.write(line + "\n")
            self._last_line = line
        self.stream.flush()

    def close(self) -> None:
        if self.enabled:
            self.draw(force=True)
            if self.tty:
                self.stream.write("\n")
            self.stream.flush()
