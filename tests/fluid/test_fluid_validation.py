"""Bad input to the fluid models raises a FluidqError naming the parameter and the value; never clipped."""
from __future__ import annotations

import dataclasses
import math
from types import MappingProxyType

import numpy as np
import pytest

import fluidq
from fluidq.errors import FluidqError, ParameterError, TopologyError
from fluidq.fluid import fluid_path, fluid_stability, lyapunov_certificate
from fluidq.fluid.path import FluidSystem
from fluidq.network import Choice, Hop, Network, RequestClass, Station
from fluidq.network.examples import rybko_stolyar
from fluidq.results import Status


def _engine():
    return fluidq.Engine(batch_time=fluidq.Affine(c=1.0, a=0.0), b_max=64)


def _leaving_class(name="A"):
    """A class that leaves the network at once: its only hop sits on a Choice option of probability 0.

    (A route whose options are all empty is rejected when the class is built; a probability-0 option
    is not, and compiles to no buffer.)
    """
    return RequestClass(name=name, rate_per_s=1.0, route=[
        Choice(options=[(0.0, [Hop(engine="E", prompt_tokens=8, output_tokens=8, name=f"{name}.never")]), (1.0, [])])])


def _without_buffers(net):
    """``net`` with its compiled flow model emptied of buffers, however the description was validated."""
    fm = net.flow
    empty = dataclasses.replace(fm, buffers=(), inflow=(), joins=(), exits=tuple(() for _ in fm.classes),
                                point_of=np.zeros(0, dtype=np.int64), priority_rank=np.zeros(0, dtype=np.int64))
    net.__dict__["flow"] = empty  # the cached_property's slot
    return net


def _tandem(rate=1.0):
    """E1 (80 tokens per request) then E2 (16): E1 has load 1.25 * rate, E2 0.25 * rate."""
    return Network(stations=[Station(name="E1", engine=_engine()), Station(name="E2", engine=_engine())],
                   classes=[RequestClass(name="A", rate_per_s=rate, route=[
                       Hop(engine="E1", prompt_tokens=60, output_tokens=20),
                       Hop(engine="E2", prompt_tokens=8, output_tokens=8)])])


# ---- 1. horizon_s, max_phases, cycles ------------------------------------------------------------

@pytest.mark.parametrize("horizon", [-1.0, 0, 0.0, math.nan, math.inf, -math.inf])
def test_fluid_path_rejects_non_positive_or_non_finite_horizon(horizon):
    with pytest.raises(ParameterError, match="horizon_s") as exc:
        fluid_path(rybko_stolyar(), {"1": 1.0}, horizon_s=horizon)
    assert exc.value.name == "horizon_s" and (exc.value.value == horizon or math.isnan(horizon))


def test_fluid_path_rejects_a_horizon_that_is_not_a_number():
    with pytest.raises(FluidqError, match="horizon_s"):
        fluid_path(rybko_stolyar(), {"1": 1.0}, horizon_s="5")


@pytest.mark.parametrize("param, value", [("max_phases", 0), ("max_phases", -5), ("cycles", 0), ("cycles", -1),
                                          ("max_phases", 2.5), ("cycles", 1.5)])
def test_fluid_path_rejects_phase_and_cycle_counts_below_one(param, value):
    with pytest.raises(ParameterError, match=param) as exc:
        fluid_path(rybko_stolyar(), {"1": 1.0}, **{param: value})
    assert exc.value.name == param and exc.value.value == value


def test_smallest_valid_counts_and_horizon_still_work():
    net = rybko_stolyar()
    p = fluid_path(net, {"4": 100.0}, max_phases=1, cycles=1)
    assert len(p.times_s) == 2 and p.times_s[1] == pytest.approx(12.5)
    p = fluid_path(net, {"4": 100.0}, horizon_s=1e-3)
    assert p.outcome == "horizon" and p.times_s[-1] == pytest.approx(1e-3)


# ---- 2. the initial state -----------------------------------------------------------------------

@pytest.mark.parametrize("initial", ["A.1", "1", b"1", 5.0, 3, {"1", "2"}, object()])
def test_initial_state_of_the_wrong_type_is_rejected(initial):
    with pytest.raises(ParameterError, match="initial") as exc:
        fluid_path(rybko_stolyar(), initial)
    assert exc.value.name == "initial" and "mapping" in exc.value.expected


def test_a_string_that_is_a_label_gets_the_mapping_as_hint():
    with pytest.raises(ParameterError, match=r"write \{'1': tokens\}"):
        fluid_path(rybko_stolyar(), "1")


@pytest.mark.parametrize("label", ["A.1", 1, "5", ("1",)])
def test_unknown_initial_label_is_named(label):
    with pytest.raises(ParameterError, match="buffer or hop label") as exc:
        fluid_path(rybko_stolyar(), {label: 1.0})
    assert exc.value.name == "initial" and exc.value.value == label
    assert "'1', '2', '3', '4'" in exc.value.hint  # the known labels are listed


