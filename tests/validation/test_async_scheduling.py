"""vLLM's async scheduling (``--async-scheduling``, on by default since vLLM 0.14) in ``fluidq.simulate``
and in the replay of measured runs (issue 16).

vLLM's engine core schedules batch k + 1 while batch k runs and reads batch k's outputs after that
(``EngineCore.step_with_batch_queue``, a queue of two batches): a request queued during batch k runs in
batch k + 2, and a request finishing in batch k holds its ``max_num_seqs`` slot and its KV blocks through
batch k + 1.  The RTX 4090 run records ``scheduler_config.async_scheduling = true`` (vLLM 0.19.0).
"""
import dataclasses
import json

import numpy as np
import pytest

import fluidq
from fluidq import Engine, simulate
from fluidq.engine import VLLM
from fluidq.errors import ParameterError, ParameterTypeError
from fluidq.validate.runs import read_run

BT = fluidq.Affine(c=0.01, a=0.0)  # every batch 10 ms: the batch boundaries are 0, 0.01, 0.02, ...


def _sim(engine, arrivals, prompts, outputs):
    reqs = {"arrival_s": np.array(arrivals, dtype=float), "prompt_tokens": np.array(prompts),
            "output_tokens": np.array(outputs)}
    return simulate(engine, reqs, "vllm-chunked", n_requests=len(arrivals)).requests


@pytest.mark.parametrize("asy, first", [(False, 0.03), (True, 0.04)])
def test_a_request_queued_during_a_batch_runs_in_the_batch_after_next(asy, first):
    # B arrives at 15 ms, during the batch [10, 20] ms; synchronously it runs in [20, 30] ms, with async
    # scheduling the batch [20, 30] was scheduled at 10 ms, so B runs in [30, 40] ms
    e = Engine(batch_time=BT, b_max=100, prefill_emits_token=True, async_scheduling=asy)
    r = _sim(e, [0.0, 0.015], [10, 10], [5, 2])
    assert r["prefill_done_s"][0] == pytest.approx(0.01)  # an idle engine schedules at once
    assert r["prefill_done_s"][1] == pytest.approx(first)
    assert r["finish_s"][0] == pytest.approx(0.05)  # decodes continue without a gap


@pytest.mark.parametrize("asy, first", [(False, 0.03), (True, 0.04)])
def test_a_finished_request_holds_its_slot_through_one_more_batch(asy, first):
    # k_max = 2: A (2 tokens) and C (10 tokens) run, B waits; A finishes in the batch [10, 20] ms.
    # Synchronously B takes A's slot in [20, 30] ms; with async scheduling that batch was scheduled while A
    # still held the slot, so B runs in [30, 40] ms
    e = Engine(batch_time=BT, b_max=100, k_max=2, prefill_emits_token=True, async_scheduling=asy)
    r = _sim(e, [0.0, 0.0, 0.001], [10, 10, 10], [2, 10, 2])
    assert r["finish_s"][0] == pytest.approx(0.02)
    assert r["prefill_done_s"][2] == pytest.approx(first)
    assert r["finish_s"][1] == pytest.approx(0.10)


@pytest.mark.parametrize("asy, first", [(False, 0.03), (True, 0.04)])
def test_a_finished_request_holds_its_kv_blocks_through_one_more_batch(asy, first):
    # two 16-token blocks: A and C hold one each, B (one block, whole-prompt reservation) waits for A's
    e = Engine(batch_time=BT, b_max=100, kv_capacity_tokens=32, memory=VLLM, prefill_emits_token=True,
               async_scheduling=asy)
    r = _sim(e, [0.0, 0.0, 0.001], [10, 10, 10], [2, 4, 2])
    assert r["finish_s"][0] == pytest.approx(0.02)
    assert r["prefill_done_s"][2] == pytest.approx(first)


def test_all_slots_held_by_finished_requests_are_read_at_once():
    # nothing can be scheduled while A's outputs are unread: vLLM blocks on A's batch, frees A and
    # schedules B at once (no empty batch is charged)
    e = Engine(batch_time=BT, b_max=100, k_max=1, prefill_emits_token=True, async_scheduling=True)
    r = _sim(e, [0.0, 0.001], [10, 10], [2, 2])
    assert r["finish_s"][0] == pytest.approx(0.02)
    assert r["prefill_done_s"][1] == pytest.approx(0.03)


def test_async_off_is_the_synchronous_engine_and_every_request_is_served():
    rng = np.random.default_rng(7)
    a = np.sort(rng.uniform(0, 1.0, 60))
    p, o = rng.integers(5, 200, 60), rng.integers(1, 40, 60)
    base = Engine(batch_time=fluidq.Affine(c=0.005, a=2e-5), b_max=256, k_max=8, kv_capacity_tokens=2048,
                  memory=VLLM, prefill_emits_token=True)
    r0 = simulate(base, {"arrival_s": a, "prompt_tokens": p, "output_tokens": o}, "vllm-chunked", n_requests=60)
    r1 = simulate(base.with_(async_scheduling=True), {"arrival_s": a, "prompt_tokens": p, "output_tokens": o},
                  "vllm-chunked", n_requests=60)
    assert np.all(np.isfinite(r1.requests["finish_s"])) and np.all(np.isfinite(r0.requests["finish_s"]))
    # the lag delays admissions: on average the TTFT grows
    t0 = r0.requests["prefill_done_s"] - a
    t1 = r1.requests["prefill_done_s"] - a
    assert t1.mean() > t0.mean()
    # with a KV cache the compiled kernel runs async scheduling (issue 15), as the generic path does
    assert r1.method == "fast"
    g = simulate(base.with_(async_scheduling=True), {"arrival_s": a, "prompt_tokens": p, "output_tokens": o},
                 "vllm-chunked", n_requests=60, method="generic")
    for k in ("prefill_done_s", "finish_s"):
        np.testing.assert_array_equal(r1.requests[k], g.requests[k])


