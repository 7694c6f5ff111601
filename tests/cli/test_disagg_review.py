"""`fluidq disagg` bad input names the flag the user typed, not the library's parameter (review 2026-12-06).

Before: ``--rate nan`` said ``rate_per_s=nan``, ``--gpus 1`` said ``gpus=1``, ``--prefill-engines 0`` said
``n_prefill=0``, ``--link-gbps nan`` said ``bandwidth_gbps=nan``, ``--input-len 1e9`` printed the whole decode
Engine's repr; ``--input-len 2.5`` was silently rounded to 2 tokens; ``--rate 100000`` printed "load 1" for
a load of 0.99998.
"""
import json

import pytest

from fluidq.cli import main

M = ["disagg", "--model", "Llama-3.1-8B", "--gpu", "H100"]


@pytest.mark.parametrize("extra, flag", [
    (["--rate", "nan"], "--rate"),
    (["--rate", "-1"], "--rate"),
    (["--rate", "0"], "--rate"),
    (["--rate", "1e300"], "--rate"),
    (["--gpus", "1"], "--gpus"),
    (["--gpus", "100000000"], "--gpus"),
    (["--prefill-engines", "0", "--decode-engines", "1"], "--prefill-engines"),
    (["--prefill-engines", "1", "--decode-engines", "0"], "--decode-engines"),
    (["--rate", "5", "--link-gbps", "nan"], "--link-gbps"),
    (["--rate", "5", "--link-gbps", "0"], "--link-gbps"),
    (["--rate", "5", "--link-latency-us", "-1"], "--link-latency-us"),
    (["--rate", "5", "--input-len", "0"], "--input-len"),
    (["--rate", "5", "--input-len", "2.5"], "--input-len"),
    (["--rate", "5", "--output-len", "0"], "--output-len"),
    (["--rate", "5", "--output-len", "nan"], "--output-len"),
    (["--rate", "5", "--input-len", "1e9"], "--input-len"),
    (["--rate", "5", "--input-len", "600000"], "--input-len/--output-len"),  # more than the decode KV cache
    (["--prefill-engines", "1", "--decode-engines", "1", "--input-len", "600000"], "--input-len/--output-len"),
    (["--gpus", "4", "--input-len", "600000"], "--input-len/--output-len"),  # was co-located 0.19 req/s vs 0
    (["--rate", "5", "--tensor-parallel-size", "0"], "--tensor-parallel-size"),
    (["--rate", "5", "--tensor-parallel-size", "3"], "--tensor-parallel-size"),
    (["--rate", "5", "--gpu-memory-utilization", "1.5"], "--gpu-memory-utilization"),
    (["--rate", "5", "--max-num-seqs", "0"], "--max-num-seqs"),
    (["--rate", "5", "--gpu-memory-utilization", "0.2"], "--gpu-memory-utilization=0.2"),  # h-user6a: fits from 0.21, so the utilization is named
    (["--rate", "5", "--max-num-batched-tokens", "0"], "--max-num-batched-tokens"),
])
def test_bad_input_names_the_flag(capsys, extra, flag):
    assert main(M + extra) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    err = cap.err
    assert err.count("\n") == 1 and err.startswith(f"fluidq disagg: error: {flag}"), err
    assert len(err) < 600 and "Engine(" not in err, err


def test_a_model_whose_weights_do_not_fit_names_the_gpu(capsys):
    """Llama-3.1-70B's weights on one H100 were refused as ``gpu_memory_gib=79.22``, a parameter disagg has no
    flag for; the GPU and the tensor-parallel size chose that memory."""
    assert main(["disagg", "--model", "Llama-3.1-70B", "--gpu", "H100", "--rate", "3"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fluidq disagg: error: --gpu='H100-SXM5-80GB with --tensor-parallel-size 1': expected a "
                          "deployment that fits"), err
    assert "gpu_memory_gib" not in err and "--tensor-parallel-size" in err, err


def test_an_engine_too_small_for_a_request_is_the_lengths_by_its_parameter_name(capsys, monkeypatch):
    """The capacity's refusal of a pool engine (parameter ``decode`` or ``prefill``) names the lengths whatever
    its wording: the command matched the text "can hold one request" and passed any other wording on as
    ``decode=Engine(...)``."""
    import fluidq.capacity.disaggregated as dis
    from fluidq.errors import ParameterError

    for name in ("decode", "prefill"):
        def refuse(prefill, decode, *a, **k):
            raise ParameterError(name, {"prefill": prefill, "decode": decode}[name], "reworded: no room")

        monkeypatch.setattr(dis, "size_pools", refuse)
        assert main(M + ["--rate", "5"]) == 2
        err = capsys.readouterr().err
        assert err.startswith("fluidq disagg: error: --input-len/--output-len=(1000, 200)"), err
        assert f"fits the {name} engine's KV cache" in err and "Engine(" not in err, err


def test_a_load_just_below_one_is_not_printed_as_1(capsys):
    assert main(M + ["--rate", "100000"]) in (0, None)
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if x.startswith("verdict"))
    assert "(load 1)" not in line, line
    assert main(M + ["--rate", "100000", "--json"]) in (0, None)
    assert json.loads(capsys.readouterr().out)["load"] < 1


@pytest.mark.parametrize("question", [["--rate", "5"], ["--gpus", "4"], ["--prefill-engines", "1", "--decode-engines", "2"]])
def test_json_carries_the_deployment_and_the_estimate_note_the_text_shows(capsys, question):
    assert main(M + question) in (0, None)
    text = capsys.readouterr().out
    assert main(M + question + ["--json"]) in (0, None)
    d = json.loads(capsys.readouterr().out)["deployment"]
    assert d["batch_time"]["kind"] == "roofline" and d["batch_time"]["model"] == "Llama-3.1-8B"
    assert d["batch_time"]["gpu"] == "H100-SXM5-80GB" and d["b_max"] == 2048 and d["k_max"] == 256
    assert f"{d['decode_kv_cache_tokens']:,} tokens per engine" in text
    assert d["estimate"] in text
