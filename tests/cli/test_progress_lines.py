"""Progress on stderr: whole lines when stderr is not a terminal (issue 17: a log file got one long
line of carriage returns), redrawn in place on a terminal."""
import io

from fluidq.cli.progress import Steps


class Tty(io.StringIO):
    def isatty(self):
        return True


def test_a_log_gets_one_line_per_step():
    s = io.StringIO()
    st = Steps(10, stream=s)
    for i in range(3):
        st.step(i, 3, f"s{i}")
    st.done()
    assert "\r" not in s.getvalue()
    assert s.getvalue().splitlines() == ["[1/3] s0", "[2/3] s1", "[3/3] s2"]


def test_a_terminal_gets_one_redrawn_line():
    s = Tty()
    st = Steps(4, stream=s)
    st.step(0, 2, "a")
    st.step(1, 2, "b")
    st.done()
    assert s.getvalue() == "\r[1/2] a   \r[2/2] b   \n"


def test_disabled_prints_nothing():
    s = Tty()
    st = Steps(stream=s, enabled=False)
    st.step(0, 1, "a")
    st.done()
    assert s.getvalue() == ""


def test_validate_progress_in_a_log_is_whole_lines(tmp_path, capsys):
    from fluidq.cli import main

    rc = main(["validate", "--case", "batch-time-fits", "--out", str(tmp_path / "v")])
    err = capsys.readouterr().err
    assert rc in (0, 1) and "\r" not in err and err.splitlines()[0].startswith("[1/"), err
