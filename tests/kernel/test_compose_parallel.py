"""The compiled evaluation of the operator-profile iteration model covers the parallel terms (issues 15 and 16):
tensor-parallel all-reduces (``comm_us``), MoE experts (``moe_us`` on ``n_moe_layers``, with expert parallelism's
all-to-alls), pipeline stages (``send_us``, the period ``pp x`` the slowest stage) and data-parallel MoE ranks in
lockstep (:class:`fluidq.validate.deployment.LockstepRanks`: each prefill chunk on the least loaded rank, the
slowest rank's time).  These terms depend on the batch's tokens alone, and ``IterationModel.kernel_table``
tabulates them for every batch size up to the engine's budget with the model's own callables, so
:func:`fluidq.kernel.compose.batch_s` / :func:`~fluidq.kernel.compose.chunks_s` give the seconds of
``IterationModel.time`` / ``LockstepRanks.time`` exactly (``==``) on thousands of random batches of the Vidur
Llama-2-70B TP2 model, the shipped Qwen3-30B-A3B MoE profile (one GPU; DP2 + EP2) and the Llama-3.1-8B profile
cut into 2 and 3 pipeline stages.  The KV kernel then runs engines with these batch times and gives exactly the
generic loop's runs; uncompiled (``NUMBA_DISABLE_JIT=1``, a child process) it gives the same arrays.
"""
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__)
DATA = HERE.resolve().parents[2] / "validation" / "data"
B = 2048  # the token budget the random batches stay within


def _models():
    from fluidq.batchtime.comm import Link
    from fluidq.batchtime.operators import lss_iteration_model, vidur_iteration_model
    from fluidq.models import load_model

    qwen = DATA / "llmservingsim" / "RTXPRO6000_Qwen3-30B-A3B-Instruct-2507"
    llama = DATA / "llmservingsim" / "RTX4090_Llama-3.1-8B"
    v70 = DATA / "vidur" / "a100" / "meta-llama" / "Llama-2-70b-hf"
    facts = load_model("Qwen/Qwen3-30B-A3B-Instruct-2507")
    link = Link.from_peer_sim_config(qwen / "peer_sim_config.json")
    return {
        "vidur-70b-tp2": vidur_iteration_model(
            v70 / "mlp.csv.gz", DATA / "vidur" / "legacy_e2d00e9_a100" / "attention.csv.gz", n_layers=80, tp=2,
            all_reduce_csv=DATA / "vidur" / "a100" / "network" / "all_reduce_pairwise_nvlink.csv.gz",
            collective_launch_us=20.0, decode_batching_overhead=0.1),
        "qwen3-moe": lss_iteration_model(qwen, n_layers=48, facts=facts, overhead_us=5.0),
        "qwen3-dp2-ep2": lss_iteration_model(qwen, n_layers=48, facts=facts, comm=link, data_parallel_size=2,
                                             expert_parallel_size=2),
        "llama-pp2": lss_iteration_model(llama, n_layers=32, comm=link, hidden_size=4096, pipeline_parallel_size=2),
        "llama-pp3": lss_iteration_model(llama, n_layers=32, comm=link, hidden_size=4096, pipeline_parallel_size=3,
                                         overhead_us=7.5),
    }


