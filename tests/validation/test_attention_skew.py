"""The attention-skew term of LLMServingSim profiles (issue 16, h-lat16) and fluidq's iteration composition
against the peer simulator's rule, term by term.

fluidq's :class:`~fluidq.batchtime.operators.IterationModel` and LLMServingSim's simulator read the same
operator profiles; ``validation/tools/peer_composition.py`` reimplements the peer's composition rule.  On
any batch the two agree on every dense and per-sequence term; attention agrees on decode-only batches; the
peer adds a skew term that fluidq offers as ``attention_skew`` (off by default: the shipped profiles carry
only the pooled alpha, see ``validation/RESULTS.md``)."""
import importlib.util
import shutil
from pathlib import Path

import numpy as np
import pytest

from fluidq.batchtime.composition import Composition
from fluidq.batchtime.operators import AttentionSkew, lss_iteration_model
from fluidq.errors import DataError, ParameterError
from fluidq.validate.replay import replay

ROOT = Path(__file__).resolve().parents[2]


def _tool():
    spec = importlib.util.spec_from_file_location("peer_composition",
                                                  ROOT / "validation" / "tools" / "peer_composition.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def pro6000(data_dir):
    return data_dir / "llmservingsim" / "RTXPRO6000_Llama-3.1-8B"


def _batches(seed, n=150, mixed=False):
    """Seeded random batch shapes within the profile's range: decodes of ShareGPT-like (lognormal) contexts,
    and for ``mixed`` one or two prompt chunks."""
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        nd = int(rng.integers(2, 129))
        dc = np.minimum(rng.lognormal(6.5, 0.9, nd), 15000).astype(int) + 1
        pcs = []
        if mixed:
            for _ in range(int(rng.integers(1, 3))):
                pcs.append((int(rng.integers(16, 900)), int(rng.choice([0, 0, rng.integers(16, 4000)]))))
        out.append((pcs, dc.tolist()))
    return out


def test_the_profiles_skew_fits(data_dir):
    d = data_dir / "llmservingsim"
    assert AttentionSkew.from_profile(d / "RTX4090_Llama-3.1-8B") is None  # skew_fit: enabled: false
    s = AttentionSkew.from_profile(d / "RTXPRO6000_Llama-3.1-8B", 1)
    assert s.alpha_default == 0.0543 and not s.buckets and "no bucket table" in s.source
    assert s.axes["n_labels"][6] == "n<=128" and s.axes["kp_bins"][0] == -1.0
    assert AttentionSkew.from_profile(d / "RTXPRO6000_Llama-3.1-8B", 2).alpha_default == 0.0654
    assert AttentionSkew.from_profile(d / "RTXPRO6000_Qwen3-30B-A3B-Instruct-2507", 1).alpha_default == 0.0645
    assert AttentionSkew.from_profile(d / "RTXPRO6000_Llama-3.1-8B", 4) is None  # no such TP in the fit


def test_off_by_default_and_the_kernel_only_without_it(pro6000):
    m = lss_iteration_model(pro6000, n_layers=32)
    ms = lss_iteration_model(pro6000, n_layers=32, attention_skew="profile")
    assert m.skew is None and m.kernel_table() is not None
    assert ms.skew.alpha_default == 0.0543 and ms.kernel_table() is None and "attention skew" in ms.source
    assert Composition(model=ms).kernel_table(max_batch_tokens=2048) is None
    # uniform batches (and a single decode) have no skew: the same seconds, bit for bit
    for pcs, dc in (([], [700] * 40), ([], [3000]), ([(500, 0)], [64] * 9), ([(300, 100)], [])):
        assert ms.time(pcs, dc) == m.time(pcs, dc)
    # time_shape reads a uniform batch: unchanged
    assert np.array_equal(ms.time_shape(0.0, 0.0, 64.0, 900.0), m.time_shape(0.0, 0.0, 64.0, 900.0))


@pytest.mark.parametrize("mixed", [False, True])
def test_the_skew_term_is_alpha_times_the_attention_gap(pro6000, mixed):
    m = lss_iteration_model(pro6000, n_layers=32)
    ms = lss_iteration_model(pro6000, n_layers=32, attention_skew="profile")
    for pcs, dc in _batches(11, 40, mixed):
        C = float(sum(c for c, _ in pcs))
        kv_eff = max(0.0, sum(c * (k + c / 2) for c, k in pcs) / C - C / 2) if C else 0.0
        d = np.asarray(dc, dtype=float)
        gap = float(m.attn_us(C, kv_eff, d.size, d.max())) - float(m.attn_us(C, kv_eff, d.size, d.mean()))
        want = 32 * 0.0543 * max(gap, 0.0) * 1e-6
        assert ms.time(pcs, dc) - m.time(pcs, dc) == pytest.approx(want, rel=1e-9, abs=1e-12)
        assert want > 0  # lognormal contexts: the longest is far above the mean


def test_bucket_lookup_follows_the_profiles_axes(pro6000, tmp_path):
    axes = AttentionSkew.from_profile(pro6000).axes
    s = AttentionSkew(alpha_default=0.05, axes=axes, buckets={
        (0, "n<=128", "sr<=5%", "kvB<=16k", "kp=0"): 0.02, (0, "n<=256", "sr<=5%", "kvB<=16k", "kp=0"): 0.01,
        (16, "n<=8", "sr>70%", "kvB<=1k", "kp<=512"): 0.4})
    assert s.alpha(0, 128, 0.05, 9000, 0) == 0.02  # bins are right-inclusive: 128 is n<=128, 0.05 is sr<=5%
    assert s.alpha(0, 129, 0.0, 16384, 0) == 0.01
    assert s.alpha(0, 128, 0.051, 9000, 0) == 0.05  # sr<=15%: no such bucket -> the pooled alpha
    assert s.alpha(16, 8, 0.9, 1024, 512) == 0.4
    assert s.alpha(17, 8, 0.9, 1024, 512) == 0.05  # the prefill chunk is keyed exactly, as the peer keys it
    # a folder that ships the bucket table (the profiler's tp1/skew_fit.csv as profile_tp1_skew_fit.csv)
    shutil.copy(pro6000 / "profile_meta.yaml", tmp_path / "profile_meta.yaml")
    (tmp_path / "profile_tp1_skew_fit.csv").write_text(
        "layer,pc,n_label,skew_rate_label,kv_big_label,kp_label,alpha,n_samples\n"
        "attention,0,n<=128,sr<=15%,kvB<=4k,kp=0,0.0376,7\n")
    t = AttentionSkew.from_profile(tmp_path)
    assert t.buckets == {(0, "n<=128", "sr<=15%", "kvB<=4k", "kp=0"): 0.0376} and "1 buckets" in t.source
    assert t.alpha(0, 100, 0.1, 3000, 0) == 0.0376 and t.alpha(0, 100, 0.1, 5000, 0) == 0.0543
    (tmp_path / "profile_tp1_skew_fit.csv").write_text("pc,alpha\n0,0.1\n")
    with pytest.raises(DataError, match="n_label"):
        AttentionSkew.from_profile(tmp_path)


def test_bad_input_is_refused_by_name(data_dir, pro6000):
    with pytest.raises(ParameterError, match="alpha_default"):
        AttentionSkew(alpha_default=2.0)
    with pytest.raises(ParameterError, match="axes"):
        AttentionSkew(alpha_default=0.05, buckets={(0, "a", "b", "c", "d"): 0.1})
    with pytest.raises(ParameterError, match="attention_skew"):
        lss_iteration_model(pro6000, n_layers=32, attention_skew="yes")
    with pytest.raises(ParameterError, match="no enabled skew_fit"):
        lss_iteration_model(data_dir / "llmservingsim" / "RTX4090_Llama-3.1-8B", n_layers=32,
                            attention_skew="profile")


def test_a_replay_with_the_skew_term_runs_on_the_generic_path_and_is_slower(pro6000):
    rng = np.random.default_rng(5)
    a = np.sort(rng.uniform(0, 3.0, 60))
    p, o = rng.integers(20, 1500, 60), rng.integers(5, 120, 60)
    kw = dict(b_max=2048, k_max=32, kv_capacity_tokens=10**6)
    r0 = replay(lss_iteration_model(pro6000, n_layers=32), a, p, o, **kw)
    r1 = replay(lss_iteration_model(pro6000, n_layers=32, attention_skew="profile"), a, p, o, **kw)
    assert r1.iterations > 0 and np.all(np.isfinite(r1.last_token_s))
    assert np.nanmean(r1.last_token_s - a) > np.nanmean(r0.last_token_s - a)  # every skewed batch costs more


@pytest.mark.parametrize("seed", [1, 2])
def test_fluidq_composes_an_iteration_as_the_peer_does(pro6000, seed):
    """Dense operators, embedding and final norm, LM head and sampler: the same to the peer's whole
    nanoseconds on every batch; decode attention within 1 % summed over the batches (the peer also reads the
    x1.5 rows fluidq's grid leaves out); the skew term the same with the same alpha (the peer takes the
    integer mean context)."""
    tool = _tool()
    m = lss_iteration_model(pro6000, n_layers=32, attention_skew="profile")
    peer = tool.PeerRule(pro6000, 32, alpha=0.0543)
    f_att = p_att = f_sk = p_sk = 0.0
    for pcs, dc in _batches(seed) + _batches(seed + 10, 60, mixed=True):
        f, p = tool.fluidq_terms(m, pcs, dc), peer.terms(pcs, dc)
        for t in ("linear", "once", "per_seq"):
            assert f[t] == pytest.approx(p[t], rel=2e-5, abs=40 * 32), (t, pcs, len(dc))
        if not pcs:
            f_att, p_att, f_sk, p_sk = f_att + f["attention"], p_att + p["attention"], f_sk + f["skew"], p_sk + p["skew"]
    assert f_att == pytest.approx(p_att, rel=0.01)
    assert f_sk == pytest.approx(p_sk, rel=0.03)
