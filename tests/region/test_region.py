"""Stability region under k_max (reference §4): vertices, geometry, invariants, bad input."""
import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fluidq
from fluidq import Affine, Engine, PiecewiseLinear, Staircase, Tabulated
from fluidq.errors import FluidqError, ParameterError
from fluidq.region import stability_region

PAPER = Staircase(c=0.01128, a=0.03547, b0=128)


def t(b):
    """Paper batch time, seconds, written out independently of the library."""
    return 0.01128 + 0.03547 * math.ceil(b / 128)


def cross2(u, w):
    return float(u[0] * w[1] - u[1] * w[0])


def region(b_max, k_max=100, bt=PAPER):
    return stability_region(Engine(batch_time=bt, b_max=b_max, k_max=k_max))


def as_set(vertices):
    return sorted((round(float(x), 6), round(float(y), 6)) for x, y in vertices)


def test_vertex_c_paper_constants():
    r = region(128)
    i = [k for k, s in enumerate(r.shapes) if tuple(s) == (29, 99)]
    assert len(i) == 1
    c = r.vertices[i[0]]
    # (29/46.75, 99/46.75) tokens/ms, reference §7
    assert c[0] / 1e3 == pytest.approx(29 / 46.75, rel=1e-12)
    assert c[1] / 1e3 == pytest.approx(99 / 46.75, rel=1e-12)
    assert c[0] / 1e3 == pytest.approx(0.620321, abs=5e-7)
    assert c[1] / 1e3 == pytest.approx(2.117647, abs=5e-7)
    assert r.kinds[i[0]] == "batch" and r.batch_seconds[i[0]] == pytest.approx(0.04675)
    assert bool(r.contains(c))


@pytest.mark.parametrize("b_max", [128, 512, 1024])
def test_vertices_for_paper_budgets(b_max):
    # O, pure prefill (b_max, 0), the b_max-token mixed batch (b_max - 99, 99), vertex C, pure decode (0, 100).
    # For b_max = 128 the mixed b_max batch *is* C. Mixed batches at the step ends in between lie on the
    # segment from C to the b_max one (t is affine in b at step ends), so they are not vertices.
    want = {(0, 0): (0.0, 0.0), (b_max, 0): (b_max / t(b_max), 0.0),
            (b_max - 99, 99): ((b_max - 99) / t(b_max), 99 / t(b_max)),
            (29, 99): (29 / t(128), 99 / t(128)), (0, 100): (0.0, 100 / t(100))}
    r = region(b_max)
    got = {tuple(int(v) for v in s): tuple(v) for s, v in zip(r.shapes, r.vertices)}
    assert set(got) == set(want)
    for shape, (x, y) in want.items():
        assert got[shape] == pytest.approx((x, y), rel=1e-12, abs=1e-9)
    # counter-clockwise from the origin, convex
    assert tuple(r.shapes[0]) == (0, 0)
    v = r.vertices
    cross = [cross2(v[(i + 1) % len(v)] - v[i], v[(i + 2) % len(v)] - v[(i + 1) % len(v)]) for i in range(len(v))]
    assert min(cross) > 0


def test_intermediate_step_ends_inside_not_vertices():
    r = region(1024)
    for b in (256, 384, 512, 768):
        p = ((b - 99) / t(b), 99 / t(b))
        assert r.contains(p)
        assert r.scale_of(p) == pytest.approx(1.0, rel=1e-9)  # on the boundary segment C--(925, 99)


def test_no_k_max_is_theorem_2():
    for b_max in (128, 512, 1000):
        e = Engine(batch_time=PAPER, b_max=b_max)
        r = stability_region(e)
        cap = fluidq.max_throughput(e).tokens_per_s
        assert as_set(r.vertices) == as_set([(0, 0), (cap, 0), (0, cap)])
        rng = np.random.default_rng(1)
        pts = rng.uniform(0, 1.2 * cap, size=(2000, 2))
        s = pts.sum(axis=1)
        keep = np.abs(s - cap) > 1e-6 * cap
        np.testing.assert_array_equal(r.contains(pts[keep]), s[keep] <= cap)


def test_k_max_at_least_b_max_is_theorem_2():
    assert as_set(region(512, k_max=512).vertices) == as_set(region(512, k_max=None).vertices)


def test_origin_and_axes():
    r = region(1024)
    assert r.contains((0.0, 0.0))
    assert math.isinf(r.scale_of((0, 0)))
    assert r.scale_of((1.0, 0.0)) == pytest.approx(1024 / t(1024))
    assert r.scale_of((0.0, 1.0)) == pytest.approx(100 / t(100))


def test_contains_vectorised_matches_scalar():
    r = region(512)
    rng = np.random.default_rng(7)
    pts = rng.uniform(0, 3500, size=(300, 2))
    vec = r.contains(pts)
    assert vec.dtype == bool and vec.shape == (300,)
    assert [r.contains(p) for p in pts] == list(vec)
    assert 0 < vec.sum() < 300


