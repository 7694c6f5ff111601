"""A progress line still being redrawn is ended before the stop or error message (rev-bad U3: the last line
read "sarathi  97.6%  4,406,554 arrivalsfluidq simulate: interrupted")."""
from __future__ import annotations

import fluidq.cli.commands.simulate as simulate_cmd
from fluidq.cli import main
from fluidq.cli.progress import draw
from fluidq.errors import ParameterError


def test_interrupted_on_its_own_line(monkeypatch, capsys):
    def run(args):
        draw("sarathi               97.6%  4,406,554 arrivals")
        raise KeyboardInterrupt
    monkeypatch.setattr(simulate_cmd, "run", run)
    assert main(["simulate"]) == 130
    err = capsys.readouterr().err
    assert "arrivals\nfluidq simulate: interrupted" in err


def test_error_on_its_own_line(monkeypatch, capsys):
    def run(args):
        draw("sarathi               50.0%  12 arrivals")
        raise ParameterError("x", 1, "2")
    monkeypatch.setattr(simulate_cmd, "run", run)
    assert main(["simulate"]) == 2
    assert "arrivals\nfluidq simulate: error" in capsys.readouterr().err


def test_no_blank_line_without_a_progress_line(monkeypatch, capsys):
    def run(args):
        raise KeyboardInterrupt
    monkeypatch.setattr(simulate_cmd, "run", run)
    assert main(["simulate"]) == 130
    assert capsys.readouterr().err == "fluidq simulate: interrupted\n"
