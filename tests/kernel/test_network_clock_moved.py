"""The Python network event clock moved from ``fluidq.sim.network`` to ``fluidq.kernel.clock`` (issue 14):
``simulate_network`` drives it (its Python path is ``run_clock`` plus the result), the old private names the
tests and the compiled path's set-up use are the moved objects, and the clock imports nothing above the
kernel layer (descriptions, errors, the kernel)."""
import ast
from pathlib import Path

import numpy as np

import fluidq.kernel.clock as clock
import fluidq.sim.network as sn
from fluidq import Engine, Staircase
from fluidq.network import Hop, Network, RequestClass, Station

OLD = ["_TABLE_MAX", "_batch_time_array", "_batch_time_table", "_fast_budget", "_initial_hops", "_windowable",
       "RID_BITS", "RID_MASK", "INF", "NAN", "_Task", "_StationState", "_JoinRec"]


def test_old_private_names_give_the_moved_objects():
    for name in OLD:
        assert getattr(sn, name) is getattr(clock, name), name
    assert sn.run_clock is clock.run_clock


def test_import_fluidq_leaves_the_python_clock_unloaded():
    # (issue 15's start-up: the clock is imported by a run that needs it, not by ``import fluidq``)
    import subprocess
    import sys

    code = "import sys, fluidq; print('fluidq.kernel.clock' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()
    assert out == "False"


def test_the_clock_imports_only_the_layers_below():
    allowed = ("fluidq.errors", "fluidq.policies", "fluidq.network", "fluidq.workload", "fluidq.kernel")
    tree = ast.parse(Path(clock.__file__).read_text())
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            target = "fluidq.kernel." + (node.module or "") if node.level == 1 else "fluidq." + (node.module or "")
            assert target.startswith(allowed), target
        elif isinstance(node, ast.ImportFrom | ast.Import):
            names = [node.module] if isinstance(node, ast.ImportFrom) else [a.name for a in node.names]
            assert all(not n.startswith("fluidq") or n.startswith(allowed) for n in names), names


def test_simulate_network_python_path_is_the_clock_run_plus_the_result():
    eng = Engine(batch_time=Staircase(c=0.01128, a=0.0003547, b0=128), b_max=256)
    net = Network(stations=[Station(name="A", engine=eng, policy="orca"),
                            Station(name="B", engine=eng.with_(kv_capacity_tokens=3000), policy="vllm")],
                  classes=[RequestClass(name="c", rate_per_s=4.0,
                                        route=[Hop(engine="A", prompt_tokens=100, output_tokens=30),
                                               Hop(engine="B", prompt_tokens=60, output_tokens=20)])])
    res = sn.simulate_network(net, horizon_s=20.0, rng=4, method="python", record_hops=True)
    from fluidq.sim.core import _tau_table

    out = clock.run_clock(net, 20.0, np.random.default_rng(np.random.SeedSequence(4)), None, 20.0 / 400, False,
                          None, "auto", 0.0, True, {1: _tau_table(net.stations[1].engine)})
    assert out["batches"] == res.batches > 100 and out["events"] == res.events
    assert out["completed"] == res.completed and out["mean_sojourn_s"] == res.mean_sojourn_s
    assert np.array_equal(out["times_s"], res.times_s)
    for key in ("in_system", "buffer_tokens", "station_tokens", "station_requests"):
        assert out[key].keys() == getattr(res, key).keys()
        for k, v in out[key].items():
            assert np.array_equal(v, getattr(res, key)[k]), (key, k)
    for k, v in out["hops"].items():
        assert np.array_equal(v, res.hops[k])
