"""A ``--trace`` is parsed once per command: the context check and the workload share it (final reading of
2026-12-07: ``check --gpu ... --trace`` parsed it twice, 0.3 of 1.05 s); an edited file is read again."""
import os

import pytest

from fluidq.cli import main
from fluidq.workload import Workload


def _count_parses(monkeypatch):
    calls = []
    real = Workload.from_trace.__func__

    def counting(cls, *a, **k):
        calls.append(a[0] if a else k.get("path_or_name"))
        return real(cls, *a, **k)

    monkeypatch.setattr(Workload, "from_trace", classmethod(counting))
    return calls


def _trace(path, rows):
    path.write_text("arrival_s,prompt_tokens,output_tokens\n" + "".join(f"{t},{p},{o}\n" for t, p, o in rows))
    return path


def test_check_with_a_gpu_parses_the_trace_once(tmp_path, monkeypatch, capsys):
    p = _trace(tmp_path / "t.csv", [(0.1 * i, 200 + i, 50) for i in range(40)])
    calls = _count_parses(monkeypatch)
    assert main(["check", "--gpu", "H100", "--model", "Llama-3.1-8B", "--trace", str(p), "--load", "0.5"]) == 0
    assert len(calls) == 1, calls


def test_an_edited_trace_is_read_again(tmp_path, monkeypatch, capsys):
    p = _trace(tmp_path / "t.csv", [(0.1 * i, 200, 50) for i in range(40)])
    calls = _count_parses(monkeypatch)
    assert main(["capacity", "--gpu", "H100", "--model", "Llama-3.1-8B", "--trace", str(p), "--json"]) == 0
    first = capsys.readouterr().out
    _trace(p, [(0.1 * i, 4000, 50) for i in range(40)])  # same name, other lengths
    st = os.stat(p)
    os.utime(p, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000))  # a later mtime even on a coarse clock
    assert main(["capacity", "--gpu", "H100", "--model", "Llama-3.1-8B", "--trace", str(p), "--json"]) == 0
    assert len(calls) == 2 and capsys.readouterr().out != first


def _count_context_checks(monkeypatch):
    import fluidq.cli.commands._roofline_args as ra

    calls = []
    real = ra._check_trace_context

    def counting(*a, **k):
        calls.append(a[0])
        return real(*a, **k)

    monkeypatch.setattr(ra, "_check_trace_context", counting)
    return calls


GPU = ["--gpu", "H100", "--model", "Llama-3.1-8B"]


@pytest.mark.parametrize("argv", [["capacity", *GPU], ["check", *GPU, "--load", "0.5"],
                                  ["simulate", *GPU, "--horizon", "5"], ["region", *GPU], ["latency", *GPU],
                                  ["capacity", "--profile-dir", "PD"], ["check", "--profile-dir", "PD", "--load", "0.5"]],
                         ids=lambda a: "-".join(a[:2]).strip("-"))
def test_a_trace_s_requests_are_checked_against_the_context_once_per_command(argv, tmp_path, monkeypatch, capsys):
    # the check used to run twice in capacity --gpu (its own and the roofline engine's, kept from repeating its
    # scan by a memo on args): each command now checks once, counted here
    from fluidq.validate import validation_dir

    folder = validation_dir() / "data" / "llmservingsim" / "RTX4090_Llama-3.1-8B"
    if "PD" in argv and not folder.is_dir():
        pytest.skip(f"{folder} is not shipped here")
    argv = [str(folder) if a == "PD" else a for a in argv]
    p = _trace(tmp_path / "t.csv", [(0.1 * i, 200 + i, 50) for i in range(40)])
    calls = _count_context_checks(monkeypatch)
    assert main(argv + ["--trace", str(p)]) == 0
    assert calls == [str(p)], calls
