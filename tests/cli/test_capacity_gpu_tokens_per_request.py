"""``capacity --gpu``: the capacity line and the region line count a request's tokens differently, and each says
how (user6a, finding 5).

The capacity line (vLLM's flow balance, ``predict_roofline_deployment``) counts the ``m_p + m_d`` tokens a request
holds; the region line (``fluidq.max_throughput`` on the roofline engine, whose prefill emits the first token)
the batch work ``m_p + m_d - 1``.  Before, both printed ``tokens/s, req/s`` side by side (Llama-3.1-8B on an H100
at 100 + 100: 34,208 tokens/s 171.0 req/s against 34,362 tokens/s 172.7 req/s) with nothing saying why the ratio
differs.
"""
import json

import pytest

from fluidq.cli import main

ARGV = ["capacity", "--gpu", "H100", "--model", "Llama-3.1-8B", "--prompt", "100", "--output", "100"]


def _run(argv, capsys):
    rc = main(argv)
    out, err = capsys.readouterr()
    assert rc in (0, None), err
    return out


def test_each_line_says_its_count(capsys):
    out = _run(ARGV, capsys)
    cap = next(ln for ln in out.splitlines() if ln.startswith("capacity "))
    reg = next(ln for ln in out.splitlines() if ln.startswith("region "))
    assert cap.endswith("(m_p + m_d = 200 tokens a request)"), cap
    assert "(m_p + m_d - 1 = 199 tokens a request: the iteration that ends a prefill emits the first output " \
           "token)" in reg, reg


def test_json_carries_both_counts(capsys):
    d = json.loads(_run(ARGV + ["--json"], capsys))
    assert d["tokens_per_request"] == pytest.approx(d["tokens_per_s"] / d["requests_per_s"], rel=1e-12)
    assert d["tokens_per_request"] == pytest.approx(200, rel=1e-12)
    r = d["stability_region"]
    assert r["tokens_per_request"] == pytest.approx(199, rel=1e-12)
    assert r["tokens_per_request"] == pytest.approx(r["tokens_per_s"] / r["requests_per_s"], rel=1e-12)
