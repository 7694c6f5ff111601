"""A CLI call that must fail as a user error: exit code 2, one line on stderr, no traceback or internal error.
Shared by the tests/cli files that check refusals (imported by name: pytest puts tests/cli on sys.path)."""
from fluidq.cli import main


def cli_error(argv, capsys):
    """Run ``fluidq argv``; assert a one-line user error and return stderr."""
    rc = main(argv)
    out, err = capsys.readouterr()
    assert rc == 2, (rc, out, err)
    assert err.count("\n") == 1 and "Traceback" not in err and "internal error" not in err, err
    return err
