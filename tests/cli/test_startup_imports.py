"""``fluidq --help``, ``fluidq capacity`` and ``fluidq check`` import only what they use (issue 15: start-up).

Each command runs in a fresh Python process (the CLI's ``main``, as ``python -m fluidq`` runs it) that then
prints the modules it loaded; none of the heavy libraries nor fluidq's simulator, kernel and fluid paths may
be among them.  Not a timed test: ``benchmarks/bench_startup.py`` measures the start-up.
"""
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import fluidq

ROOT = str(Path(fluidq.__file__).resolve().parents[1])

#: loaded by none of the three commands (scipy.stats was loaded by `check` until 2026-12-03; the simulator, its
#: kernel, the fluid model and the network description by all three, through `import fluidq`, until issue 15's
#: start-up work of 2026-12-06)
NOT_LOADED = ("scipy", "sympy", "cvxpy", "matplotlib", "numba", "networkx", "pandas",
              "fluidq.sim", "fluidq.kernel", "fluidq.fluid", "fluidq.network", "fluidq.stability.simulation",
              "fluidq.stability.fluid", "fluidq.stability.network", "fluidq.capacity.network", "fluidq.plotting",
              "fluidq.validate", "fluidq.predict", "fluidq.report", "fluidq.sweep")

_RUN = """
import contextlib, io, json, sys
from fluidq.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        code = main(sys.argv[1:])
    except SystemExit as e:  # --help
        code = e.code
print(json.dumps({"code": code, "modules": sorted(sys.modules)}))
"""


def _modules_after(*argv) -> tuple[int, list]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([ROOT, os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, "-c", _RUN, *argv], env=env, cwd=ROOT, capture_output=True, text=True,
                         timeout=120)
    assert out.returncode == 0, out.stderr
    res = json.loads(out.stdout.strip().splitlines()[-1])
    return res["code"], res["modules"]


@pytest.mark.parametrize("argv", [("--help",), ("capacity",), ("check", "--load", "0.9"),
                                  ("check", "--load", "0.9", "--policy", "sarathi")])
def test_command_loads_only_what_it_uses(argv):
    code, modules = _modules_after(*argv)
    assert code in (0, None)
    loaded = [m for m in modules if any(m == h or m.startswith(h + ".") for h in NOT_LOADED)]
    assert loaded == [], f"fluidq {' '.join(argv)} loaded {loaded}"


def test_the_check_still_loads_what_it_uses():
    # the guard above must not pass because nothing ran: the verdicts' own modules are there
    _code, modules = _modules_after("check", "--load", "0.9")
    assert {"fluidq.stability", "fluidq.capacity", "fluidq.dtmc.threshold", "fluidq.policies"} <= set(modules)
