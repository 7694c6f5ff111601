"""Grids, seeds and the result store of fluidq.sweep."""
import io
import json

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fluidq.errors import DataError, FluidqError, ParameterError
from fluidq.sweep import Grid, StoreMismatchError, StoreWarning, point_rng, read_store, sweep
from fluidq.sweep.demo import mm1_wait
from fluidq.sweep.progress import ProgressBar


def test_grid_is_row_major_product_with_fixed_values():
    g = Grid(axes={"a": [1, 2, 3], "b": ["x", "y"]}, fixed={"c": 0.5})
    assert len(g) == 6 and g.shape == (3, 2)
    assert [(p["a"], p["b"]) for p in g] == [(a, b) for a in (1, 2, 3) for b in ("x", "y")]
    assert all(p["c"] == 0.5 for p in g)
    assert g[-1] == g[5]
    with pytest.raises(IndexError):
        g[6]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.integers(1, 4), min_size=1, max_size=4))
def test_grid_points_are_distinct_and_cover_the_product(sizes):
    g = Grid(axes={f"x{k}": list(range(n)) for k, n in enumerate(sizes)})
    pts = {tuple(p.values()) for p in g}
    assert len(pts) == len(g) == int(np.prod(sizes))


def test_axis_ranges():
    g = Grid(axes={"load": {"start": 0.5, "stop": 1.0, "num": 6}, "seed": {"start": 0, "stop": 3, "step": 1}})
    assert g.axes["load"] == pytest.approx((0.5, 0.6, 0.7, 0.8, 0.9, 1.0))
    assert g.axes["seed"] == (0, 1, 2)
    assert Grid(axes={"x": {"start": 0.5, "stop": 1.2, "num": 15}}).axes["x"][1] == 0.55  # no 0.5499999999


@pytest.mark.parametrize("kw, word", [
    ({"axes": {"a": []}}, "at least one"),
    ({"axes": {"a": [object()]}}, "JSON"),
    ({"axes": {"a": [float("nan")]}}, "finite"),
    ({"axes": {"a": [1]}, "fixed": {"a": 2}}, "also an axis"),
    ({"axes": {"a": [1]}, "points": [{"a": 1}]}, "exactly one"),
    ({"points": [{"a": 1}], "fixed": {"a": 1}}, "fixed"),
    ({"axes": {"a": {"start": 0, "stop": 1}}}, "start, stop"),
])
def test_bad_grids_raise_naming_the_problem(kw, word):
    with pytest.raises(FluidqError, match=word):
        Grid(**kw)


def test_point_rng_is_the_seedsequence_child():
    children = np.random.SeedSequence(7).spawn(5)
    for k in range(5):
        assert point_rng(7, k).random() == np.random.default_rng(children[k]).random()


def test_common_seeds_share_streams_only_along_other_axes():
    g = Grid(axes={"load": [0.3, 0.6], "policy": ["a", "b", "c"], "seed": [0, 1]})
    keys = {}
    for i, p in enumerate(g):
        keys.setdefault((p["load"], p["seed"]), set()).add(g.seed_key(i, ["load", "seed"]))
    assert all(len(v) == 1 for v in keys.values())
    assert len({next(iter(v)) for v in keys.values()}) == 4


def _run_to_interrupt(point, rng):
    if point["seed"] == 13:
        raise KeyboardInterrupt
    return mm1_wait(point, rng)


GRID = Grid(axes={"rate_per_s": [0.3, 0.6], "seed": list(range(20))}, fixed={"customers": 200})


def test_ctrl_c_keeps_finished_chunks_and_resume_matches(tmp_path):
    store = tmp_path / "s.jsonl"
    full = sweep(mm1_wait, GRID, executor="serial", chunk_size=4)
    with pytest.raises(KeyboardInterrupt):
        sweep(_run_to_interrupt, GRID, executor="serial", chunk_size=4, store=store)
    header, rows = read_store(store)
    assert len(rows) == 12 and header["n_points"] == 40  # chunks 0-2 finished, the one with seed 13 not
    # the interrupted run used another function: its store belongs to another sweep
    with pytest.raises(StoreMismatchError):
        sweep(mm1_wait, GRID, executor="serial", store=store)
    # same function both times: store written by the first, the second resumes
    store2 = tmp_path / "s2.jsonl"
    part = Grid(axes={"rate_per_s": [0.3, 0.6], "seed": list(range(20))}, fixed={"customers": 200})
    with open(store2, "wb"):
        pass
    a = sweep(mm1_wait, part, executor="serial", chunk_size=7, store=store2)
    lines = store2.read_bytes().split(b"\n")
    keep = b"\n".join(lines[:3]) + b"\n"  # header + 2 chunks survive
    store2.write_bytes(keep + lines[3][:20])  # and a torn third chunk
    with pytest.warns(StoreWarning, match="torn"):
        b = sweep(mm1_wait, part, executor="serial", chunk_size=5, store=store2)
    assert b.n_resumed == 14 and b.n_computed == 26
    assert a.rows == b.rows == full.rows
    _, rows = read_store(store2)
    assert [r["index"] for r in rows] == list(range(40))  # each point stored exactly once
    for ln in store2.read_bytes().split(b"\n")[:-1]:
        json.loads(ln)  # the torn tail was cut: every line parses