@pytest.mark.parametrize("amount", [-1.0, -1e-300, math.nan, math.inf, -math.inf, "10", True, None, [1.0]])
def test_bad_initial_amount_names_the_label(amount):
    with pytest.raises(ParameterError) as exc:
        fluid_path(rybko_stolyar(), {"3": amount})
    assert exc.value.name == "initial['3']"
    assert exc.value.value is amount or (isinstance(amount, float) and math.isnan(amount))


@pytest.mark.parametrize("bad", [-2.0, math.nan, math.inf])
def test_bad_entry_of_an_initial_array_names_its_buffer(bad):
    with pytest.raises(ParameterError) as exc:
        fluid_path(rybko_stolyar(), np.array([1.0, bad, 0.0, 0.0]))
    assert exc.value.name == "initial['2']"


@pytest.mark.parametrize("initial", [[1.0, 2.0], np.ones((2, 2)), [["a"], 1, 2, 3], ["a", "b", "c", "d"]])
def test_initial_array_of_the_wrong_shape_or_content_is_rejected(initial):
    with pytest.raises(ParameterError, match="initial"):
        fluid_path(rybko_stolyar(), initial)


def test_accepted_initial_forms_give_the_same_path():
    net = rybko_stolyar()
    ref = fluid_path(net, {"1": 3.0, "4": 2.0}, max_phases=30)
    for form in ({"1": 3, "4": np.float32(2.0)}, MappingProxyType({"1": 3.0, "4": 2.0}), [3.0, 0, 0, 2.0],
                 (3.0, 0.0, 0.0, 2.0), np.array([3.0, 0.0, 0.0, 2.0])):
        p = fluid_path(net, form, max_phases=30)
        np.testing.assert_allclose(p.times_s, ref.times_s)
        np.testing.assert_allclose(p.levels, ref.levels)
    # empty state: a mapping with no entries, or zeros, is the same as None
    for empty in ({}, np.zeros(4)):
        assert fluid_path(net, empty).outcome == fluid_path(net, None).outcome


def test_hop_label_behind_a_router_spreads_over_its_engines(small):
    net = small["random"]((0.5, 0.5)).at_load(0.5)
    assert net.flow.n == 2 and "c.1" not in fluid_path(net).labels    # one buffer per engine: c.1@fast, c.1@slow
    p = fluid_path(net, {"c.1": 100.0}, max_phases=1)
    assert p.levels[0] == pytest.approx([50.0, 50.0])
    with pytest.raises(ParameterError) as exc:
        fluid_path(net, {"c.1": -1.0})
    assert exc.value.name == "initial['c.1']"


# ---- 3. FluidPath.at ----------------------------------------------------------------------------

@pytest.mark.parametrize("t", [-1.0, -1e-9, math.nan, math.inf, [0.5, -2.0]])
def test_at_rejects_negative_or_non_finite_times(t):
    p = fluid_path(rybko_stolyar(), {"4": 100.0}, cycles=1)
    with pytest.raises(ParameterError) as exc:
        p.at(t)
    assert exc.value.name == "t"


@pytest.mark.parametrize("stop", [{"max_phases": 2}, {"horizon_s": 5.0}, {"cycles": 1}])
def test_at_beyond_the_end_of_a_stopped_path_raises_naming_t_and_the_end(stop):
    p = fluid_path(rybko_stolyar(), {"4": 100.0}, **stop)
    assert p.outcome in ("horizon", "diverging")
    end = float(p.times_s[-1])
    assert p.at(end) == pytest.approx(p.levels[-1])        # the end itself is known
    with pytest.raises(ParameterError, match="within the path") as exc:
        p.at(end + 1.0)
    assert exc.value.name == "t" and exc.value.value == pytest.approx(end + 1.0)
    assert f"{end:.9g}" in str(exc.value) and p.outcome in str(exc.value)
    with pytest.raises(ParameterError):
        p.at([0.0, end * 2])                               # any element beyond the end


def test_at_beyond_a_drained_path_is_zero_for_ever():
    p = fluid_path(rybko_stolyar(priority="reversed"), {"1": 10.0, "3": 5.0})
    assert p.outcome == "drained"
    late = p.at([p.drain_time_s * 10, 1e9])
    assert late.shape == (2, 4) and np.all(late == 0.0)
    # and a path that starts empty below load 1 is drained from t = 0
    p0 = fluid_path(rybko_stolyar(priority="reversed"))
    assert p0.outcome == "drained" and np.all(p0.at(100.0) == 0.0)


def test_at_beyond_a_growing_path_continues_its_last_rates_exactly():
    net = _tandem()
    p = fluid_path(net, {"A.1": 10.0})
    assert p.outcome == "growing" and p.times_s[-1] < 50.0
    longer = fluid_path(net, {"A.1": 10.0}, horizon_s=50.0)
    assert p.at(50.0) == pytest.approx(longer.levels[-1], rel=1e-12)
    assert p.at([50.0, 0.5]) == pytest.approx(np.stack([longer.levels[-1], longer.at(0.5)]), rel=1e-12)


# ---- 4. degenerate networks in fluid_stability and friends -------------------------------------

