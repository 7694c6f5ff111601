"""Run the command line in-process and check its one-line errors (for tests of fluidq and of code that
drives it).

``run_cli(argv, capsys)`` returns ``(exit code, stdout, stderr)`` (argparse's own exits included);
``assert_one_line(argv, capsys, *words)`` asserts exit code 2 with exactly one line on stderr, no
traceback, no usage text and no "internal error", containing every one of ``words``, and returns it.
``capsys`` is pytest's fixture of that name.
"""
from __future__ import annotations

__all__ = ["assert_one_line", "run_cli"]


def run_cli(argv, capsys):
    from ..cli import main

    try:
        rc = main(list(argv))
    except SystemExit as exc:  # argparse's own errors
        rc = exc.code
    out, err = capsys.readouterr()
    return rc, out, err


def assert_one_line(argv, capsys, *words):
    rc, out, err = run_cli(argv, capsys)
    assert rc == 2, (argv, rc, out, err)
    assert err.count("\n") == 1 and "Traceback" not in err and "usage:" not in err, err
    assert "internal error" not in err, err
    for w in words:
        assert w in err, (w, err)
    return err