def test_results_do_not_depend_on_chunking_or_executor():
    a = sweep(mm1_wait, GRID, executor="serial", chunk_size=40, seed=3)
    b = sweep(mm1_wait, GRID, executor="threads", chunk_size=3, seed=3, max_workers=2)
    c = sweep(mm1_wait, GRID, chunk_size=7, seed=3, max_workers=2)  # local processes
    assert a.rows == b.rows == c.rows
    d = sweep(mm1_wait, GRID, executor="serial", chunk_size=40, seed=4)
    assert a.column("mean_wait_s") != d.column("mean_wait_s")


def test_seeded_replications_agree_with_mm1_theory():
    g = Grid(axes={"seed": list(range(40))}, fixed={"rate_per_s": 0.5, "customers": 4000})
    w = np.array(sweep(mm1_wait, g, executor="serial", seed=11).column("mean_wait_s"))
    half = 3.0 * w.std(ddof=1) / np.sqrt(len(w))  # ~99.7 % normal interval over replications
    assert abs(w.mean() - 1.0) < half + 0.05  # + the bias of a finite run after a short warm-up


def test_store_of_another_file_type_is_rejected(tmp_path):
    p = tmp_path / "notes.jsonl"
    p.write_text('{"hello": 1}\n')
    with pytest.raises(DataError, match="not a fluidq sweep store"):
        sweep("capacity", {"b_max": [256]}, executor="serial", store=p)


def test_errors_record_or_raise():
    g = Grid(points=[{"rate_per_s": 0.5}, {"rate_per_s": 2.0}])
    rec = sweep(mm1_wait, g, executor="serial", errors="record")
    assert "error" in rec.rows[1] and "mean_wait_s" in rec.rows[0]
    with pytest.raises(FluidqError, match="rate_per_s"):
        sweep(mm1_wait, g, executor="serial")


def test_bad_arguments():
    with pytest.raises(ParameterError, match="chunk_size"):
        sweep("capacity", {"b_max": [256]}, chunk_size=0)
    with pytest.raises(FluidqError, match="analysis"):
        sweep("nope", {"b_max": [256]})
    with pytest.raises(ParameterError, match="common_seeds"):
        sweep("capacity", {"b_max": [256]}, common_seeds=["load"])
    with pytest.raises(FluidqError, match="executor"):
        sweep("capacity", {"b_max": [256]}, executor=42)


def test_progress_bar_draws_counts_and_eta():
    s = io.StringIO()
    bar = ProgressBar(10, 2, stream=s, enabled=True, max_hz=1e9)
    bar.update(3)
    bar.close()
    out = s.getvalue()
    assert "5/10" in out and "50%" in out and "(2 resumed)" in out and out.endswith("\n")
    silent = io.StringIO()
    ProgressBar(10, stream=silent).close()  # not a terminal: draws nothing by default
    assert silent.getvalue() == ""


def test_table_and_frame():
    res = sweep("capacity", {"b_max": [256, 512, 1024]}, executor="serial")
    assert [r["b_max"] for r in res.table()] == [256, 512, 1024]
    caps = res.column("tokens_per_s")
    assert caps == sorted(caps)  # Theorem 2 capacity grows with the budget here
    assert res.to_dict()["n_points"] == 3
    pd = pytest.importorskip("pandas")
    assert isinstance(res.to_frame(), pd.DataFrame)


def test_fluidq_sweep_is_callable_whichever_way_it_was_imported():
    import fluidq
    import fluidq.sweep

    assert fluidq.sweep("capacity", {"b_max": [512]}, executor="serial").rows[0]["tokens_per_s"] == \
        pytest.approx(3342.909, rel=1e-6)


