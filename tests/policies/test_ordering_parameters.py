"""Every ordering checks its ``overtaking_bound`` (issue 13: NaN, -1, 1e308, a string or 2**64+1 were
accepted and a verdict was printed): None or an integer K >= 0."""
import math

import pytest

from fluidq.errors import FluidqError
from fluidq.policies.latency import LAS, PARS, SJF, SRPT, GammaAda, GammaBoost, MemGuard
from fluidq.policies.orderings import FCFS, MAX_OVERTAKES

ORDERINGS = [FCFS, SJF, SRPT, LAS, PARS, GammaBoost, GammaAda,
             lambda **kw: MemGuard(base=GammaBoost(), **kw)]


@pytest.mark.parametrize("make", ORDERINGS)
@pytest.mark.parametrize("bad", [math.nan, -1, 1e308, "x", 2**64 + 1, True, 2.5, MAX_OVERTAKES + 1])
def test_a_bad_overtaking_bound_is_refused_naming_it(make, bad):
    with pytest.raises(FluidqError, match="overtaking_bound"):
        make(overtaking_bound=bad)


@pytest.mark.parametrize("make", ORDERINGS)
def test_good_overtaking_bounds_are_kept(make):
    assert make(overtaking_bound=3).overtaking_bound == 3
    assert make(overtaking_bound=3.0).overtaking_bound == 3  # an integral float is an integer
    assert make(overtaking_bound=MAX_OVERTAKES).overtaking_bound == MAX_OVERTAKES
    assert make(overtaking_bound=None).overtaking_bound is None


def test_the_work_conservation_search_is_bounded_before_it_starts():
    # issue 13: check_work_conserving("sarathi", max_requests=2**64) searched forever
    from fluidq.policies.conservation import MAX_SEARCH_STATES, check_work_conserving

    for kw, name in (({"max_requests": 2**64}, "max_requests"), ({"max_requests": 12}, "max_requests"),
                     ({"b_max_values": [2**64]}, "b_max"), ({"b_max_values": 5}, "b_max_values"),
                     ({"b_max_values": range(1, 2000)}, "b_max_values")):
        with pytest.raises(FluidqError, match=name):
            check_work_conserving("sarathi", **kw)
    r = check_work_conserving("sarathi", max_requests=8)  # the largest that fits the bound still runs
    assert r.work_conserving and MAX_SEARCH_STATES > 0
