"""A new user's review (2026-12-06): help that says what the option takes, options that are not refused
with a misleading reason."""
import argparse
import json

import pytest

from fluidq.cli import build_parser
from fluidq.testing.cli import run_cli


def _subparsers():
    p = build_parser()
    sub = next(a for a in p._actions if isinstance(a, argparse._SubParsersAction))
    return sub.choices


@pytest.mark.parametrize("command", ["capacity", "check", "region", "report", "simulate"])
def test_the_model_help_says_each_thing_once(command):
    """``report --help`` said "with --gpu: a model of `fluidq models list`; with --gpu: a model of ..." and
    showed the metavar FORM|NAME although report takes no batch-time form."""
    sp = _subparsers()[command]
    model = next(a for a in sp._actions if a.dest == "model")
    assert model.help.count("with --gpu") == 1, model.help
    assert model.help.count("fluidq models list") == 1, model.help
    if command == "report":
        assert model.metavar == "NAME" and "FORM" not in sp.format_help()
