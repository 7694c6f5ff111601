"""Plots write files; results convert to JSON."""
from __future__ import annotations

import json

import pytest

from fluidq.fluid import fluid_path, fluid_stability
from fluidq.network import check_network_stability, simulate_network
from fluidq.network.examples import llm_rybko_stolyar, rybko_stolyar


def test_plots_write_files(tmp_path):
    net = llm_rybko_stolyar()
    p = fluid_path(net, {"A.1": 6400.0}, cycles=3)
    assert p.plot(path=tmp_path / "fluid.png").endswith("fluid.png")
    from fluidq.plotting.network import plot_fluid_path

    plot_fluid_path(p, by="class", log=True, path=tmp_path / "fluid_class.png")
    r = simulate_network(net, horizon_s=60.0, rng=1, initial={"A.1": 10})
    r.plot(path=tmp_path / "sim.png")
    from fluidq.plotting.network import plot_network_sim

    plot_network_sim(r, tokens=False, path=tmp_path / "sim_req.png")
    net.plot(path=tmp_path / "net.png")
    v = check_network_stability(rybko_stolyar(tokens_per_unit=10), simulate=True, horizon_s=50.0, replications=2, rng=1)
    v.plot(path=tmp_path / "verdict.png")
    for name in ("fluid", "fluid_class", "sim", "sim_req", "net", "verdict"):
        assert (tmp_path / f"{name}.png").stat().st_size > 2000
    ax = net.plot()  # no path: the axes come back, nothing is written
    assert hasattr(ax, "figure")


def test_results_are_json_ready():
    net = llm_rybko_stolyar()
    for obj in (fluid_path(net, {"A.1": 64.0}), fluid_stability(net),
                simulate_network(net, horizon_s=20.0, rng=2),
                check_network_stability(rybko_stolyar(tokens_per_unit=10), simulate=True, horizon_s=30.0,
                                        replications=2, rng=4)):
        d = obj.to_dict()
        json.dumps(d)
    v = fluid_stability(net).to_dict()
    assert v["status"] == "unstable" and v["certificate"] == "diverging_path"
    assert v["peak_growth"] == pytest.approx(4.135, abs=0.01)


def _legend(ax):
    return [t.get_text() for t in ax.get_legend().get_texts()]


def test_network_plot_draws_routers_loads_legend_and_fitting_labels():
    from fluidq.network import load_network

    ax = load_network("jsq_pair").plot()
    nodes = {t.get_gid() for t in ax.texts if t.get_gid()}
    edges = {p.get_gid() for p in ax.patches if p.get_gid()}
    assert {"node:router:pool", "node:station:E1", "node:station:E2"} <= nodes
    assert {"edge:router:pool->E1", "edge:router:pool->E2", "edge:route:arrivals->pool"} <= edges
    leg = _legend(ax)
    assert "router" in leg and any("load < 0.8" in t for t in leg) and any("overloaded" in t for t in leg)
    ax = load_network("random_unequal").plot()
    assert [t.get_text() for t in ax.texts].count("p=0.50") == 2
    # labels sit inside boxes sized to them, and the boxes do not overlap
    ax = load_network("fork_join").plot()
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    canvas = FigureCanvasAgg(ax.figure)
    canvas.draw()
    r = canvas.get_renderer()
    boxes = {t.get_gid(): t.get_bbox_patch().get_window_extent(r) for t in ax.texts if t.get_gid()}
    for t in ax.texts:
        if t.get_gid():
            inner, outer = t.get_window_extent(r), boxes[t.get_gid()]
            assert outer.x0 <= inner.x0 and inner.x1 <= outer.x1 and outer.y0 <= inner.y0 and inner.y1 <= outer.y1
    keys = sorted(boxes)
    assert not any(boxes[a].overlaps(boxes[b]) for i, a in enumerate(keys) for b in keys[i + 1:])
    # a fork's main line joins without an edge of its own to the departures
    assert "edge:route:orchestrator->departures" not in {p.get_gid() for p in ax.patches}


def test_network_plot_layers_and_bends_around_boxes():
    from fluidq.network.toml import network_from_dict

    eng = {"batch_time": {"kind": "affine", "c": 0.05, "a": 0.0}, "b_max": 512}
    net = network_from_dict({
        "engines": {"E1": eng, "E2": eng}, "routers": {"pool": {"engines": ["E1", "E2"]}},
        "classes": [{"name": "direct", "rate_per_s": 1.0, "route": [{"engine": "E1", "prompt": 10, "output": 10}]},
                    {"name": "pooled", "rate_per_s": 1.0, "route": [{"engine": "pool", "prompt": 10, "output": 10}]}]})
    ax = net.plot()
    at = {t.get_gid(): t.get_position() for t in ax.texts if t.get_gid()}
    # E1 is fed by the router too, so it sits in the router's engines' column, after the router
    assert at["node:station:E1"][0] == at["node:station:E2"][0] > at["node:router:pool"][0]
    # the direct arrivals -> E1 edge bends around the router box: its label is clear of it
    label = next(t for t in ax.texts if t.get_text() == "direct")
    (lx, ly), (px, py) = label.get_position(), at["node:router:pool"]
    assert abs(lx - px) > 0.45 or abs(ly - py) > 0.3


