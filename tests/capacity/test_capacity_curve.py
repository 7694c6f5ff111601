"""capacity_vs_bmax: Theorem 2's capacity per token budget, computed by the analysis (what
plotting.plot_capacity_vs_bmax draws; issue 14 T9)."""
import math

import pytest

import fluidq
from fluidq import Engine, Poisson, Staircase, Tabulated, Workload
from fluidq.capacity import CapacityCurveResult, capacity_vs_bmax
from fluidq.errors import ParameterError
from fluidq.results import Result

PAPER = Staircase(c=0.01128, a=0.03547, b0=128)


def test_each_point_is_max_throughput_at_that_budget():
    e = Engine(batch_time=PAPER, b_max=512)
    w = Workload(arrival=Poisson(rate_per_s=3.0), prompt_tokens=300, output_tokens=100)
    c = capacity_vs_bmax(e, w, b_max_values=[100, 128, 256, 1000])
    assert isinstance(c, CapacityCurveResult) and isinstance(c, Result)
    assert c.b_max_values == (100, 128, 256, 1000) and c.configured_b_max == 512
    for b, tps, rps in zip(c.b_max_values, c.tokens_per_s, c.requests_per_s):
        ref = fluidq.max_throughput(e.with_(b_max=b), w)
        assert tps == ref.tokens_per_s and rps == ref.requests_per_s
    # a staircase with b0 = 128 peaks at a multiple of 128: 100 tokens serve less than 128
    assert c.tokens_per_s[0] < c.tokens_per_s[1]
    assert c.offered_tokens_per_s == pytest.approx(3.0 * 400)
    d = c.to_dict()
    assert d["b_max_values"] == [100, 128, 256, 1000] and d["inputs"]["engine"]["b_max"] == 512
    f = c.to_frame()
    assert list(f["b_max"]) == [100, 128, 256, 1000] and list(f["requests_per_s"]) == list(c.requests_per_s)


def test_default_grid_and_no_workload():
    e = Engine(batch_time=PAPER, b_max=256)
    c = capacity_vs_bmax(e)
    assert c.b_max_values[0] == 16 and c.b_max_values[-1] == 4 * 256 and len(c.b_max_values) <= 96
    assert list(c.b_max_values) == sorted(set(c.b_max_values))
    assert c.requests_per_s is None and c.offered_tokens_per_s is None and "workload" not in c.inputs


def test_a_table_that_ends_stops_the_curve():
    bt = Tabulated(tokens=[1, 64, 128, 256], seconds=[0.01, 0.02, 0.03, 0.05])
    c = capacity_vs_bmax(Engine(batch_time=bt, b_max=128), b_max_values=[64, 256, 512])
    assert c.tokens_per_s[:2] == (3200.0, 5120.0) and math.isnan(c.tokens_per_s[2])
    assert c.to_dict()["tokens_per_s"][2] is None  # JSON has no NaN


@pytest.mark.parametrize("kw, name", [({"b_max_values": [0]}, "b_max_values"),
                                      ({"b_max_values": [1.5]}, "b_max_values")])
def test_bad_budgets_are_named(kw, name):
    with pytest.raises(ParameterError, match=name):
        capacity_vs_bmax(Engine(batch_time=PAPER, b_max=128), **kw)


def test_no_budgets_and_unbuildable_budgets_are_refused_not_swallowed():
    """Review: ``[]`` gave an empty curve and ``[10**9]`` a NaN (the Engine's ParameterError was swallowed)."""
    e = Engine(batch_time=PAPER, b_max=128)
    for empty in ([], ()):
        with pytest.raises(ParameterError) as exc:
            capacity_vs_bmax(e, b_max_values=empty)
        assert exc.value.name == "b_max_values" and "at least one" in exc.value.expected and exc.value.hint
    with pytest.raises(ParameterError) as exc:
        capacity_vs_bmax(e, b_max_values=[512, 10**9])
    assert exc.value.name == "b_max_values" and exc.value.value == 10**9 and "16,777,216" in exc.value.expected
    assert exc.value.hint  # why no larger budget is taken
    assert capacity_vs_bmax(e, b_max_values=[2**24]).tokens_per_s[0] > 0  # the largest budget an Engine takes


def test_bad_engine_and_workload_are_named():
    with pytest.raises(ParameterError, match="engine"):
        capacity_vs_bmax("sarathi")
    with pytest.raises(ParameterError, match="workload"):
        capacity_vs_bmax(Engine(batch_time=PAPER, b_max=128), 3.0)


def test_the_plot_draws_the_curve_it_was_given(tmp_path):
    c = capacity_vs_bmax(Engine(batch_time=PAPER, b_max=256), b_max_values=[128, 256, 512])
    ax = c.plot()
    x, y = ax.get_lines()[0].get_data()
    assert list(x) == [128, 256, 512] and list(y) == list(c.tokens_per_s)
    assert c.plot(path=tmp_path / "c.png") == str(tmp_path / "c.png")
