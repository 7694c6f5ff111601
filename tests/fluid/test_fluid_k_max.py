"""The fluid verdict of a station whose batch-size limit k_max binds.

The fluid model drains a station at ``b_max / t(b_max)``; under a binding ``k_max`` the station serves far
less (the k_max stability region along its mix, §6 of arXiv:2504.07347).  An independent check found
``fluid_stability`` calling a one-station network STABLE (load 0.128) at 1.5x its k_max capacity, where the
single-engine check says UNSTABLE and simulation grows at 615-709 tokens/s.
"""
import pytest

from fluidq import Affine, Engine, Poisson, Status, Workload, check_stability, fluid_stability, max_throughput
from fluidq.network import Hop, Network, RequestClass, Station, check_network_stability
from fluidq.errors import ParameterError

E = Engine(batch_time=Affine(c=0.01, a=1e-5), b_max=200, k_max=8)


def _one_station(factor, engine=E, prompt=35, output=41):
    w = Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=prompt, output_tokens=output)
    rate = factor * max_throughput(engine, w).tokens_per_s / (prompt + output)
    net = Network(stations=[Station(name="E", engine=engine)],
                  classes=[RequestClass(name="A", rate_per_s=rate,
                                        route=[Hop(engine="E", prompt_tokens=prompt, output_tokens=output)])])
    return net, Workload(arrival=Poisson(rate_per_s=rate), prompt_tokens=prompt, output_tokens=output)


def test_overload_at_the_k_max_capacity_is_unstable():
    net, w = _one_station(1.5)
    assert check_stability(E, w).status is Status.UNSTABLE
    r = fluid_stability(net)
    assert r.status is Status.UNSTABLE and r.certificate == "load"
    assert r.loads["E"] == pytest.approx(1.5, rel=1e-9)  # against the k_max capacity, not b_max/t(b_max)
    assert "k_max" in r.reason
    assert r.backlog_slope_tokens_per_s == pytest.approx(0.5 * max_throughput(E, w).tokens_per_s, rel=1e-9)
    n = check_network_stability(net)
    assert n.status is Status.UNSTABLE and n.decided_by == "load"


@pytest.mark.parametrize("factor", [0.3, 0.9])
def test_below_the_k_max_capacity_is_never_stable(factor):
    # under k_max a work-conserving scheduler can diverge inside the region (Theorem 2(b) fails): no proof
    net, _ = _one_station(factor)
    r = fluid_stability(net)
    assert r.status is Status.UNKNOWN and r.certificate is None
    assert "k_max=8" in r.reason
    assert r.loads["E"] == pytest.approx(factor, rel=1e-9)
    # the network verdict decides below the k_max floor (fluidq.network.caveats.k_max_floor, h-fixmsg): holding
    # 8 requests a work-conserving scheduler serves at least 8/t(8) = 794 tokens/s whatever the mix, and 0.3 of
    # the region offers 428; 0.9 offers 1,284, between the floor and the region's edge: no proof
    expected = Status.STABLE if factor == 0.3 else Status.UNKNOWN
    assert check_network_stability(net).status is expected


def test_two_mixes_at_a_k_max_station_are_unknown():
    # no one k_max capacity for two prompt lengths: the load stays at b_max/t(b_max), the verdict unknown
    net = Network(stations=[Station(name="E", engine=E)],
                  classes=[RequestClass(name="A", rate_per_s=5.0, route=[Hop(engine="E", prompt_tokens=35, output_tokens=41)]),
                           RequestClass(name="B", rate_per_s=5.0, route=[Hop(engine="E", prompt_tokens=300, output_tokens=4)])])
    r = fluid_stability(net)
    assert r.status is Status.UNKNOWN and "k_max=8" in r.reason
    assert r.loads["E"] == pytest.approx(net.loads()["E"], rel=1e-12)
    assert "k_max=8" in " ".join(net.flow.k_max_notes) and not net.flow.notes


def test_a_k_max_station_in_a_cycle_is_not_certified():
    # the priority-layer / Lyapunov / path arguments drain at b_max/t(b_max) too: the note stops them
    net = Network(stations=[Station(name="E", engine=E), Station(name="F", engine=E.with_(k_max=None))],
                  classes=[RequestClass(name="A", rate_per_s=2.0, route=[
                      Hop(engine="E", prompt_tokens=35, output_tokens=41), Hop(engine="F", prompt_tokens=20, output_tokens=5),
                      Hop(engine="E", prompt_tokens=35, output_tokens=41)])])
    assert fluid_stability(net).status is Status.UNKNOWN


def test_a_k_max_that_never_binds_changes_nothing():
    e = E.with_(k_max=E.b_max)
    net, _ = _one_station(0.5, engine=e)
    r = fluid_stability(net)
    assert r.status is Status.STABLE and r.certificate == "feedforward"
    assert not net.flow.notes and not net.flow.k_max_notes


def test_the_idealised_model_ignores_the_k_max_note_but_not_an_overload():
    net, _ = _one_station(0.3)
    assert fluid_stability(net, idealised=True).status is Status.STABLE  # what the network verdict withholds
    net, _ = _one_station(1.5)
    assert fluid_stability(net, idealised=True).status is Status.UNSTABLE
    with pytest.raises(ParameterError, match="idealised"):
        fluid_stability(net, idealised="yes")


def test_hops_with_one_mix_share_the_k_max_capacity_also_with_empirical_lengths():
    from fluidq import Empirical

    emp = Empirical(values=(30, 40, 50))
    net = Network(stations=[Station(name="E", engine=E)], classes=[
        RequestClass(name=c, rate_per_s=20.0, route=[Hop(engine="E", prompt_tokens=Empirical(values=(30, 40, 50)),
                                                         output_tokens=41)]) for c in "AB"])
    w = Workload(arrival=Poisson(rate_per_s=40.0), prompt_tokens=emp, output_tokens=41)
    r = fluid_stability(net)
    assert r.status is Status.UNSTABLE and check_stability(E, w).status is Status.UNSTABLE
    assert r.loads["E"] == pytest.approx(w.token_rate_per_s / max_throughput(E, w).tokens_per_s, rel=1e-9)


@pytest.mark.parametrize("factor", [0.9, 1.5])
def test_the_k_max_capacities_are_solved_once_and_carried_on_the_verdict(monkeypatch, factor):
    # check_network_stability reads them on the fluid verdict instead of solving the k_max region again
    import fluidq.stability.fluid as sf

    net, w = _one_station(factor)
    calls = []
    real = sf._k_max_capacities

    def counted(*a, **kw):
        calls.append(1)
        return real(*a, **kw)

    monkeypatch.setattr(sf, "_k_max_capacities", counted)
    r = fluid_stability(net)
    assert len(calls) == 1
    assert set(r.k_max_capacities) == {"E"}
    assert r.k_max_capacities["E"][0] == pytest.approx(max_throughput(E, w).tokens_per_s, rel=1e-12)
    calls.clear()
    n = check_network_stability(net)
    assert len(calls) == 1
    assert n.status is (Status.UNSTABLE if factor > 1 else Status.UNKNOWN)


def test_no_binding_k_max_carries_no_capacities():
    net, _ = _one_station(0.5, engine=Engine(batch_time=Affine(c=0.01, a=1e-5), b_max=200))
    assert fluid_stability(net).k_max_capacities == {}
