"""Fuzz every sub-command in process (issue 13): numbers at the edges, strings and paths of every kind.

Each command line must end in exit 2 with exactly one line on stderr naming something, or exit 0 with
an answer that prints no ``nan``/``inf``; never a traceback or an internal error, never past 20 s, and
never a changed byte of an input file.  The draws are derandomized (the same in every run) and few per
command, to keep CI fast; ``benchmarks/fuzz_cli.py`` runs many more, in real subprocesses.  The inputs
issue 13 names and the failures the fuzzing found are fixed examples (fuzzcore.ISSUE_CORPUS/FOUND_CORPUS;
those that cost a full timeout while open run only in the long run).
"""
import os
from datetime import timedelta

import pytest
from hypothesis import HealthCheck, Phase, given, settings

from fuzzcore import COMMANDS, FOUND_CORPUS, ISSUE_CORPUS, TIMEOUT_S, TIMEOUTS, argv_strategy, classify, describe, run_inprocess

#: examples per sub-command: a valid run of report / validate takes seconds, a refusal milliseconds
EXAMPLES = {"capacity": 60, "check": 50, "dtmc": 30, "fit": 40, "latency": 30, "models": 30, "network": 30, "pars": 25,
            "profiles": 30, "gpus": 20, "disagg": 30, "region": 40, "report": 5, "simulate": 50, "sweep": 40, "validate": 8}

FUZZ = settings(derandomize=True, database=None, deadline=timedelta(seconds=20), print_blob=False,
                phases=[Phase.explicit, Phase.generate],  # no shrinking: a failure's line says it all
                suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                       HealthCheck.data_too_large, HealthCheck.filter_too_much])


#: FLUIDQ_FUZZ_SCALE=10 draws ten times the examples (a longer local run; CI uses 1)
SCALE = max(1, int(os.environ.get("FLUIDQ_FUZZ_SCALE", "1") or 1))
TIMEOUT = TIMEOUTS  # per-call bound, seconds: TIMEOUT_S (20) except report and validate (see fuzzcore.TIMEOUTS)


def check(hostile, argv):
    o = run_inprocess(hostile, argv, timeout=TIMEOUT.get(argv[0], TIMEOUT_S))
    bad = classify(o)
    assert not bad, describe(o, bad)


def test_every_command_is_fuzzed():
    from fluidq.cli import build_parser

    parser = build_parser()
    assert set(parser._subparsers._group_actions[0].choices) == set(COMMANDS) == set(EXAMPLES)


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_cli_answers_or_refuses_in_one_line(command, hostile):
    @settings(FUZZ, max_examples=EXAMPLES[command] * SCALE, deadline=timedelta(seconds=TIMEOUT.get(command, TIMEOUT_S)))
    @given(argv=argv_strategy(command))
    def case(argv):
        check(hostile, argv)

    case()


@pytest.mark.parametrize("argv", [a for a, slow in ISSUE_CORPUS if not slow], ids=lambda a: " ".join(a)[:80])
def test_issue_13_inputs(argv, hostile):
    """The inputs issue 13 names, each one call."""
    check(hostile, argv)


@pytest.mark.parametrize("argv", [a for a, slow in FOUND_CORPUS if not slow], ids=lambda a: " ".join(a)[:80])
def test_inputs_the_fuzzing_found(argv, hostile):
    """Command lines the fuzzing found failing (see the findings of issue 13), each one call."""
    check(hostile, argv)
