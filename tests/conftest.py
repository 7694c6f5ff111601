"""Shared fixtures: small networks for the network and fluid tests (short hops, so simulations take a fraction of a second)."""
from __future__ import annotations

import pytest
from hypothesis import settings

# Property tests draw the same examples in every run (CI must not fail by the luck of a draw;
# statistical tolerances come from seeded replications inside the tests).
settings.register_profile("fluidq", derandomize=True, deadline=None)
settings.load_profile("fluidq")

from fluidq import Affine, Engine, Staircase
from fluidq.network import Fork, Hop, Join, Network, RequestClass, Router, Station


def small_engine(name, b_max=256):
    return Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=128), b_max=b_max, name=name)


def jsq_pair(count="requests"):
    return Network(stations=[Station(name="E1", engine=small_engine("E1")), Station(name="E2", engine=small_engine("E2"))],
                   routers=[Router(name="pool", engines=("E1", "E2"), policy="jsq", count=count)],
                   classes=[RequestClass(name="c", rate_per_s=1.0,
                                         route=[Hop(engine="pool", prompt_tokens=96, output_tokens=8)])])


def random_unequal(probabilities):
    fast = Engine(batch_time=Affine(c=0.05, a=0.0), b_max=256)
    slow = Engine(batch_time=Affine(c=0.10, a=0.0), b_max=256)
    return Network(stations=[Station(name="fast", engine=fast), Station(name="slow", engine=slow)],
                   routers=[Router(name="split", engines=("fast", "slow"), policy="random",
                                   probabilities=probabilities)],
                   classes=[RequestClass(name="c", rate_per_s=1.0,
                                         route=[Hop(engine="split", prompt_tokens=96, output_tokens=8)])])


def plan_code_review():
    return Network(stations=[Station(name="plan", engine=small_engine("plan")),
                             Station(name="code", engine=small_engine("code")),
                             Station(name="review", engine=small_engine("review"))],
                   classes=[RequestClass(name="t", rate_per_s=1.0, route=[
                       Hop(engine="plan", prompt_tokens=64, output_tokens=8, name="plan"),
                       Hop(engine="code", prompt_tokens=160, output_tokens=16, name="code"),
                       Hop(engine="review", prompt_tokens=96, output_tokens=4, name="review")])],
                   claim="dag", name="plan-code-review")


def fork_join():
    return Network(stations=[Station(name="orch", engine=small_engine("orch")),
                             Station(name="search", engine=small_engine("search")),
                             Station(name="code", engine=small_engine("code"))],
                   classes=[RequestClass(name="agent", rate_per_s=1.0, route=[
                       Hop(engine="orch", prompt_tokens=48, output_tokens=4, name="orchestrate"),
                       Fork(name="f", branches=[[Hop(engine="search", prompt_tokens=96, output_tokens=8, name="search")],
                                                [Hop(engine="code", prompt_tokens=160, output_tokens=8, name="code")]]),
                       Join(name="f")])],
                   claim="dag", name="fork-join")


@pytest.fixture
def small():
    """Builders of the small test networks."""
    return {"jsq": jsq_pair, "random": random_unequal, "dag": plan_code_review, "fork_join": fork_join}


@pytest.fixture
def uncompiled_agrees(tmp_path):
    """``check(script, jit)``: run ``script`` (a test module whose ``__main__`` prints ``compiled=...`` and saves
    its named arrays to the path it is given) in a child process with ``NUMBA_DISABLE_JIT=1``, and assert that
    every array equals ``jit`` (the same arrays computed compiled in this process): same names, dtypes and
    values.  Skips where nothing is compiled to compare."""
    import os
    import subprocess
    import sys
    from pathlib import Path

    import numpy as np

    from fluidq.kernel import compiled

    if not compiled():
        pytest.skip("numba is not installed (or NUMBA_DISABLE_JIT is set): nothing compiled to compare")
    root = Path(__file__).resolve().parents[1]

    def check(script, jit: dict) -> None:
        out = tmp_path / "py.npz"
        env = {**os.environ, "NUMBA_DISABLE_JIT": "1",
               "PYTHONPATH": os.pathsep.join(p for p in (str(root), os.environ.get("PYTHONPATH")) if p)}
        p = subprocess.run([sys.executable, str(script), str(out)], env=env, capture_output=True, text=True,
                           timeout=600, cwd=root)
        assert p.returncode == 0, p.stderr
        assert "compiled=False" in p.stdout
        py = dict(np.load(out))
        assert sorted(py) == sorted(jit)
        for k in jit:
            assert py[k].dtype == jit[k].dtype, k
            np.testing.assert_array_equal(jit[k], py[k], err_msg=k)

    return check


# tests/models/hf_configs.py (published model configs, and the minimal ones the CLI and validation tests write) is
# imported by name from tests/cli and tests/validation too: pytest puts only a test file's own folder on sys.path.
# Appended, so a folder's own helper module of the same name would win (there is none).
import sys as _sys
from pathlib import Path as _Path

# tests/stability/flow_profile.py (the synthetic operator-profile folder) and saturation.py (served rate under overload)
# likewise, from tests/cli and tests/engine.
for _helpers in ("models", "stability"):
    if str(_Path(__file__).resolve().parent / _helpers) not in _sys.path:
        _sys.path.append(str(_Path(__file__).resolve().parent / _helpers))