def test_engine_field_is_checked_and_kept_in_its_dict():
    e = Engine(batch_time=BT, b_max=64, async_scheduling=True)
    assert e.to_dict()["async_scheduling"] is True
    assert Engine.from_dict(e.to_dict()) == e
    assert "async_scheduling" not in e.with_(async_scheduling=False).to_dict()  # old dicts unchanged
    with pytest.raises(ParameterTypeError, match="async_scheduling"):
        Engine(batch_time=BT, b_max=64, async_scheduling=1)


def test_a_network_refuses_an_async_engine():
    from fluidq.network import Hop, Network, RequestClass, Station

    e = Engine(batch_time=BT, b_max=64, async_scheduling=True)
    net = Network(stations=[Station(name="E", engine=e)],
                  classes=[RequestClass(name="A", rate_per_s=5.0, route=[Hop(engine="E", prompt_tokens=10,
                                                                                 output_tokens=5)])])
    with pytest.raises(ParameterError, match="async_scheduling"):
        fluidq.simulate_network(net, horizon_s=1.0, rng=1)


def test_a_run_says_whether_it_scheduled_asynchronously(data_dir):
    run = read_run(data_dir / "llmservingsim" / "RTX4090_Llama-3.1-8B")
    assert run.meta["resolved_config"]["scheduler_config"]["async_scheduling"] is True
    assert run.async_scheduling is True
    # a run that does not record it: vLLM's default for its version (on since 0.14, not with PP)
    pro = read_run(data_dir / "llmservingsim" / "RTXPRO6000_Llama-3.1-8B")
    assert "resolved_config" not in pro.meta and pro.meta["vllm_version"] == "0.19.0" and pro.async_scheduling

    def with_meta(**changes):
        return dataclasses.replace(pro, meta=json.loads(json.dumps({**pro.meta, **changes})))

    assert not with_meta(vllm_version="0.13.2").async_scheduling
    assert not with_meta(engine_kwargs={**pro.engine_kwargs, "pipeline_parallel_size": 2}).async_scheduling
    assert not with_meta(engine_kwargs={**pro.engine_kwargs, "async_scheduling": False}).async_scheduling
    assert not with_meta(resolved_config={"scheduler_config": {"async_scheduling": False}}).async_scheduling


def test_the_replay_reads_a_request_at_the_end_of_the_batch_running_at_its_arrival():
    from fluidq.validate.replay import read_s

    e = Engine(batch_time=BT, b_max=100, prefill_emits_token=True, async_scheduling=True)
    reqs = {"arrival_s": np.array([0.0, 0.015, 0.2]), "prompt_tokens": np.array([10, 10, 10]),
            "output_tokens": np.array([5, 2, 1])}
    sim = simulate(e, reqs, "vllm-chunked", n_requests=3, record_iterations=True)
    # A at an idle engine: read at once; B during the batch [10, 20] ms: read at its end; C after the
    # engine went idle: read at once
    np.testing.assert_allclose(read_s(sim), [0.0, 0.02, 0.2])
    # from the read, B waits one batch and runs in the next: vLLM's queued_ts -> first token with async
    assert sim.requests["prefill_done_s"][1] - read_s(sim)[1] == pytest.approx(0.02)
    with pytest.raises(ParameterError, match="record_iterations"):
        read_s(simulate(e, reqs, "vllm-chunked", n_requests=3))


def test_a_run_gives_the_clients_send_times_on_the_engine_clock(data_dir, tmp_path):
    import shutil

    src = data_dir / "llmservingsim" / "RTXPRO6000_Llama-3.1-8B"
    run = read_run(src)
    gap = run.arrival_s - run.sent_s  # the engine reads a request only between its iterations
    assert np.all(gap >= -1e-9)  # (the smallest gap is 0 by construction: sent_s is shifted by it)
    assert 0.0 < gap.mean() < 0.05  # under one iteration (~25-40 ms here) on average
    # read between iterations, requests sent during one iteration are read together: the engine's stamps
    # bunch up where the client's do not (57 neighbours within 1 ms against 4 here); stamps that were the
    # send times shifted (what sent_s would be if it were arrival_s moved by a constant) would bunch alike
    close = int(np.sum(np.diff(np.sort(run.arrival_s)) < 1e-3))
    sent_close = int(np.sum(np.diff(np.sort(run.sent_s)) < 1e-3))
    assert close >= 5 * max(sent_close, 1)
    assert np.all(np.diff(run.sent_s[run.client_order]) >= 0)  # the client sent them in its list's order
    # a run without the client's stamps has none (the replay then sends the requests at queued_ts)
    dst = tmp_path / "run"
    shutil.copytree(src, dst)
    lines = [json.loads(x) for x in (dst / "vllm_requests.jsonl").read_text().splitlines() if x.strip()]
    for r in lines:
        r.pop("arrival_time")
    (dst / "vllm_requests.jsonl").write_text("\n".join(json.dumps(r) for r in lines) + "\n")
    assert read_run(dst).sent_s is None