def test_simulate_analysis_is_seeded_by_point_index():
    pytest.importorskip("fluidq.sim", reason="the simulator is not in this checkout")
    g = Grid(axes={"load": [0.6, 1.2], "policy": ["sarathi", "vllm"]},
             fixed={"prompt_tokens": 64, "output_tokens": 64, "horizon_s": 10.0, "lengths": "geometric"})
    a = sweep("simulate", g, executor="serial", seed=1)
    b = sweep("simulate", g, chunk_size=1, seed=1, max_workers=2)
    assert a.rows == b.rows
    assert all(r["requests"] > 0 for r in a.rows)
    c = sweep("simulate", g, executor="serial", seed=2)
    assert a.column("requests") != c.column("requests")


def test_region_analysis_rate_grows_with_k_max_and_stays_under_theorem2():
    g = Grid(axes={"b_max": [128, 512], "k_max": [16, 64, 100, 400]},
             fixed={"prompt_tokens": 290, "output_tokens": 990, "load": 1.2})
    rows = sweep("region", g, executor="serial").rows
    for b in (128, 512):
        rates = [r["max_request_rate_per_s"] for r in rows if r["b_max"] == b]
        assert rates == sorted(rates)  # a larger batch-size limit never shrinks the region
        assert all(r["max_request_rate_per_s"] <= r["theorem2_requests_per_s"] * (1 + 1e-9)
                   for r in rows if r["b_max"] == b)
    assert not any(r["inside"] for r in rows)  # 1.2 x the capacity is outside every region


def test_a_store_whose_header_was_torn_starts_afresh(tmp_path):
    p, q = tmp_path / "s.jsonl", tmp_path / "q.jsonl"
    sweep("capacity", {"b_max": [256, 512]}, executor="serial", store=q)
    for cut in (5, 21, 120):  # killed while writing the header: the first bytes fluidq writes
        torn = q.read_bytes()[:cut]
        p.write_bytes(torn)
        with pytest.warns(StoreWarning, match="torn"):
            res = sweep("capacity", {"b_max": [256, 512]}, executor="serial", store=p)
        assert res.n_computed == 2 and read_store(p)[0]["n_points"] == 2
        assert (tmp_path / "s.jsonl.damaged").read_bytes().endswith(torn + b"\n")  # set aside, not lost
        p.unlink()


def _draws(point, rng):
    return {"u": float(rng.random()), "k": int(rng.integers(0, 1 << 30))}


@settings(max_examples=25, deadline=None)
@given(sizes=st.lists(st.integers(1, 4), min_size=1, max_size=3), chunk=st.integers(1, 20),
       cut=st.integers(0, 30), seed=st.integers(0, 2**32 - 1))
def test_table_is_independent_of_chunking_and_of_where_the_sweep_stopped(tmp_path_factory, sizes, chunk, cut,
                                                                          seed):
    g = Grid(axes={f"x{k}": list(range(n)) for k, n in enumerate(sizes)})
    whole = sweep(_draws, g, executor="serial", chunk_size=len(g), seed=seed)
    store = tmp_path_factory.mktemp("s") / "s.jsonl"
    first = sweep(_draws, g, executor="serial", chunk_size=chunk, seed=seed, store=store)
    assert first.rows == whole.rows
    # drop the last stored chunks (an interruption at an arbitrary chunk) and resume with other chunking
    lines = store.read_bytes().split(b"\n")[:-1]
    keep = max(1, min(len(lines), 1 + cut % max(1, len(lines))))
    store.write_bytes(b"\n".join(lines[:keep]) + b"\n")
    again = sweep(_draws, g, executor="serial", chunk_size=max(1, chunk // 2), seed=seed, store=store)
    assert again.rows == whole.rows and again.n_resumed + again.n_computed == len(g)
    assert again.n_resumed == sum(len(json.loads(ln)["indices"]) for ln in lines[1:keep])


def test_sweep_plot_draws_one_line_per_hue(tmp_path):
    res = sweep("capacity", {"b_max": [128, 256, 512, 1024], "engines": [1, 2]}, executor="serial")
    ax = res.plot(x="b_max", y="tokens_per_s", hue="engines")
    assert len(ax.lines) == 2
    two = [ln for ln in ax.lines if ln.get_label() == "2"][0]
    one = [ln for ln in ax.lines if ln.get_label() == "1"][0]
    assert list(two.get_ydata()) == pytest.approx([2 * y for y in one.get_ydata()])  # JSQ capacities add
    path = res.plot(x="b_max", y="tokens_per_s", path=tmp_path / "s.png")
    assert (tmp_path / "s.png").stat().st_size > 1000 and str(path).endswith("s.png")
