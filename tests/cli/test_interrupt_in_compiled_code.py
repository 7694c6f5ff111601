"""Ctrl-C inside a compiled kernel can surface as "SystemError: ... returned a result with an exception set",
chained from the KeyboardInterrupt (rev-bad U1). The command line says "interrupted" (exit 130), not
"internal error"; a serial sweep stops as interrupted instead of blaming a point."""
from __future__ import annotations

import pytest

import fluidq.cli.commands.capacity as capacity_cmd
from fluidq.cli import main
from fluidq.sweep import sweep


def _chained():
    try:
        raise KeyboardInterrupt
    except KeyboardInterrupt:
        raise SystemError("CPUDispatcher(<function step>) returned a result with an exception set")


def test_cli_reports_interrupted(monkeypatch, capsys):
    monkeypatch.setattr(capacity_cmd, "run", lambda args: _chained())
    assert main(["capacity"]) == 130
    err = capsys.readouterr().err
    assert "interrupted" in err and "internal error" not in err


def test_plain_system_error_is_still_a_bug(monkeypatch, capsys):
    def boom(args):
        raise SystemError("something else")
    monkeypatch.setattr(capacity_cmd, "run", boom)
    assert main(["capacity"]) == 1
    assert "internal error" in capsys.readouterr().err


def _point(point, rng=None):
    if point["load"] > 0.5:
        _chained()
    return {"x": point["load"]}


def test_serial_sweep_stops_as_interrupted():
    with pytest.raises(KeyboardInterrupt):
        sweep(_point, {"load": [0.1, 0.9]}, executor="serial", progress=False)
