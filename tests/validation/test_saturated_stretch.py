"""A run that never held a saturated stretch has no capacity to score (review indep2 #2).

``capacity_regimes`` took every tick with ``waiting > 0`` as saturated: a run under its capacity has Poisson bursts
that leave scattered ticks with a queue, and their mean throughput (the offered load) was reported as the
engine's capacity -- 272 % off the prediction on a reviewer's 20 req/s run, scored MISS, and its binding limit
MISS.  A tick now counts as saturated only inside a stretch of ticks with a queue that lasts >= 3 s with the
engine at ``max_num_seqs`` / a full cache in half of them, or >= 10 s whatever it shows
(:func:`fluidq.validate.runs.saturated_ticks`).  Checked on seeded runs of fluidq's own vLLM engine model below
its capacity (never saturated) and above it (saturated, at the limit that binds).
"""
import numpy as np
import pytest

import synth_run as sr
from fluidq.models import load_model
from fluidq.validate.predict import _ticks
from fluidq.validate.runs import capacity_regimes, saturated_ticks

# the reviewer's run (20 req/s, 1,500 requests, max_num_seqs 64): where its ticks had a queue, running <= 17
PATTERN = "....WW...........W...............W................W.....W..W.W..W...W.....W...."


def _series(pattern, running_q=17, running_idle=10):
    w = np.array([c == "W" for c in pattern], dtype=float)
    n = w.size
    return {"t": np.arange(1.0, n + 1), "prompt_throughput": np.where(w > 0, 9000.0, 6000.0),
            "gen_throughput": np.full(n, 2500.0), "running": np.where(w > 0, running_q, running_idle).astype(float),
            "waiting": w * 3, "kv_cache_pct": np.full(n, 5.0)}


def test_scattered_queue_ticks_are_not_a_saturated_run():
    reg = capacity_regimes(_series(PATTERN), max_num_seqs=64)
    assert np.isnan(reg["steady"]["tokens_per_s"])
    assert reg["binding"].startswith("none") and "never saturated" in reg["steady"]["note"]
    assert "11 tick(s) with requests waiting" in reg["steady"]["note"]


def test_a_stretch_counts_when_a_limit_holds_or_when_it_lasts():
    w = np.array([0] * 3 + [1] * 4 + [0] * 3 + [1] * 12 + [0] * 2)
    lim = np.zeros(w.size, dtype=bool)
    assert saturated_ticks(w, lim).tolist() == [False] * 10 + [True] * 12 + [False] * 2  # 4 s without a limit: no
    lim[3:6] = True
    assert saturated_ticks(w, lim)[3:7].all()  # 4 s at max_num_seqs: yes
    assert not saturated_ticks(w, lim, tick_s=0.5)[3:7].any()  # 2 s at a 0.5 s tick: too short
    assert saturated_ticks(w, lim, tick_s=2.0)[10:22].all()  # 24 s at a 2 s tick: yes
    assert not saturated_ticks(w, lim, unseen_limit_s=13)[10:22].any()  # 12 s without a limit, 13 s asked: no


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    folder = sr.profile_folder(tmp_path_factory.mktemp("prof"))
    return sr.iteration_model(folder, load_model("Llama-3.1-8B"), 1)


def _regimes(model, rate, seed, n=1500, k=64, b=2048, blocks=20000):
    a, p, o = sr.workload(n, rate, seed)
    rr = sr.engine_run(model, a, p, o, max_num_seqs=k, b_max=b, kv_blocks=blocks)
    ts = _ticks(rr.sim, blocks * sr.BLOCK_SIZE)
    return ts, capacity_regimes(ts, max_num_seqs=k)


@pytest.mark.parametrize("rate", [10.0, 12.0, 14.0])
def test_an_engine_below_its_capacity_never_saturates(model, rate):
    # this engine serves about 10,800 tokens/s (19-20 req/s of these lengths) at max_num_seqs 64; at 10-14 req/s
    # its queue comes and goes (2-6 s stretches, running <= 50), every seed
    for seed in (1, 2, 3, 4):
        ts, reg = _regimes(model, rate, seed)
        assert (ts["waiting"] > 0).any()  # there were ticks with a queue: the old rule read a "capacity" here
        assert np.isnan(reg["steady"]["tokens_per_s"]) and "never saturated" in reg["binding"], (seed, reg["binding"])


def test_an_overloaded_engine_saturates_at_its_limit(model):
    for seed in (1, 2):
        _, reg = _regimes(model, 25.0, seed)
        assert reg["binding"] == "k_max" and reg["steady"]["ticks"] > 50
        assert 10_000 < reg["steady"]["tokens_per_s"] < 11_500
