"""Readers of the measured vLLM runs: definitions reproduce the peer's own measured column."""
import json

import numpy as np
import pytest

from fluidq.errors import DataError
from fluidq.validate.runs import (latency_metrics, queue_growth, read_peer_summary, read_run,
                                  saturated_throughput)

RUNS = ["RTX4090_Llama-3.1-8B", "RTXPRO6000_Llama-3.1-8B", "RTXPRO6000_Qwen3-30B-A3B-Instruct-2507"]


@pytest.mark.parametrize("name", RUNS)
def test_latency_definitions_match_the_peer_summary(data_dir, name):
    # the peer's "vLLM" column was computed by another team from the same requests: our TTFT /
    # TPOT / latency definitions must reproduce it
    d = data_dir / "llmservingsim" / name
    run = read_run(d)
    ours = latency_metrics(run.ttft_s, run.latency_s, run.tpot_s)
    peer = read_peer_summary(d / "peer_sim_vs_vllm_summary.txt")
    assert len(peer) == 15
    for k, (vllm_ms, _, _) in peer.items():
        assert ours[k] == pytest.approx(vllm_ms, rel=2e-3, abs=0.2), k


def test_saturated_throughput_reads_the_documented_capacities(data_dir):
    # shared/data/README: RTX 4090 ~2.6k tokens/s with <= 49 running; RTX PRO 6000 ~7.8k with 128
    a = saturated_throughput(read_run(data_dir / "llmservingsim" / RUNS[0]))
    b = saturated_throughput(read_run(data_dir / "llmservingsim" / RUNS[1]))
    assert a["tokens_per_s"] == pytest.approx(2600, rel=0.03) and a["running_max"] == 49
    assert b["tokens_per_s"] == pytest.approx(7800, rel=0.03) and b["running_max"] == 128
    for s in (a, b):
        lo, hi = s["tokens_per_s_ci"]
        assert lo < s["tokens_per_s"] < hi


def test_queue_grows_in_every_overloaded_run(data_dir):
    for name in RUNS[:2]:
        run = read_run(data_dir / "llmservingsim" / name)
        q = queue_growth(run)
        assert q["waiting_per_s"] > 1.0
        # the backlog grows slower than the offered load (the engine serves some of it)
        assert 0 < q["backlog_tokens_per_s"] < q["offered_tokens_per_s"]
        assert run.offered_rate_per_s == pytest.approx(10.27, rel=0.01)


def test_bad_run_folders_raise_data_errors(tmp_path):
    with pytest.raises(DataError, match="not a run folder"):
        read_run(tmp_path / "nope")
    (tmp_path / "vllm_requests.jsonl").write_text('{"input_toks": 3}\n')
    (tmp_path / "vllm_timeseries.csv").write_text("t,prompt_throughput,gen_throughput,running,waiting\n1,0,0,0,0\n")
    (tmp_path / "vllm_meta.json").write_text(json.dumps({}))
    with pytest.raises(DataError, match="missing"):
        read_run(tmp_path)
    (tmp_path / "vllm_requests.jsonl").write_text("not json\n")
    with pytest.raises(DataError, match="line 1: not valid JSON"):
        read_run(tmp_path)


def test_never_saturated_run_reports_nan(tmp_path):
    rows = [{"input_toks": 4, "output_toks": 2, "queued_ts": t, "first_token_ts": t + 0.1, "last_token_ts": t + 0.2}
            for t in (0.0, 1.0, 2.0)]
    (tmp_path / "vllm_requests.jsonl").write_text("\n".join(json.dumps(r) for r in rows))
    (tmp_path / "vllm_timeseries.csv").write_text(
        "t,prompt_throughput,gen_throughput,running,waiting\n1,4,2,1,0\n2,4,2,1,0\n3,4,2,1,0\n")
    (tmp_path / "vllm_meta.json").write_text("{}")
    s = saturated_throughput(read_run(tmp_path))
    assert np.isnan(s["tokens_per_s"]) and "never saturated" in s["note"]