def _compositions(seed, budget, n=3000):
    """Random batches within ``budget`` tokens: 0-3 prefill chunks with prior context, 0-299 decoders."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        nd = int(rng.integers(0, 300)) if rng.random() < 0.8 else 0
        nc = int(rng.integers(0, 4)) if nd else int(rng.integers(1, 4))
        scale = int(rng.choice([16, 300, 1500]))
        chunks, left = [], budget - nd
        for _ in range(nc):
            c = int(rng.integers(1, min(scale, left) + 1))
            left -= c
            # equal chunks now and then (the lockstep ranks' order of equal (tokens, KV) pairs)
            chunks.append((c, int(rng.integers(0, 3 * scale))) if not chunks or rng.random() < 0.7 else chunks[-1])
            if left < 1:
                break
        if sum(c for c, _ in chunks) + nd > budget:
            chunks = chunks[:1]
        out.append((chunks, [int(v) for v in rng.integers(0, 4 * scale, nd)]))
    return out


def _batch_values(ct, comps):
    from fluidq.kernel.compose import batch_s

    vals = []
    for chunks, ctxs in comps:
        work = 0.0
        for c, k in chunks:
            work += c * (k + c / 2.0)
        vals.append(batch_s(ct, sum(c for c, _ in chunks), work, len(chunks), len(ctxs), sum(ctxs)))
    return np.array(vals)


def _chunk_values(ct, comps):
    from fluidq.kernel.compose import chunks_s

    vals = []
    for chunks, ctxs in comps:
        bpm = np.array([c for c, _ in chunks] + [0], dtype=np.int64)  # (a zero chunk is skipped, as in the kernel)
        kv = np.array([k for _, k in chunks] + [7], dtype=np.int64)
        bpr = np.arange(bpm.size, dtype=np.int64)[::-1].copy()
        vals.append(chunks_s(ct, bpm[bpr], bpr, kv, bpm.size, len(ctxs), sum(ctxs)))
    return np.array(vals)


def _lockstep(model, dp):
    from fluidq.validate.deployment import LockstepRanks

    return LockstepRanks(model, dp)


def _arrays():
    models = _models()
    out = {name: _batch_values(m.kernel_table(max_batch_tokens=B), _compositions(i, B))
           for i, (name, m) in enumerate(models.items())}
    for dp in (2, 4):
        ls = _lockstep(models["qwen3-dp2-ep2"], dp)
        out[f"lockstep{dp}"] = _chunk_values(ls.kernel_table(max_batch_tokens=dp * B), _compositions(10 + dp, dp * B))
    return out


@pytest.fixture(scope="module")
def models():
    if not (DATA / "llmservingsim").is_dir():
        pytest.skip("validation/data is not present (not a source checkout)")
    return _models()


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # (Vidur beyond its token axis: inf - inf in numpy too)
def test_compiled_evaluation_equals_the_python_model_with_parallel_terms(models):
    for i, (name, m) in enumerate(models.items()):
        assert m.kernel_table() is None, name  # (the per-batch-size terms need the batches' bound)
        ct = m.kernel_table(max_batch_tokens=B)
        comps = _compositions(i, B)
        py = np.array([m.time(ch, dc) for ch, dc in comps])
        np.testing.assert_array_equal(_batch_values(ct, comps), py, err_msg=name)
        assert np.isfinite(py).mean() > 0.5 and np.all(py[np.isfinite(py)] > 0), name
        # chunks_s of one engine is batch_s of the chunks' aggregates
        np.testing.assert_array_equal(_chunk_values(ct, comps[:500]), py[:500], err_msg=name)
        if m.pipeline_stages == 1:  # the parallel term is in it: the time differs from the tables without it
            plain = _batch_values(m._table, comps[:200])
            fin = np.isfinite(py[:200])
            assert np.all(plain[fin] < py[:200][fin]), name


def test_lockstep_ranks_equal_the_python_model(models):
    for dp in (2, 4):
        ls = _lockstep(models["qwen3-dp2-ep2"], dp)
        comps = _compositions(10 + dp, dp * B)
        py = np.array([ls.time(ch, dc) for ch, dc in comps])
        np.testing.assert_array_equal(_chunk_values(ls.kernel_table(max_batch_tokens=dp * B), comps), py)
        assert np.all(np.isfinite(py)) and np.all(py > 0)
        # batches where the ranks' split matters: several chunks, a rank slower than the average one
        assert sum(len(ch) >= 2 for ch, _ in comps) > 500
    assert _lockstep(models["qwen3-dp2-ep2"], 3).kernel_table(max_batch_tokens=B) is None  # (not a power of 2)
    assert _lockstep(models["qwen3-dp2-ep2"], 2).kernel_table() is None


def test_per_batch_size_tables_are_the_scalar_calls(models):
    """The vectorised forms (``per_b``) give exactly the values of one scalar call per batch size, as ``time``
    evaluates them (numpy's SIMD power differs from the C library's in the last bit: the MoE form does not use
    it); a communication model fluidq does not know is tabulated call by call."""
    from fluidq.batchtime.comm import Link
    from fluidq.batchtime.operators import lss_iteration_model
    from fluidq.models import load_model

    m = models["qwen3-dp2-ep2"]
    xs = np.arange(0, 2 * B + 1) / 2.0
    for f in (m.moe_us, models["vidur-70b-tp2"].comm_us, models["llama-pp2"].send_us, models["qwen3-moe"].moe_us):
        assert f.per_b is not None
        scalar = np.array([float(f(np.float64(x))) for x in xs.tolist()])
        np.testing.assert_array_equal(np.asarray(f.per_b(xs), dtype=float), scalar)

    class MyLink(Link):  # (not fluidq's own: its collectives are not known to be element-wise)
        pass

    qwen = DATA / "llmservingsim" / "RTXPRO6000_Qwen3-30B-A3B-Instruct-2507"
    mine = lss_iteration_model(qwen, n_layers=48, facts=load_model("Qwen/Qwen3-30B-A3B-Instruct-2507"),
                               comm=MyLink(bandwidth_gbps=50.0, latency_us=3.0), data_parallel_size=2,
                               expert_parallel_size=2)
    assert getattr(mine.moe_us, "per_b", None) is None
    ct = mine.kernel_table(max_batch_tokens=300)
    comps = _compositions(3, 300, n=400)
    np.testing.assert_array_equal(_batch_values(ct, comps), [mine.time(ch, dc) for ch, dc in comps])


def test_table_bounds_and_refusals(models):
    from fluidq.batchtime.composition import Composition
    from fluidq.batchtime.operators import KT_NB
    from fluidq.errors import ParameterError
    from fluidq.kernel.compose import batch_s

    from fluidq.batchtime.comm import Link
    from fluidq.batchtime.operators import lss_iteration_model

    m = lss_iteration_model(DATA / "llmservingsim" / "RTX4090_Llama-3.1-8B", n_layers=32, hidden_size=4096,
                            comm=Link(bandwidth_gbps=50.0, latency_us=3.0), pipeline_parallel_size=2)
    small = m.kernel_table(max_batch_tokens=100)
    assert small[KT_NB] == 101
    assert m.kernel_table(max_batch_tokens=50) is small  # (a table that covers the bound is reused)
    big = m.kernel_table(max_batch_tokens=1000)
    assert big[KT_NB] == 1001
    assert np.isfinite(batch_s(big, 0, 0.0, 0, 1000, 1000 * 50))
    assert np.isnan(batch_s(big, 0, 0.0, 0, 1001, 1001 * 50))  # (beyond the table: never formed by the engine)
    assert Composition(model=m).kernel_table() is None
    assert Composition(model=m).kernel_table(max_batch_tokens=1000)[KT_NB] == 1001
    for bad in (0, -3, 2.5, "100"):
        with pytest.raises(ParameterError, match="max_batch_tokens"):
            m.kernel_table(max_batch_tokens=bad)
    with pytest.raises(ParameterError, match="lockstep_ranks"):
        m.kernel_table(max_batch_tokens=100, lockstep_ranks=0)
    # a lockstep table carries scratch space: every call gets its own copy
    ls = _lockstep(models["qwen3-dp2-ep2"], 2)
    assert ls.kernel_table(max_batch_tokens=64) is not ls.kernel_table(max_batch_tokens=64)


def _case(seed, models):
    """A random vLLM-like engine (composition batch time of a parallel model, memory, budgets, emit, async)."""
    from fluidq import Engine
    from fluidq.batchtime.composition import Composition
    from fluidq.engine import VLLM, Memory

    rng = np.random.default_rng(seed)
    names = list(models) + ["lockstep2"]
    name = names[seed % len(names)]
    model = _lockstep(models["qwen3-dp2-ep2"], 2) if name == "lockstep2" else models[name]
    bs = int(rng.choice([1, 16]))
    kind = rng.choice(["tokens", "vllm", "prefix"])
    mem = {"tokens": Memory(), "vllm": VLLM.with_(block_size=bs),
           "prefix": VLLM.with_(block_size=bs, prefix_caching=True)}[kind]
    b_max = int(rng.choice([64, 256, 1024]))
    n = int(rng.integers(40, 100))
    p = rng.integers(1, int(rng.choice([40, 300, 900])), n)
    o = rng.integers(1, int(rng.choice([5, 40, 120])), n)
    cap = int(max(p + o) + rng.integers(0, 600)) // bs * bs + bs
    eng = Engine(batch_time=Composition(model=model), b_max=b_max,
                 k_max=None if rng.random() < 0.3 else int(rng.integers(2, 40)), kv_capacity_tokens=cap, memory=mem,
                 prefill_emits_token=bool(rng.random() < 0.7), async_scheduling=bool(rng.random() < 0.7))
    rate = float(rng.uniform(0.5, 3.0)) * 40.0 / float(np.mean(o) + 1)
    a = np.sort(rng.uniform(0.0, n / rate, n))
    return eng, {"arrival_s": a, "prompt_tokens": p, "output_tokens": o}, \
        ("vllm-chunked", "sarathi", "orca")[int(rng.integers(0, 3))], float(1.5 * a[-1] + 2.0)


SEEDS = range(12)
RUN_SEEDS = (0, 4, 5, 8)  # TP2, PP3, lockstep DP2, DP2 + EP2 (the runs compared uncompiled)


def test_kernel_equals_generic_on_random_parallel_engines(models):
    from fluidq.sim import simulate

    for seed in SEEDS:
        eng, w, pol, hz = _case(seed, models)
        b = simulate(eng, w, pol, method="generic", record_iterations=True, horizon_s=hz)
        a = simulate(eng, w, pol, record_iterations=True, horizon_s=hz)
        assert (a.method, b.method) == ("fast", "generic"), seed
        for k in b.requests:
            np.testing.assert_array_equal(a.requests[k], b.requests[k], err_msg=f"seed {seed}: {k}")
        for k in b.iterations:
            np.testing.assert_array_equal(a.iterations[k], b.iterations[k], err_msg=f"seed {seed}: records {k}")
        for k in ("n_iterations", "tokens_served", "preemptions", "wasted_tokens", "peak_kv_tokens", "end_s",
                  "busy_fraction"):
            assert getattr(a, k) == getattr(b, k), (seed, k)
        assert np.isfinite(a.requests["finish_s"]).sum() > 0, seed


@pytest.mark.filterwarnings("ignore::RuntimeWarning")
def test_uncompiled_evaluation_agrees(models, uncompiled_agrees):
    res = _arrays()
    for seed in RUN_SEEDS:  # and the kernel's runs
        from fluidq.sim import simulate

        eng, w, pol, hz = _case(seed, models)
        r = simulate(eng, w, pol, method="fast", horizon_s=hz)
        res[f"run{seed}"] = np.asarray(r.requests["finish_s"])
    uncompiled_agrees(HERE, res)


if __name__ == "__main__":
    import warnings

    from fluidq.kernel import compiled
    from fluidq.sim import simulate

    warnings.simplefilter("ignore", RuntimeWarning)
    print(f"compiled={compiled()}")
    out = _arrays()
    ms = _models()
    for seed in RUN_SEEDS:
        eng, w, pol, hz = _case(seed, ms)
        out[f"run{seed}"] = np.asarray(simulate(eng, w, pol, method="fast", horizon_s=hz).requests["finish_s"])
    np.savez(sys.argv[1], **out)
