"""``_kernel_unsupported`` names a station's size limit (which warns) only where nothing else excludes the network.

Before (h-fixa, finding 3), it returned the limit at the first oversized station before checking the later
stations' policies, so ``simulate_network(method="auto")`` said a :class:`~fluidq.kernel.KernelLimitWarning` for a
network the compiled loop does not model anyway.  The other exclusion here: a batch time that cannot be tabulated in
one vectorised call (until 2026-12-07 a subclass of a built-in scheduler with a rule of its own, which h-netwin put
on the loop, then a KV station with a composition batch time, asked in Python on the loop since that evening).
"""
import dataclasses
import warnings

import numpy as np
import pytest

from fluidq import Engine, Staircase
from fluidq.kernel import KernelLimitWarning
from fluidq.kernel.clock import KERNEL_TABLE_MAX
from fluidq.network import Hop, Network, RequestClass, Station, simulate_network
from fluidq.sim.network import _LIMIT_PREFIX, _kernel_unsupported


@dataclasses.dataclass(frozen=True)
class _OneAtATime(Staircase):
    """A staircase that answers one batch at a time (an array raises): the loop cannot tabulate it in one call."""

    def __call__(self, tokens, kv_tokens=None):
        if np.ndim(tokens):
            raise TypeError("one batch at a time")
        return super().__call__(tokens, kv_tokens)


def _net(big_first, own):
    """A station over the loop's size limit and a station ``own``: with ``own``, a batch time that cannot be tabulated
    in one call (a case the loop leaves to the Python path), else a plain Sarathi station."""
    big = Engine(batch_time=Staircase(c=0.01, a=0.02, b0=16), b_max=KERNEL_TABLE_MAX + 1)
    small = Engine(batch_time=Staircase(c=0.01, a=0.02, b0=16), b_max=256)
    if own:
        small = Engine(batch_time=_OneAtATime(c=0.01, a=0.02, b0=16), b_max=256)
    st = [Station(name="big", engine=big, policy="sarathi"), Station(name="own", engine=small, policy="sarathi")]
    if not big_first:
        st = st[::-1]
    return Network(stations=st, classes=[RequestClass(name="c", rate_per_s=4.0, route=[
        Hop(engine="big", prompt_tokens=40, output_tokens=20), Hop(engine="own", prompt_tokens=40, output_tokens=5)])])


@pytest.mark.parametrize("big_first", [True, False])
def test_another_exclusion_is_named_before_the_size_limit(big_first):
    why = _kernel_unsupported(_net(big_first, own=True), False)
    assert why == "station 'own''s batch time cannot be tabulated in one call up to b_max"
    only_limit = _kernel_unsupported(_net(big_first, own=False), False)
    assert only_limit is not None and only_limit.startswith(_LIMIT_PREFIX) and "'big'" in only_limit


def test_no_size_limit_warning_where_the_network_is_excluded_for_another_reason():
    with warnings.catch_warnings(record=True) as ws:
        warnings.simplefilter("always")
        r = simulate_network(_net(True, own=True), horizon_s=5.0, rng=1)
    assert not [x for x in ws if issubclass(x.category, KernelLimitWarning)], [str(x.message) for x in ws]
    assert r.completed["c"] > 0
