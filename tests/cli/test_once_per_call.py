"""Work the command line did twice per call, now once (issue 15 tidy): ``fluidq check --load`` checked the KV cache
against the requests before and after scaling the rate (the lengths are the same), and ``main`` listed the
commands' modules once itself and once more in ``build_parser``."""
import fluidq.cli as cli
import fluidq.cli.common as common
from fluidq.testing.cli import assert_one_line, run_cli

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


def test_check_load_checks_the_kv_cache_once(monkeypatch, capsys):
    calls = _counting(monkeypatch, common, "check_kv_fits")
    for flags in (["--load", "0.8"], ["--rate", "1"]):
        calls.clear()
        rc, out, err = run_cli([*CHECK, "--kv-capacity", "100000", *flags], capsys)
        assert rc == 0, err
        assert len(calls) == 1, flags
    # still refused, under --load too: a cache no request fits (300 + 100 tokens each)
    assert_one_line([*CHECK, "--kv-capacity", "399", "--load", "0.8"], capsys, "--kv-capacity=399", "no request fits")


def test_main_lists_the_commands_once(monkeypatch, capsys):
    calls = _counting(monkeypatch, cli, "command_names")
    for argv in ([*CHECK, "--rate", "1"], ["--help"], ["nosuchcommand"]):
        calls.clear()
        run_cli(argv, capsys)
        assert len(calls) == 1, argv
