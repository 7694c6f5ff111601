"""The routing rules of a network are written once (:mod:`fluidq.kernel.routing`), and both event loops use them.

For each rule a mutant (a wrapper that changes what the rule decides) is put into ``fluidq.kernel.routing`` before
the two loops are imported, in a child process with ``NUMBA_DISABLE_JIT=1`` (the compiled loop then runs its own
source as Python, its rules the routing module's functions): the runs of the networks that exercise the rule must
change on the Python event clock (``method="python"``) *and* on the compiled loop (``method="kernel"``), and the
two loops must still agree with each other.  A second, hand-written copy of a rule in either loop would leave
that loop's runs unchanged and fail here.  The networks make each call site of a rule decide: a random router and
a choice (``pick``), JSQ by requests and by tokens (``jsq_takes``), a fork whose main line arrives at its join
last and one whose branch arrives last (``fork_waits``, ``join_arrive``: both the main line's and a branch's
arrival), hops refused by a KV cache inside a fork's branch and outside (``refused_leaves``).

Run as a script (``python test_routing_rules.py MUTANT OUT.npz``) it saves every run's outputs.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

HERE = Path(__file__).resolve()
ROOT = HERE.parents[2]

#: rule -> a mutant of it (built from the rule itself), and the networks whose runs it must change
MUTANTS = {
    # the mirror option: the last when the rule picks the first, ...
    "pick": (lambda rule: lambda x, probs, off, n: n - 1 - rule(x, probs, off, n), ("router", "choice")),
    # ties to the engine listed last
    "jsq_takes": (lambda rule: lambda j, key, best: rule(j, key, best) or key == best,
                  ("jsq-requests", "jsq-tokens")),
    # one arrival more than a fork sends: the join never completes
    "fork_waits": (lambda rule: lambda n: rule(n) + 1, ("main-line-last", "branch-last")),
    # no arrival is the last: the join never completes
    "join_arrive": (lambda rule: lambda waiting: (rule(waiting)[0], False), ("main-line-last", "branch-last")),
    # a refused request leaves the network inside a fork and stays counted outside
    "refused_leaves": (lambda rule: lambda in_fork: not rule(in_fork), ("refused-in-fork", "refused-outside")),
}
METHODS = ("python", "kernel")


def _networks():
    """name -> (network, horizon, keyword arguments of simulate_network)."""
    from fluidq import Affine, Engine
    from fluidq.network import Choice, Fork, Hop, Join, Network, RequestClass, Router, Station
    from fluidq.workload import Periodic

    fast = Engine(batch_time=Affine(c=0.02, a=1e-4), b_max=64)
    slow = Engine(batch_time=Affine(c=0.08, a=4e-4), b_max=64)
    three = [Station(name="F", engine=fast), Station(name="M", engine=fast), Station(name="S", engine=slow)]

    def routed(policy, count="requests", probabilities=None, load=0.6):
        return Network(stations=three, routers=[Router(name="R", engines=("F", "M", "S"), policy=policy,
                                                       count=count, probabilities=probabilities)],
                       classes=[RequestClass(name="c", rate_per_s=1.0, route=[
                           Hop(engine="R", prompt_tokens=40, output_tokens=6, name="c.1")])]).at_load(load)

    choice = Network(stations=[Station(name="F", engine=fast)], classes=[RequestClass(name="c", rate_per_s=1.0, route=[
        Hop(engine="F", prompt_tokens=20, output_tokens=2, name="c.1"),
        Choice(options=((0.2, [Hop(engine="F", prompt_tokens=80, output_tokens=12, name="c.long")]), (0.8, [])))])
    ]).at_load(0.5)
    # a fork whose main line (a long hop) arrives at the join after its branch (a short hop at another station),
    # and one whose main line joins at once (its branch arrives last); periodic arrivals far apart: no queueing
    tiny = Engine(batch_time=Affine(c=0.001, a=0.0), b_max=64)
    long = Engine(batch_time=Affine(c=0.5, a=0.0), b_max=64)
    two = [Station(name="B", engine=tiny), Station(name="L", engine=long)]
    main_last = Network(stations=two, classes=[RequestClass(name="c", arrival=Periodic(rate_per_s=0.05),
                                                            rate_per_s=0.05, route=[
        Fork(name="k", branches=([Hop(engine="B", prompt_tokens=4, output_tokens=1, name="c.b")],)),
        Hop(engine="L", prompt_tokens=4, output_tokens=4, name="c.main"), Join(name="k"),
        Hop(engine="B", prompt_tokens=4, output_tokens=1, name="c.after")])])
    branch_last = Network(stations=two, classes=[RequestClass(name="c", arrival=Periodic(rate_per_s=0.05),
                                                              rate_per_s=0.05, route=[
        Fork(name="k", branches=([Hop(engine="L", prompt_tokens=4, output_tokens=4, name="c.b")],)), Join(name="k"),
        Hop(engine="B", prompt_tokens=4, output_tokens=1, name="c.after")])])
    # a station whose KV cache (300 tokens) never fits the 400-token hops, inside a fork's branch and outside
    kv = Station(name="K", engine=Engine(batch_time=Affine(c=0.02, a=1e-4), b_max=64, kv_capacity_tokens=300))
    small = RequestClass(name="s", rate_per_s=1.0, route=[Hop(engine="K", prompt_tokens=30, output_tokens=3,
                                                              name="s.1")])
    in_fork = Network(stations=[kv, Station(name="F", engine=fast)], classes=[small, RequestClass(
        name="big", rate_per_s=0.5, route=[
            Fork(name="k", branches=([Hop(engine="K", prompt_tokens=400, output_tokens=2, name="big.k")],)),
            Hop(engine="F", prompt_tokens=10, output_tokens=2, name="big.f"), Join(name="k")])])
    outside = Network(stations=[kv], classes=[small, RequestClass(name="big", rate_per_s=0.5, route=[
        Hop(engine="K", prompt_tokens=400, output_tokens=2, name="big.k")])])
    return {"router": (routed("random", probabilities=(0.2, 0.3, 0.5)), 60.0, {}),
            "choice": (choice, 60.0, {}),
            "jsq-requests": (routed("jsq"), 60.0, {}),
            "jsq-tokens": (routed("jsq", count="tokens"), 60.0, {}),
            "main-line-last": (main_last, 400.0, {}),
            "branch-last": (branch_last, 400.0, {}),
            "refused-in-fork": (in_fork, 40.0, {}),
            "refused-outside": (outside, 40.0, {})}


def _runs() -> dict:
    """Every network run on both loops: its counts and recorded series, as named arrays."""
    from fluidq.network import simulate_network

    res = {}
    for name, (net, horizon, kw) in _networks().items():
        for method in METHODS:
            r = simulate_network(net, horizon_s=horizon, rng=3, method=method, **kw)
            key = f"{name}/{method}"
            res[f"{key}/counts"] = np.array([r.batches, r.events, *r.completed.values(), *r.rejected.values()])
            res[f"{key}/sojourn"] = np.array([np.nan if v is None else v for v in r.mean_sojourn_s.values()])
            for field in ("in_system", "station_requests"):
                for k, v in getattr(r, field).items():
                    res[f"{key}/{field}/{k}"] = np.asarray(v)
    return res


def _child(mutant: str, out: Path) -> None:
    import fluidq.kernel
    from fluidq.kernel import routing

    assert "fluidq.kernel.network" not in sys.modules and "fluidq.kernel.clock" not in sys.modules
    if mutant != "none":
        setattr(routing, mutant, MUTANTS[mutant][0](getattr(routing, mutant)))
    print(f"compiled={fluidq.kernel.compiled()}")
    np.savez(out, **_runs())


def _equal(a: dict, b: dict, prefix: str, other: str | None = None) -> bool:
    """Whether the arrays of ``a`` under ``prefix`` equal those of ``b`` under ``other`` (default ``prefix``)."""
    other = other or prefix
    ka = sorted(k[len(prefix):] for k in a if k.startswith(prefix))
    kb = sorted(k[len(other):] for k in b if k.startswith(other))
    return ka == kb and all(np.array_equal(a[prefix + k], b[other + k], equal_nan=True) for k in ka)


def _run_child(mutant: str, tmp: Path) -> dict:
    out = tmp / f"{mutant}.npz"
    env = {**os.environ, "NUMBA_DISABLE_JIT": "1",
           "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    p = subprocess.run([sys.executable, str(HERE), mutant, str(out)], env=env, capture_output=True, text=True,
                       timeout=600, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    assert "compiled=False" in p.stdout
    with np.load(out) as z:
        return {k: z[k] for k in z.files}


@pytest.fixture(scope="module")
def baseline(tmp_path_factory):
    return _run_child("none", tmp_path_factory.mktemp("routing"))


def test_both_loops_agree_and_every_network_routes(baseline):
    for name in _networks():
        assert _equal(baseline, baseline, f"{name}/python/", f"{name}/kernel/"), name
        assert baseline[f"{name}/python/counts"][0] > 20, name  # batches: each network did something
    # the refusals happen, and the joins complete
    assert baseline["refused-in-fork/python/counts"][-2] > 5 and baseline["refused-outside/python/counts"][-1] > 5
    assert all(baseline[f"{n}/python/counts"][2] > 10 for n in ("main-line-last", "branch-last"))


@pytest.mark.parametrize("rule", sorted(MUTANTS))
def test_a_mutated_rule_changes_both_loops(rule, baseline, tmp_path):
    mutated = _run_child(rule, tmp_path)
    for name in MUTANTS[rule][1]:
        for method in METHODS:
            assert not _equal(mutated, baseline, f"{name}/{method}/"), f"{rule}: {name} on {method} unchanged"
        assert _equal(mutated, mutated, f"{name}/python/", f"{name}/kernel/"), f"{rule}: the loops differ on {name}"


def test_the_loops_call_the_routing_functions():
    """The Python clock imports the routing module's functions; the compiled loop's are their jitted forms."""
    from fluidq.kernel import clock, network, routing

    for rule in MUTANTS:
        assert getattr(clock, rule) is getattr(routing, rule), rule
        jitted = getattr(network, f"_{rule}")
        assert getattr(jitted, "py_func", jitted) is getattr(routing, rule), rule


if __name__ == "__main__":
    _child(sys.argv[1], Path(sys.argv[2]))