def test_network_whose_only_class_leaves_at_once_is_a_topology_error_naming_it():
    net = Network(stations=[Station(name="E", engine=_engine())], classes=[_leaving_class("chat")])
    assert net.flow.n == 0
    for call in (lambda: fluid_stability(net), lambda: fluid_path(net), lambda: lyapunov_certificate(net),
                 lambda: FluidSystem(net.flow)):
        with pytest.raises(TopologyError, match="'chat'.*leaves at once"):
            call()


def test_a_flow_model_without_buffers_is_a_topology_error_whatever_built_it():
    # the fluid side does not rely on the description's checks (an all-empty route, say)
    one = RequestClass(name="chat", rate_per_s=1.0, route=[Hop(engine="E", prompt_tokens=8, output_tokens=8)])
    net = _without_buffers(Network(stations=[Station(name="E", engine=_engine())], classes=[one]))
    for call in (lambda: fluid_stability(net), lambda: fluid_path(net, {}), lambda: lyapunov_certificate(net)):
        with pytest.raises(TopologyError, match="class 'chat'"):
            call()


def test_a_class_leaving_at_once_beside_others_adds_no_fluid():
    e = _engine()
    one = RequestClass(name="B", rate_per_s=1.0, route=[Hop(engine="E", prompt_tokens=8, output_tokens=8)])
    mixed = Network(stations=[Station(name="E", engine=e)], classes=[_leaving_class("A"), one])
    alone = Network(stations=[Station(name="E", engine=e)], classes=[one])
    r, r0 = fluid_stability(mixed), fluid_stability(alone)
    assert r.status == r0.status == Status.STABLE and r.loads == pytest.approx(r0.loads)
    p, p0 = fluid_path(mixed, {"B.1": 10.0}), fluid_path(alone, {"B.1": 10.0})
    assert p.outcome == "drained" and p.drain_time_s == pytest.approx(p0.drain_time_s)


@pytest.mark.parametrize("kw", [{"tolerance": 1.0}, {"tolerance": -0.1}, {"tolerance": math.nan},
                                {"max_phases": 0}, {"max_lyapunov_buffers": -1}])
def test_fluid_stability_rejects_bad_settings(kw):
    name = next(iter(kw))
    with pytest.raises(ParameterError, match=name) as exc:
        fluid_stability(rybko_stolyar(), **kw)
    assert exc.value.name == name


def test_zero_lyapunov_buffers_skips_the_lp():
    net = rybko_stolyar(rate_per_s=0.8)
    assert fluid_stability(net).certificate == "lyapunov"
    r = fluid_stability(net, max_lyapunov_buffers=0)
    assert r.status == Status.UNKNOWN and "skipped" in r.reason


def test_fluid_path_checks_network_system_and_choice():
    net = rybko_stolyar()
    with pytest.raises(ParameterError, match="network"):
        fluid_path("rybko_stolyar", {"1": 1.0})
    with pytest.raises(ParameterError, match="system"):
        fluid_path(net, {"1": 1.0}, system=FluidSystem(rybko_stolyar(rate_per_s=0.5).flow))
    with pytest.raises(ParameterError, match="system"):
        fluid_path(net, {"1": 1.0}, system="matrices")
    # a system compiled from an equal network is accepted and gives the same path
    same = fluid_path(net, {"1": 1.0}, max_phases=20, system=FluidSystem(rybko_stolyar().flow))
    np.testing.assert_allclose(same.levels, fluid_path(net, {"1": 1.0}, max_phases=20).levels)
    for bad in ({(9, 0): 0}, {(0, 0): 0}, {0: 0}, [(0, 0)], {(0, 0): "4"}):
        with pytest.raises(ParameterError, match="choice"):
            fluid_path(net, {"1": 1.0}, choice=bad)


@pytest.mark.parametrize("which", ["engine", "workload"])
@pytest.mark.parametrize("bad", [None, "x", ()])
def test_backlog_slope_needs_one_engine_and_a_workload(which, bad):
    from fluidq.fluid import backlog_slope

    args = {"engine": _engine(),
            "workload": fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=1.0), prompt_tokens=10, output_tokens=10)}
    args[which] = bad
    with pytest.raises(ParameterError) as exc:
        backlog_slope(**args)
    assert exc.value.name == which


def test_several_classes_that_all_leave_at_once_are_all_named():
    net = Network(stations=[Station(name="E", engine=_engine())], classes=[_leaving_class("A"), _leaving_class("B")])
    assert net.flow.n == 0
    with pytest.raises(TopologyError, match="classes 'A', 'B'"):
        fluid_stability(net)


def test_inputs_record_the_initial_state_as_given():
    net = _tandem()                                     # E1 overloaded: the path from empty does not stay empty
    p = fluid_path(net, None, max_phases=5)
    assert p.levels[-1].sum() > 0 and p.inputs["initial"] == [0.0, 0.0]
    p = fluid_path(net, MappingProxyType({"A.1": 2.0}), max_phases=5)
    assert p.inputs["initial"] == {"A.1": 2.0} and type(p.inputs["initial"]) is dict