def test_verdict_plot_has_two_panels_on_their_own_time_axes():
    v = check_network_stability(rybko_stolyar(tokens_per_unit=10), simulate=True, horizon_s=40.0, replications=2,
                                rng=1)
    fl, sim = v.plot()
    fp = v.fluid.path  # a diverging path is drawn up to its last peak (issue 17)
    assert fl.get_xlim() == pytest.approx((0.0, fp.peaks[-1][0] if fp.outcome == "diverging" else fp.times_s[-1]))
    assert sim.get_xlim() == pytest.approx((0.0, 40.0))
    assert any("fluid model from 1 token in buffer '1'" in t for t in _legend(fl)), _legend(fl)
    assert any("run 1 of 2" in t and "starts empty" in t for t in _legend(sim)), _legend(sim)
    assert "unstable" in fl.figure.get_suptitle()
    # a path growing from empty (overloaded point) is also drawn over the simulated horizon
    from fluidq.network import load_network

    v = check_network_stability(load_network("random_unequal"), simulate=True, horizon_s=5.0, replications=2, rng=1)
    fl, sim = v.plot()
    assert any("fluid model from empty" in t for t in _legend(sim))
    line = next(ln for ln in sim.get_lines() if "fluid" in ln.get_label())
    assert line.get_xdata()[-1] == pytest.approx(5.0)
    # only a fluid path: one panel; given axes are split in two
    ax = check_network_stability(rybko_stolyar(tokens_per_unit=10)).plot()
    assert len(ax.figure.axes) == 1 and "unstable" in ax.get_title()
    from fluidq.plotting import axes

    fig, ax = axes(None)
    v = check_network_stability(rybko_stolyar(tokens_per_unit=10), simulate=True, horizon_s=20.0, replications=2,
                                rng=2)
    got = v.plot(ax=ax)
    assert len(got) == 2 and len(fig.axes) == 2


def test_fluid_and_sim_plots_say_where_they_start():
    from fluidq.plotting.network import plot_fluid_path, plot_network_sim

    net = llm_rybko_stolyar()
    ax = plot_fluid_path(fluid_path(net, {"A.1": 6400.0}, cycles=1))
    assert "from 6,400 tokens in buffer 'A.1'" in ax.get_title()
    ax = plot_network_sim(simulate_network(net, horizon_s=10.0, rng=1, initial={"A.1": 10}))
    assert "starting 10 requests in system" in ax.get_title() and ax.get_xlim() == pytest.approx((0.0, 10.0))
    ax = plot_network_sim(simulate_network(net, horizon_s=10.0, rng=1))
    assert "starting empty" in ax.get_title()


def test_a_diverging_fluid_path_is_drawn_to_its_last_peak_on_a_log_axis(capsys):
    # issue 17: drawn to its end, the unstable Rybko-Stolyar path ended in a long drain and looked stable
    import matplotlib

    matplotlib.use("Agg")
    from fluidq.cli import main
    from fluidq.plotting.network import plot_fluid_path

    res = check_network_stability(llm_rybko_stolyar())
    fp = res.fluid.path
    assert fp.outcome == "diverging" and len(fp.peaks) >= 2
    last = fp.peaks[-1][0]
    assert fp.times_s[-1] > last  # the path goes on draining after its last peak...
    a = res.plot()
    a = a[0] if isinstance(a, tuple) else a
    assert a.get_xlim()[1] == pytest.approx(last)  # ...but the figure stops at the peak
    assert a.get_yscale() in ("log", "symlog")
    b = plot_fluid_path(fp)
    assert b.get_xlim()[1] == pytest.approx(last) and b.get_yscale() == "symlog"
    assert main(["network", "llm_rybko_stolyar"]) == 0
    out = capsys.readouterr().out
    assert "peaks 2 times per cycle" in out, out


def test_describe_counts_in_words():
    from fluidq.network import Network, RequestClass
    from fluidq.network.model import Hop

    net = llm_rybko_stolyar()
    from fluidq.network import Station

    hop = Hop(engine="E1", prompt_tokens=16, output_tokens=8)
    one = Network(stations=(Station(name="E1", engine=net.stations[0].engine),),
                  classes=(RequestClass(name="c", route=(hop,), rate_per_s=0.5),))
    head = one.describe().splitlines()[0]
    assert "1 station," in head and "1 class," in head and "0 routers" in head, head
    assert "2 stations, 2 classes" in net.describe().splitlines()[0]
