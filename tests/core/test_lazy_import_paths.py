"""The old paths that ``import fluidq`` no longer loads eagerly (issue 15: start-up) still work in a fresh process.

``fluidq.sim``, the simulation and fluid verdicts and ``fluidq.fluid.path`` are imported on first use; each
snippet below is the first thing a fresh interpreter does, so no earlier import can make it pass
(tests/core/test_moved_paths.py checks the same paths inside the test process).
"""
import os
import subprocess
import sys
from pathlib import Path

import pytest

import fluidq

ROOT = str(Path(fluidq.__file__).resolve().parents[1])

NET = ("import fluidq\nfrom fluidq.network import Network, RequestClass, Station, Hop\n"
       "e = fluidq.Engine(batch_time=fluidq.Affine(c=0.05, a=0.0), b_max=256)\n"
       "net = Network(stations=[Station(name='E', engine=e)], classes=[RequestClass(\n"
       "    name='A', rate_per_s=1.0, route=[Hop(engine='E', prompt_tokens=5, output_tokens=2)])])")

SNIPPETS = {
    "sim package has its verdict names": "import fluidq.sim as s, fluidq.stability.simulation as v\n"
                                         "assert s.replicate is v.replicate and s.find_threshold is v.find_threshold\n"
                                         "assert s.ReplicationResult is v.ReplicationResult and s.stability is v",
    "from fluidq.sim import replicate": "from fluidq.sim import ReplicationResult, ThresholdResult, replicate\n"
                                        "import fluidq.stability.simulation as v; assert replicate is v.replicate",
    "import fluidq.sim.stability": "import fluidq.sim.stability as a, fluidq.stability.simulation as b\n"
                                   "assert a is b and a.__spec__.name == 'fluidq.stability.simulation'",
    "verdicts first, then the sim package": "import fluidq.stability.simulation as v, fluidq.sim as s\n"
                                            "assert s.replicate is v.replicate",
    "fluidq.sim as an attribute": "import fluidq\nassert callable(fluidq.sim.simulate) and fluidq.sim.replicate\n"
                                  "assert fluidq.kernel is not None",
    "fluidq.stability.simulation attribute": "import fluidq\n"
                                             "assert fluidq.stability.simulation.replicate is fluidq.replicate",
    "fluidq.stability.fluid attribute": "import fluidq\n"
                                        "assert fluidq.stability.fluid.fluid_stability is fluidq.fluid_stability",
    "fluid verdict names": "from fluidq.fluid import FluidStabilityResult, backlog_slope, fluid_stability\n"
                           "import fluidq.stability.fluid as v; assert fluid_stability is v.fluid_stability\n"
                           "import fluidq.fluid as f; assert f.stability is v and f.lyapunov_certificate",
    "import fluidq.fluid.stability": "import fluidq.fluid.stability as a, fluidq.stability.fluid as b\n"
                                     "assert a is b and a.__spec__.name == 'fluidq.stability.fluid'",
    "fluid paths": "from fluidq.fluid import FluidPath, fluid_path\nimport fluidq.fluid.path as p\n"
                   "assert fluid_path is p.fluid_path and FluidPath is p.FluidPath",
    "network simulator names": "from fluidq.network import NetworkSimResult, simulate_network\n"
                               "import fluidq.sim.network as n\n"
                               "assert simulate_network is n.simulate_network is __import__('fluidq').simulate_network\n"
                               "import fluidq.network as net; assert net.sim is n",
    "import fluidq.network.sim": "import fluidq.network.sim as a, fluidq.sim.network as b\n"
                                 "assert a is b and a.__package__ == 'fluidq.sim'",
    "network verdict names": "from fluidq.network import NetworkStabilityResult, check_network_stability, load_network",
    "unknown names still raise": "import fluidq, fluidq.fluid, fluidq.network, fluidq.stability\n"
                                 "for m, n in ((fluidq, 'nope'), (fluidq.fluid, 'nope'), (fluidq.network, 'nope'),\n"
                                 "             (fluidq.stability, 'nope'), (fluidq, '_nope')):\n"
                                 "    try:\n        getattr(m, n)\n    except AttributeError as e:\n"
                                 "        assert n in str(e)\n    else:\n        raise SystemExit(f'{m} {n}')",
    "import fluidq.network.stability": "import fluidq.network.stability as a, fluidq.stability.network as b\n"
                                       "assert a is b and a.__spec__.name == 'fluidq.stability.network'\n"
                                       "import fluidq.network as n; assert n.stability is b",
    "fluidq.capacity.network attribute": "import fluidq\nassert fluidq.capacity.network.bottleneck\n"
                                         "assert fluidq.stability.network.check_network_stability",
    "a network's analyses, from its module alone": NET.replace("from fluidq.network import", "from fluidq.network.model import")
                                                   + "\nassert net.loads()['E'] > 0 and net.bottleneck[0] == 'E'",
    "a network's verdict": NET + "\nr = fluidq.check_stability(net)\nassert r.status.value == 'stable', r",
    "a network's flow model": NET + "\nassert net.flow.n >= 1 and net.stations[0].capacity_tokens_per_s > 0",
}


@pytest.mark.parametrize("name", sorted(SNIPPETS))
def test_old_path_in_a_fresh_process(name):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-W", "error::ImportWarning", "-c", SNIPPETS[name]], env=env, cwd=ROOT,
                         capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr[-2000:]


def test_import_fluidq_leaves_the_simulator_out():
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])}
    code = ("import sys, fluidq\nprint(sorted(m for m in sys.modules if m.startswith(('fluidq.sim', 'fluidq.kernel', "
            "'fluidq.fluid', 'fluidq.network', 'fluidq.stability.'))))")
    out = subprocess.run([sys.executable, "-c", code], env=env, cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
