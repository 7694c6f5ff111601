"""Work the command line did twice per call, now once (issue 15 tidy): ``main`` listed the commands' modules once
itself and once more in ``build_parser``."""
import fluidq.cli as cli
from fluidq.testing.cli import run_cli

CHECK = ["check", "--profile", "vidur-llama2-7b-a100", "--prompt", "300", "--output", "100", "--policy", "sarathi",
         "--method", "analytic"]


def _counting(monkeypatch, module, name):
    calls = []
    real = getattr(module, name)

    def counted(*a, **kw):
        calls.append(a)
        return real(*a, **kw)

    monkeypatch.setattr(module, name, counted)
    return calls


def test_main_lists_the_commands_once(monkeypatch, capsys):
    calls = _counting(monkeypatch, cli, "command_names")
    for argv in ([*CHECK, "--rate", "1"], ["--help"], ["nosuchcommand"]):
        calls.clear()
        run_cli(argv, capsys)
        assert len(calls) == 1, argv