def test_scale_matches_contains():
    r = region(1024)
    rng = np.random.default_rng(3)
    pts = rng.uniform(0, 3500, size=(500, 2))
    s = r.scale_of(pts)
    clear = np.abs(s - 1) > 1e-6
    np.testing.assert_array_equal(r.contains(pts[clear]), s[clear] > 1)
    on = pts * s[:, None]
    assert np.all(r.contains(on))
    assert not np.any(r.contains(on * 1.001))


def test_max_request_rate():
    r = region(1024)
    lam = r.max_request_rate(290, 990)
    assert lam == pytest.approx(1 / 0.4675, rel=1e-9)  # vertex C: one (290, 990) request per 467.5 ms


def test_distance_sign():
    r = region(512)
    assert r.distance((100, 100)) > 0
    assert r.distance((3000, 2000)) < 0
    assert r.distance(r.vertices[2]) == pytest.approx(0, abs=1e-6)


@settings(max_examples=40, deadline=None)
@given(b_max=st.integers(1, 3000), k_max=st.integers(1, 400), b0=st.integers(1, 256),
       c=st.floats(0.0, 0.05), a=st.floats(1e-4, 0.05))
def test_convex_contains_origin_staircase(b_max, k_max, b0, c, a):
    r = region(b_max, k_max, Staircase(c=c, a=a, b0=b0))
    v = r.vertices
    assert tuple(v[0]) == (0.0, 0.0)
    n = len(v)
    assert n >= 3
    cross = np.array([cross2(v[(i + 1) % n] - v[i], v[(i + 2) % n] - v[(i + 1) % n]) for i in range(n)])
    assert np.all(cross > -1e-9 * r._scale ** 2)
    assert np.all(r.contains(v))
    assert np.all(v >= 0)


def _brute(bt, b_max, k_max):
    """Every admissible shape (x, y), brute force, as rate points."""
    pts = []
    for b in range(1, b_max + 1):
        tb = float(bt(b))
        for y in range(0, b + 1):
            x = b - y
            n_p = 1 if x > 0 else 0
            if y + n_p <= k_max:
                pts.append((x / tb, y / tb))
    return np.array(pts)


@settings(max_examples=25, deadline=None)
@given(b_max=st.integers(1, 90), k_max=st.integers(1, 60), kind=st.sampled_from(["stair", "pwl", "affine", "tab"]))
def test_smart_enumeration_equals_brute_force(b_max, k_max, kind):
    bt = {"stair": Staircase(c=0.002, a=0.01, b0=16), "pwl": PiecewiseLinear(c=0.02, a=0.0004, b0=24),
          "affine": Affine(c=0.01, a=0.0003),
          "tab": Tabulated(tokens=(1, 20, 50, 90), seconds=(0.01, 0.012, 0.02, 0.05))}[kind]
    r = region(b_max, k_max, bt)
    pts = _brute(bt, b_max, k_max)
    assert np.all(r.contains(pts))  # nothing admissible is outside
    # and every vertex is (dominated by) an admissible point: the region is not too big
    for v in r.vertices:
        assert np.any(np.all(pts >= v - 1e-9 * r._scale, axis=1)) or np.all(v == 0)


@settings(max_examples=30, deadline=None)
@given(b1=st.integers(1, 2048), db=st.integers(0, 2048), k1=st.integers(1, 300), dk=st.integers(0, 300))
def test_monotone_in_b_max_and_k_max(b1, db, k1, dk):
    small = region(b1, k1)
    for bigger in (region(b1 + db, k1), region(b1, k1 + dk), region(b1 + db, None)):
        assert np.all(bigger.contains(small.vertices))


def test_to_dict_and_repr():
    r = region(1024)
    d = r.to_dict()
    assert len(d["vertices_tokens_per_s"]) == len(r.vertices) and d["kinds"][0] == "idle"
    import json

    json.dumps(d)
    assert "k_max=100" in repr(r)
    assert "(29, 99)" in r.table()


def test_plot_writes(tmp_path):
    r = region(1024)
    out = r.plot(path=tmp_path / "r.png", point=(600, 2000))
    assert (tmp_path / "r.png").stat().st_size > 1000 and out == str(tmp_path / "r.png")


# ---- bad input ------------------------------------------------------------------------------------
@pytest.mark.parametrize("k", [0, -3])
def test_k_max_below_one(k):
    with pytest.raises(ParameterError, match="k_max"):
        Engine(batch_time=PAPER, b_max=512, k_max=k)


