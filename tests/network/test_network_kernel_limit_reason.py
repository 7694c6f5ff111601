"""``_kernel_unsupported`` names a station's size limit (which warns) only where nothing else excludes the network.

Before (h-fixa, finding 3), it returned the limit at the first oversized station before checking the later
stations' policies, so ``simulate_network(method="auto")`` said a :class:`~fluidq.kernel.KernelLimitWarning` for a
network the compiled loop does not model anyway (a user scheduler further on).
"""
import warnings

import pytest

from fluidq import Engine, Staircase
from fluidq.kernel import KernelLimitWarning
from fluidq.kernel.clock import KERNEL_TABLE_MAX
from fluidq.network import Hop, Network, RequestClass, Station, simulate_network
from fluidq.policies import Scheduler
from fluidq.sim.network import _LIMIT_PREFIX, _kernel_unsupported


class Own(Scheduler):  # a rule of its own: its select() runs in Python
    def select(self, view):
        return super().select(view)


def _net(big_first, own):
    big = Engine(batch_time=Staircase(c=0.01, a=0.02, b0=16), b_max=KERNEL_TABLE_MAX + 1)
    small = Engine(batch_time=Staircase(c=0.01, a=0.02, b0=16), b_max=256)
    pol = Own(name="own", priority="decode", mixed=True, chunked=True) if own else "sarathi"
    st = [Station(name="big", engine=big, policy="sarathi"), Station(name="own", engine=small, policy=pol)]
    if not big_first:
        st = st[::-1]
    return Network(stations=st, classes=[RequestClass(name="c", rate_per_s=4.0, route=[
        Hop(engine="big", prompt_tokens=40, output_tokens=20), Hop(engine="own", prompt_tokens=40, output_tokens=5)])])


@pytest.mark.parametrize("big_first", [True, False])
def test_another_exclusion_is_named_before_the_size_limit(big_first):
    why = _kernel_unsupported(_net(big_first, own=True), False)
    assert why is not None and "'own' does not run a built-in scheduler" in why and not why.startswith(_LIMIT_PREFIX)
    only_limit = _kernel_unsupported(_net(big_first, own=False), False)
    assert only_limit is not None and only_limit.startswith(_LIMIT_PREFIX) and "'big'" in only_limit


def test_no_size_limit_warning_where_the_network_is_excluded_for_another_reason():
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        r = simulate_network(_net(True, own=True), horizon_s=5.0, rng=1)
    assert not [x for x in ws if issubclass(x.category, KernelLimitWarning)], [str(x.message) for x in ws]
    assert r.completed["c"] > 0
