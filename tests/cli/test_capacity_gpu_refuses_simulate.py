"""``capacity --gpu`` with ``--method simulate``, ``--replications`` or ``--enable-prefix-caching`` (user6a, finding 2).

Those options are read with ``--profile-dir`` only; with ``--gpu`` the answer is the flow balance.  Before:
``capacity --gpu A10G --model Gemma-2-9B --method simulate --replications 3 --json`` returned method "fluid" and
``--enable-prefix-caching`` was dropped, silently -- the README promises an option that would be ignored is
refused (the path without --gpu refuses them).
"""
import pytest

from fluidq.cli import main

GPU = ["capacity", "--gpu", "A10G", "--model", "Gemma-2-9B", "--prompt", "1000", "--output", "200", "--json"]


@pytest.mark.parametrize("extra,named", [
    (["--method", "simulate", "--replications", "3"], "--method simulate, --replications"),
    (["--method", "simulate"], "--method simulate"),
    (["--replications", "3"], "--replications"),
    (["--enable-prefix-caching"], "--enable-prefix-caching"),
])
def test_refused_naming_the_flag(extra, named, capsys):
    rc = main(GPU + extra)
    out, err = capsys.readouterr()
    assert rc == 2, (rc, out, err)
    assert out == "" and err.count("\n") == 1 and "Traceback" not in err, err
    assert f"{named}: read only with --profile-dir" in err and "fluidq simulate" in err


def test_method_fluid_is_the_answer_given(capsys):
    """``--method fluid`` names what --gpu answers: accepted."""
    rc = main(GPU + ["--method", "fluid"])
    out, err = capsys.readouterr()
    assert rc in (0, None), err
    assert '"requests_per_s"' in out
