"""The swap cost per KV token is one option in every command that takes it: ``--swap-ms-per-token MS``, with
``--swap-us-per-token US`` as its alias (1 ms = 1000 us); `simulate` and `latency` each took one spelling only."""
import json
import math

import pytest

from fluidq.cli import build_parser
from fluidq.cli.common import swap_cost
from fluidq.testing.cli import run_cli

run = run_cli

KV = ["--kv-capacity", "2000", "--preemption", "swap"]


def _without_clock(obj):
    """``obj`` without its wall-clock fields (``wall_s``, latency's ``seconds``: all two runs of one simulation may differ in)."""
    if isinstance(obj, dict):
        return {k: _without_clock(v) for k, v in obj.items() if k not in ("wall_s", "seconds")}
    if isinstance(obj, list):
        return [_without_clock(v) for v in obj]
    return obj


@pytest.mark.parametrize("command", ["simulate", "latency"])
def test_both_spellings_are_taken(command):
    for flag in ("--swap-ms-per-token", "--swap-us-per-token"):
        args = build_parser().parse_args([command, flag, "2"])
        assert getattr(args, flag[2:].replace("-", "_")) == 2.0


@pytest.mark.parametrize("argv", [
    ["simulate", "--horizon", "20", "--no-progress", "--json", *KV],
    # (load 1.5: the loads are of the load basis since h-basis1, max_throughput's KV-limited batch with swap, and
    # at 0.9 of it this 2000-token cache swapped too little for the cost to show)
    ["latency", "--loads", "1.5", "--horizon", "20", "--replications", "1", "--orderings", "fcfs,sjf", "--json", *KV],
])
def test_the_two_units_give_the_same_run(argv, capsys):
    # 40 us = 0.04 ms: one cost, so one simulation, whichever spelling (and unit) gave it
    rc_us, out_us, err = run([*argv, "--swap-us-per-token", "40"], capsys)
    assert rc_us == 0, err
    rc_ms, out_ms, err = run([*argv, "--swap-ms-per-token", "0.04"], capsys)
    assert rc_ms == 0, err
    us, ms = _without_clock(json.loads(out_us)), _without_clock(json.loads(out_ms))
    assert us == ms
    assert "swap" in out_us  # the runs did swap (not a vacuous comparison)
    # and a cost 1000 times larger changes the run: the unit is read, not ignored
    rc, out_big, err = run([*argv, "--swap-ms-per-token", "40"], capsys)
    assert rc == 0, err
    assert _without_clock(json.loads(out_big)) != us


class _Args:
    def __init__(self, ms=None, us=None):
        self.swap_ms_per_token, self.swap_us_per_token = ms, us


@pytest.mark.parametrize("ms", [0.0, 0.001, 0.04, 0.5, 1.0, 3.7, 125.0, 1e6])
def test_the_conversion(ms):
    us = ms * 1e3
    # in the command's own unit the value is taken unchanged; the other unit is converted (one rounding)
    assert swap_cost(_Args(ms=ms), "ms") == ("--swap-ms-per-token", ms, ms)
    assert swap_cost(_Args(us=us), "us") == ("--swap-us-per-token", us, us)
    flag, typed, in_ms = swap_cost(_Args(us=us), "ms")
    assert (flag, typed) == ("--swap-us-per-token", us) and math.isclose(in_ms, ms, rel_tol=1e-15, abs_tol=0)
    flag, typed, in_us = swap_cost(_Args(ms=ms), "us")
    assert (flag, typed) == ("--swap-ms-per-token", ms) and math.isclose(in_us, us, rel_tol=1e-15, abs_tol=0)
    assert swap_cost(_Args(), "ms") == (None, None, None)


@pytest.mark.parametrize("command, extra", [("simulate", ["--horizon", "5"]), ("latency", ["--horizon", "5"])])
def test_errors_name_the_spelling_typed(command, extra, capsys):
    rc, _, err = run([command, *extra, *KV, "--swap-us-per-token", "-1"], capsys)
    assert rc == 2 and "--swap-us-per-token" in err and "microseconds" in err
    rc, _, err = run([command, *extra, *KV, "--swap-ms-per-token", "-1"], capsys)
    assert rc == 2 and "--swap-ms-per-token" in err and "a finite number of ms" in err
    rc, _, err = run([command, *extra, *KV, "--swap-ms-per-token", "1", "--swap-us-per-token", "1000"], capsys)
    assert rc == 2 and "give one of them" in err
    rc, _, err = run([command, *extra, "--swap-ms-per-token", "1"], capsys)
    assert rc == 2 and "--swap-ms-per-token 1.0 is ignored without --preemption swap" in err
    # the largest cost, in either unit: the longest batch time (1e6 s)
    rc, _, err = run([command, *extra, *KV, "--swap-ms-per-token", "2e9"], capsys)
    assert rc == 2 and "--swap-ms-per-token" in err and "1e+09" in err
    rc, _, err = run([command, *extra, *KV, "--swap-us-per-token", "2e12"], capsys)
    assert rc == 2 and "--swap-us-per-token" in err and "1e+12" in err


def test_help_lists_both():
    for command in ("simulate", "latency"):
        sub = build_parser()._subparsers._group_actions[0].choices[command]
        text = sub.format_help()
        assert "--swap-ms-per-token MS" in text and "--swap-us-per-token US" in text and "alias" in text
