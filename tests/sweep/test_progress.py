"""The sweep progress bar redraws in place only on a terminal; in a log each drawing is a whole line."""
import io

from fluidq.sweep.progress import ProgressBar


class _Tty(io.StringIO):
    def isatty(self):
        return True


def test_log_stream_gets_whole_lines_without_carriage_returns():
    s = io.StringIO()
    bar = ProgressBar(4, stream=s, enabled=True, label="sweep t")
    for _ in range(4):
        bar.update(1)
    bar.close()
    out = s.getvalue()
    assert "\r" not in out and out.endswith("\n")
    lines = out.splitlines()
    assert lines[0].startswith("sweep t [") and " 0/4 " in lines[0]
    assert " 4/4 100%" in lines[-1]
    # throttled: the four updates inside LOG_PERIOD_S add no line, only the start and the close draw
    assert len(lines) == 2


def test_terminal_redraws_in_place():
    s = _Tty()
    bar = ProgressBar(2, stream=s, enabled=None)
    bar.update(2)
    bar.close()
    out = s.getvalue()
    assert out.startswith("\r") and out.count("\n") == 1 and " 2/2 100%" in out


def test_not_enabled_on_a_log_by_default():
    s = io.StringIO()
    bar = ProgressBar(2, stream=s)
    bar.update(2)
    bar.close()
    assert s.getvalue() == ""
