"""`fluidq disagg --rate` follows `fluidq check`'s rule (review 2026-12-06): it said stable at load 0.9992 and
unstable at 1.001 of a roofline estimate, with no critical band and no estimate caveat.  Now: critical within
2 % of the capacity, and where the decode pool binds through its KV cache (a capacity from mean footprints)
unknown between 0.8 and 1.25 of it, as check withholds a verdict there."""
import json

import pytest

from fluidq.cli import main

TP4 = ["disagg", "--gpu", "H100", "--model", "Llama-3.1-70B", "--tensor-parallel-size", "4"]


def _run(capsys, *argv):
    assert main([*TP4, *argv, "--json"]) in (0, None)
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize(("rate", "want"), [("13.44", "critical"), ("13.46", "critical"), ("12", "stable"),
                                            ("14", "unstable")])
def test_the_prefill_bound_tandem_has_a_critical_band(capsys, rate, want):
    d = _run(capsys, "--prompt", "2048", "--output", "256", "--prefill-engines", "2", "--decode-engines", "3",
             "--rate", rate)
    assert d["bottleneck"] == "prefill" and d["verdict"] == want, (d["load"], d["inputs"]["verdict_reason"])


@pytest.mark.parametrize(("rate", "want"), [("0.9", "stable"), ("1.1", "unknown"), ("1.27", "critical"),
                                            ("1.5", "unknown"), ("1.7", "unstable")])
def test_a_kv_bound_decode_pool_is_an_estimate_with_check_s_band(capsys, rate, want):
    d = _run(capsys, "--prompt", "8192", "--output", "1024", "--prefill-engines", "8", "--decode-engines", "1",
             "--rate", rate)
    assert d["bottleneck"] == "decode" and d["decode_limit"] == "kv_cache"
    assert d["verdict"] == want, (d["load"], d["inputs"]["verdict_reason"])
    if want == "unknown":
        assert "0.8 and 1.25" in d["inputs"]["verdict_reason"]


def test_the_text_gives_the_reason(capsys):
    # at 0.9992 of the tandem's capacity (read from the JSON, so that a recalibrated roofline moves both)
    args = ["--prompt", "2048", "--output", "256", "--prefill-engines", "2", "--decode-engines", "3"]
    cap = _run(capsys, *args, "--rate", "1")["requests_per_s"]
    rate = f"{0.9992 * cap:.6g}"
    assert main([*TP4, *args, "--rate", rate]) in (0, None)
    out = capsys.readouterr().out
    assert "verdict         critical at " in out
    assert " req/s (load 0.9992): load 0.9992 is within 2% of the capacity" in out, out


def test_the_band_is_check_s():
    from fluidq.capacity import disaggregated
    from fluidq.stability import KV_ESTIMATE_BAND

    assert disaggregated.KV_ESTIMATE_BAND == KV_ESTIMATE_BAND
