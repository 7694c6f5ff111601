"""The fuzz suite's folder of hostile inputs (see fuzzcore.make_hostile_files)."""
import itertools
import os

import pytest

from fuzzcore import make_hostile_files

os.environ.setdefault("MPLBACKEND", "Agg")


@pytest.fixture(scope="session")
def _hostile_root(tmp_path_factory):
    return {"root": tmp_path_factory.mktemp("hostile"), "n": itertools.count(), "h": None}


@pytest.fixture
def hostile(_hostile_root):
    """The hostile folder, made again when an earlier test changed one of its inputs (that test failed
    for it; the next ones get intact inputs)."""
    s = _hostile_root
    if s["h"] is None or s["h"].changed():
        s["h"] = make_hostile_files(s["root"] / f"h{next(s['n'])}")
    return s["h"]


@pytest.fixture(scope="session", autouse=True)
def _no_litter_at_the_root():
    """`--plot=/` is a hostile output path the suite draws; a fluidq that takes it writes `/.png` (as root).
    Files of that kind that were not there before the session are removed after it."""
    names = ["/.png", "/.svg", "/.pdf", "/-", "/fluidq-report", "/fluidq-validation"]
    before = {n for n in names if os.path.lexists(n)}
    yield
    for n in names:
        if n not in before and os.path.isfile(n) and not os.path.islink(n):
            try:
                os.remove(n)
            except OSError:
                pass


@pytest.fixture(scope="session", autouse=True)
def _kernels_compiled():
    """Compile (or load from numba's cache) the three compiled loops before any timed call: in a fresh
    environment the first simulation compiles them once (tens of CPU-seconds for the network loop, with a
    note on stderr), and the per-call bound of the fuzz is about answers, not that one-off cost."""
    import numpy as np

    import fluidq
    from fluidq.engine import VLLM
    from fluidq.network import Hop, Network, RequestClass, Station, simulate_network

    eng = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01, a=0.02, b0=16), b_max=32)
    work = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=2.0), prompt_tokens=8, output_tokens=4)
    fluidq.simulate(eng, work, "sarathi", horizon_s=5.0, rng=np.random.default_rng(0))
    fluidq.simulate(eng.with_(kv_capacity_tokens=64, memory=VLLM), work, "sarathi", horizon_s=5.0,
                    rng=np.random.default_rng(0))
    net = Network(stations=[Station(name="E", engine=eng)],
                  classes=[RequestClass(name="c", rate_per_s=2.0,
                                        route=[Hop(engine="E", prompt_tokens=8, output_tokens=4)])])
    simulate_network(net, horizon_s=5.0, rng=0)
