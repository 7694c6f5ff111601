"""Single-engine plots read on their own: named bars, the engine's name in legends, coincident lines
kept apart, titles inside the figure."""
import numpy as np
import pytest

import fluidq
from fluidq import Engine, Poisson, Staircase, Workload

PAPER = Staircase(c=0.01128, a=0.03547, b0=128)
W = Workload(arrival=Poisson(rate_per_s=15.0), prompt_tokens=100, output_tokens=100)


def _ticks(ax):
    return [t.get_text() for t in ax.get_xticklabels()]


def _legend(ax):
    return [t.get_text() for t in ax.get_legend().get_texts()]


def test_capacity_plot_names_each_engine_and_marks_the_offered_load():
    cap = fluidq.max_throughput(Engine(batch_time=PAPER, b_max=512, name="my-engine"), W)
    ax = cap.plot()
    assert _ticks(ax) == ["my-engine"]
    assert f"{cap.tokens_per_s:,.0f} tokens/s" in ax.get_title()
    offered = [ln for ln in ax.get_lines() if ln.get_label().startswith("offered load")]
    assert len(offered) == 1 and offered[0].get_ydata()[0] == pytest.approx(W.token_rate_per_s)
    lo, hi = ax.get_xlim()
    assert lo < -0.3 and hi > 0.3  # the bar sits inside its axis, labelled, not on a bare numeric axis


def test_capacity_plot_of_several_engines_and_without_a_workload():
    a, b = Engine(batch_time=PAPER, b_max=512, name="small"), Engine(batch_time=PAPER, b_max=1024, name="big")
    ax = fluidq.max_throughput([a, b], W).plot()
    assert _ticks(ax) == ["small", "big", "total"]
    ax = fluidq.max_throughput(a.with_(name="engine")).plot()  # no workload: nothing offered to draw
    assert _ticks(ax) == ["engine"] and not [ln for ln in ax.get_lines() if "offered" in ln.get_label()]


def test_region_legend_uses_the_engine_name():
    from fluidq.plotting.region import plot_region

    named = fluidq.stability_region(Engine(batch_time=PAPER, b_max=512, k_max=64, name="my-engine"))
    assert _legend(plot_region(named))[0].startswith("my-engine: b_max=512")
    plain = fluidq.stability_region(Engine(batch_time=PAPER, b_max=512, k_max=64))
    assert _legend(plot_region(plain))[0].startswith("engine: b_max=512")


def test_identical_trajectories_stay_distinguishable():
    from fluidq.plotting.sim import plot_trajectories

    e = Engine(batch_time=PAPER, b_max=512)
    w = Workload(arrival=Poisson(rate_per_s=5.0), prompt_tokens=300, output_tokens=fluidq.Geometric(mean_tokens=100.0))
    runs = {p: fluidq.simulate(e, w, p, horizon_s=10.0, rng=3) for p in ("sarathi", "orca", "vllm-chunked")}
    b = {p: r.backlog["requests"] for p, r in runs.items()}
    assert np.array_equal(b["sarathi"], b["vllm-chunked"])  # the case of the report: one line hides another
    assert b["sarathi"].shape != b["orca"].shape or not np.array_equal(b["sarathi"], b["orca"])
    ax = plot_trajectories(runs)
    lines = ax.get_lines()
    styles = [(ln.get_linestyle(), tuple(ln._dash_pattern[1] or ())) for ln in lines]
    assert len(set(styles)) == len(lines) == 3
    widths = [ln.get_linewidth() for ln in lines]
    assert widths == sorted(widths, reverse=True) and widths[0] > widths[-1]  # later lines thinner, on top
    assert [ln.get_zorder() for ln in lines] == sorted(ln.get_zorder() for ln in lines)
    labels = _legend(ax)
    assert "identical" in labels[2] and "sarathi" in labels[2] and "identical" not in labels[1]


def test_long_titles_stay_inside_the_figure():
    from fluidq.plotting.sim import plot_trajectories

    e = Engine(batch_time=PAPER, b_max=512)
    run = fluidq.simulate(e, W.with_rate(10.0), "sarathi", horizon_s=5.0, rng=1)
    title = "rescaled to 0.8 of capacity: load 0.80 of capacity (1.96 req/s, Poisson arrivals, trace lengths)"
    ax = plot_trajectories({"sarathi": run}, title=title)
    from matplotlib.backends.backend_agg import FigureCanvasAgg

    fig = ax.figure
    canvas = FigureCanvasAgg(fig)
    canvas.draw()  # constrained layout applied, as when saved
    r = canvas.get_renderer()
    box, page = ax.title.get_window_extent(r), fig.bbox
    assert box.x0 >= page.x0 - 1 and box.x1 <= page.x1 + 1 and box.y1 <= page.y1 + 1
    assert fig.get_tightbbox(r).width <= fig.bbox_inches.width + 0.02


def test_region_labels_of_near_duplicate_vertices_do_not_stack():
    """Vertices (265, 63), (264, 63), (255, 63) among ones thousands apart: every vertex keeps its point, only the
    first of the three near ones keeps its label (no two labels closer than MIN_LABEL_GAP in axes fraction)."""
    import dataclasses

    from fluidq.plotting.region import MIN_LABEL_GAP, plot_region

    reg = fluidq.stability_region(Engine(batch_time=PAPER, b_max=512, k_max=64))
    v = np.array([[0, 0], [3000, 0], [265, 63], [264, 63], [255, 63], [0, 2000]], dtype=float)
    shapes = np.array([[0, 0], [512, 0], [500, 12], [498, 14], [490, 22], [0, 64]])
    kinds = ("idle", "batch", "batch", "batch", "batch", "batch")
    near = dataclasses.replace(reg, vertices=v, shapes=shapes, kinds=kinds)
    ax = plot_region(near)
    texts = [t.get_text() for t in ax.texts]
    assert texts == ["(512p+0d)", "(500p+12d)", "(0p+64d)"]
    points = [ln for ln in ax.get_lines() if ln.get_marker() == "o"]
    assert len(points) == 5  # the points stay
    pos = ax.transAxes.inverted().transform(ax.transData.transform([t.xy for t in ax.texts]))
    gaps = [np.hypot(*(pos[i] - pos[j])) for i in range(len(pos)) for j in range(i)]
    assert min(gaps) >= MIN_LABEL_GAP
