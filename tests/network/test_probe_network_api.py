"""Bad input to the Python network description is a ParameterError naming it (found by the independent probe):
``RequestClass(rate_per_s=nan, arrival=Poisson(1))`` was accepted at rate 1 (NaN compared as "equal");
``Network.cycles(limit=-1)`` returned all cycles but the last (``out[:-1]``), ``limit=nan`` a TypeError;
``with_priorities("A")`` an AttributeError; ``Network.classical`` a KeyError for a hop without a mean time or a
class without a rate, and a bare ValueError for a route step that is not a (station, label) pair."""
import math

import pytest

import fluidq as fq
from fluidq.errors import ParameterError
from fluidq.network import Hop, Network, RequestClass, Station


def _net():
    e = fq.Engine(batch_time=fq.Affine(c=0.01, a=1e-4), b_max=128)
    st = [Station(name=n, engine=e) for n in ("A", "B")]
    cl = [RequestClass(name="X", rate_per_s=5.0, route=[Hop(engine="A", prompt_tokens=10, output_tokens=10),
                                                        Hop(engine="B", prompt_tokens=10, output_tokens=10),
                                                        Hop(engine="A", prompt_tokens=10, output_tokens=10)])]
    return Network(stations=st, classes=cl)


@pytest.mark.parametrize("rate", [math.nan, -1.0, math.inf])
def test_request_class_rate_beside_an_arrival_is_checked(rate):
    with pytest.raises(ParameterError, match="rate_per_s"):
        RequestClass(name="Y", rate_per_s=rate, arrival=fq.Poisson(rate_per_s=1.0),
                     route=[Hop(engine="A", prompt_tokens=1, output_tokens=1)])
    ok = RequestClass(name="Y", rate_per_s=1.0, arrival=fq.Poisson(rate_per_s=1.0),
                      route=[Hop(engine="A", prompt_tokens=1, output_tokens=1)])
    assert ok.rate_per_s == 1.0


@pytest.mark.parametrize("limit", [-1, math.nan, 1.5])
def test_cycles_limit_is_checked(limit):
    with pytest.raises(ParameterError, match="limit"):
        _net().cycles(limit=limit)


def test_cycles_limits_that_work():
    net = _net()
    assert net.cycles() == [["A", "B"]]
    assert net.cycles(limit=0) == []
    assert net.cycles(limit=1) == [["A", "B"]]


def test_with_priorities_needs_a_dict():
    with pytest.raises(ParameterError, match="priorities"):
        _net().with_priorities("A")
    assert _net().with_priorities({"A": ["X.3"]}).station("A").priority == ("X.3",)


@pytest.mark.parametrize("kw, name", [
    ({"mean_times": {}}, "mean_times"),
    ({"rate_per_s": {}}, "rate_per_s"),
    ({"routes": {"A": ["S"]}}, "routes"),
    ({"routes": {}}, "routes"),
    ({"mean_times": [0.5]}, "mean_times"),
])
def test_classical_names_what_is_missing(kw, name):
    args = dict(stations=["S"], routes={"A": [("S", "a")]}, rate_per_s=1.0, mean_times={"a": 0.5})
    args.update(kw)
    with pytest.raises(ParameterError, match=name):
        Network.classical(**args)
    assert Network.classical(stations=["S"], routes={"A": [("S", "a")]}, rate_per_s={"A": 1.0},
                             mean_times={"a": 0.5}).loads()["S"] == pytest.approx(0.5)
