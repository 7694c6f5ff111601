"""KV stations with a composition batch time (vLLM's operator model) on the compiled network loop.

The loop's own KV rule tabulates ``t(b)`` and has no composition time, so since 2026-12-07 (evening) such a station is
asked in Python whatever its policy -- a built-in FCFS scheduler included (``fluidq.sim.network._composed_kv``) --
and :mod:`fluidq.kernel.network_kv` times each batch by the engine's ``composition_time`` on the prefill chunks
(with their prior context) and the decoders' KV held, as the Python clock's EngineRun does.  Before, a built-in
scheduler there kept the whole network on the Python clock.  Held here: the review generator's random networks
(tests/network/test_netkv_review.py: KV stations asked in Python mixed with built-in ones, routers, choices,
fork-joins, every memory model, check on and off, max_batches stops) with a composition time at every KV station
under a built-in scheduler and at some asked ones, run on the loop alone and compared field by field with
``method="python"``.  Each run builds its network afresh: the review's seeded policies keep their own random state.
"""
import dataclasses
import random
import sys
from pathlib import Path

import pytest

from fluidq import Staircase
from fluidq.batchtime.composition import Composition
from fluidq.batchtime.operators import FittedIterationModel
from fluidq.network import Network, Station, simulate_network
from fluidq.sim.network import _kernel_unsupported, _native

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_netkv_review import review_case  # noqa: E402
from test_network_kernel_exactness import assert_identical  # noqa: E402
from test_network_select_kernel import loop_only  # noqa: E402,F401  (the fixture: the Python path fails)


def composed_case(seed):
    """``review_case(seed)`` with a composition batch time at every KV station under a built-in FCFS scheduler and
    at about a third of the others; also how many such stations are built-in."""
    net, kw = review_case(seed)
    R = random.Random(seed + 999)
    stations, native = [], 0
    for st in net.stations:
        e = st.engine
        if e.kv_capacity_tokens is not None and (_native(st.policy) or R.random() < 0.3):
            native += _native(st.policy)
            comp = Composition(model=FittedIterationModel(Staircase(c=R.uniform(0.001, 0.02), a=R.uniform(0.005, 0.05),
                                                                    b0=R.choice([1, 4, 16]))))
            e = dataclasses.replace(e, batch_time=comp)
        stations.append(Station(name=st.name, engine=e, policy=st.policy, priority=st.priority))
    return Network(stations=stations, classes=net.classes, routers=net.routers), kw, native


#: seeds whose case has a composition time at a built-in scheduler's KV station (found by ``composed_case``)
SEEDS = [s for s in range(60) if composed_case(s)[2]][:10]


def _run(seed, method):
    net, kw, _ = composed_case(seed)
    try:
        return simulate_network(net, rng=seed, method=method, **kw)
    except Exception as e:  # noqa: BLE001 -- a policy's error must be the same error on both paths
        return e


def test_the_seeds_have_built_in_composition_stations_that_work():
    """Ten cases, and most of them run batches at such a station (some of the review's cases end at once: a
    horizon before any arrival, a policy's error)."""
    assert len(SEEDS) == 10
    busy = 0
    for seed in SEEDS:
        r = _run(seed, "python")
        busy += not isinstance(r, Exception) and r.batches > 20
    assert busy >= 5  # (2026-12-07: 5 of the 10 run more than 20 batches, up to 2,093; two end with none)


@pytest.mark.parametrize("seed", SEEDS)
def test_composition_kv_stations_python_and_loop_identical(seed, loop_only):
    net, _, _ = composed_case(seed)
    assert _kernel_unsupported(net, False) is None  # (on main before this change: "... a composition batch time")
    a = _run(seed, "python")
    loop_only()
    b = _run(seed, "auto")
    if isinstance(a, Exception) or isinstance(b, Exception):
        assert type(a) is type(b) and str(a) == str(b)
        return
    assert_identical(a, b)