@pytest.mark.parametrize("p", [(-1.0, 5.0), (1.0, float("nan")), (float("inf"), 0.0)])
def test_bad_points(p):
    r = region(512)
    with pytest.raises(ParameterError, match="point"):
        r.contains(p)
    with pytest.raises(ParameterError):
        r.margin(p)
    with pytest.raises(ParameterError):
        fluidq.region_mix(r, p)


def test_bad_point_shape():
    r = region(512)
    with pytest.raises(ParameterError):
        r.contains((1.0, 2.0, 3.0))
    with pytest.raises(FluidqError):
        r.contains("abc")


def test_degenerate_batch_time():
    class Zero(fluidq.BatchTime):
        def _eval(self, b):
            return np.where(b > 64, 0.0, 0.01)

    class NaN(fluidq.BatchTime):
        def _eval(self, b):
            return np.full_like(b, np.nan)

    for bt in (Zero(), NaN()):
        with pytest.raises(ParameterError, match="batch_time"):
            stability_region(Engine(batch_time=bt, b_max=128, k_max=10))


def test_not_an_engine():
    with pytest.raises(ParameterError, match="engine"):
        stability_region("sarathi")


# ---- prompts of a fixed length: a request brings at most P prefill tokens to a batch -------------
def _brute_prompt(bt, b_max, k_max, P):
    pts = []
    for b in range(1, b_max + 1):
        tb = float(bt(b))
        for y in range(0, b + 1):
            x = b - y
            n_p = -(-x // P)
            if y + n_p <= k_max:
                pts.append((x / tb, y / tb))
    return np.array(pts)


@settings(max_examples=25, deadline=None)
@given(b_max=st.integers(1, 80), k_max=st.integers(1, 40), P=st.integers(1, 100))
def test_prompt_limited_region_equals_brute_force(b_max, k_max, P):
    bt = Staircase(c=0.002, a=0.01, b0=16)
    r = stability_region(Engine(batch_time=bt, b_max=b_max, k_max=k_max), prompt_tokens=P)
    pts = _brute_prompt(bt, b_max, k_max, P)
    assert np.all(r.contains(pts))
    for v in r.vertices:
        assert np.any(np.all(pts >= v - 1e-9 * r._scale, axis=1)) or np.all(v == 0)


@settings(max_examples=25, deadline=None)
@given(b_max=st.integers(1, 2048), k_max=st.integers(1, 300), P=st.integers(1, 3000), dP=st.integers(0, 500))
def test_prompt_limit_shrinks_the_region_monotonically(b_max, k_max, P, dP):
    e = Engine(batch_time=PAPER, b_max=b_max, k_max=k_max)
    short, longer, free = (stability_region(e, prompt_tokens=P), stability_region(e, prompt_tokens=P + dP),
                           stability_region(e))
    assert np.all(longer.contains(short.vertices)) and np.all(free.contains(longer.vertices))
    if P >= b_max:
        assert as_set(short.vertices) == as_set(free.vertices)


def test_vertex_c_survives_prompts_of_290():
    r = stability_region(Engine(batch_time=PAPER, b_max=1024, k_max=100), prompt_tokens=290)
    assert (29, 99) in [tuple(s) for s in r.shapes]
    # the 1024-token batch with 99 decode tokens needs 4 prefilling requests of 290: not admissible
    assert (925, 99) not in [tuple(s) for s in r.shapes]
    assert r.max_request_rate(290, 990) == pytest.approx(1 / 0.4675)


def test_prompt_tokens_bad():
    with pytest.raises(ParameterError, match="prompt_tokens"):
        stability_region(Engine(batch_time=PAPER, b_max=128, k_max=10), prompt_tokens=0)


def test_plot_policy_regions(tmp_path):
    from fluidq.plotting.region import plot_policy_regions
    from fluidq.region import policy_regions

    e = Engine(batch_time=PAPER, b_max=1024, k_max=100)
    res = policy_regions(e, ["sarathi", fluidq.Sarathi(b_max=128), "orca"])
    assert list(res.regions) == ["sarathi-1024", "sarathi-128", "orca-1024"] and res.simulated is None
    assert res.regions["sarathi-128"].contains((620.0, 2117.0)) and not res.regions["sarathi-1024"].contains((620.0, 2117.0))
    d = res.to_dict()
    assert set(d["regions"]) == set(res.regions) and d["engine_region"] == stability_region(e).to_dict()
    assert list(res.to_frame()["label"]) == ["engine", *res.regions]
    out = plot_policy_regions(res, point=(620.0, 2117.0), path=tmp_path / "p.png")
    assert (tmp_path / "p.png").stat().st_size > 1000 and out == str(tmp_path / "p.png")
    assert res.plot(point=(620.0, 2117.0), path=tmp_path / "q.png") == str(tmp_path / "q.png")
    # plotting computes no region: the old call (an engine and policies) says what to call instead
    with pytest.raises(ParameterError, match="policy_regions"):
        plot_policy_regions(e, ["sarathi"])
