"""A user policy's bad batch gets the same PolicyError on every path (h-fixpol, 2026-12-07).

Paths: ``fluidq.simulate`` with ``method="auto"`` (the compiled select() loop, fluidq/kernel/select.py) and
``"generic"`` (EngineRun), and ``fluidq.simulate_network`` ``"auto"`` (the compiled network loop asking the policy in
Python, fluidq/kernel/network_select.py, where the station has no KV cache; the Python clock where it has one) and
``"python"`` (fluidq/kernel/clock.py).  The findings: a request's prefill named twice in one batch (indep #1), a
policy that never schedules anything (revbad2 H2), bad batches in a network (M1), the check off (M2), a policy's own
exception and junk in ``blocked`` (L3).  ``method="auto"`` mirrors EngineRun since h-selmirror (2026-12-07):
select.py calls step.py's functions, so every path is held here, none xfailed.
"""
from __future__ import annotations

import re

import pytest

import fluidq
from fluidq import Engine, Poisson, Staircase, Workload
from fluidq.engine import VLLM, Memory
from fluidq.errors import PolicyError
from fluidq.network import Hop, Network, RequestClass, Station, simulate_network
from fluidq.policies import Batch

BT = Staircase(c=0.01128, a=0.03547, b0=128)
ENGINES = {
    "nokv": Engine(batch_time=BT, b_max=64, k_max=8),
    "tokens": Engine(batch_time=BT, b_max=64, k_max=8, kv_capacity_tokens=2000, memory=Memory()),
    "paged": Engine(batch_time=BT, b_max=64, k_max=8, kv_capacity_tokens=2000, memory=VLLM.with_(block_size=4)),
    "prefix": Engine(batch_time=BT, b_max=64, k_max=8, kv_capacity_tokens=2000,
                     memory=VLLM.with_(block_size=4, prefix_caching=True)),
}
PATHS = ("auto", "generic", "net-auto", "net-python")
HORIZON = 20.0


def _fcfs(view, conv=lambda x: x):
    """Decoders, then prompts whole within the budget and k_max, in arrival order."""
    budget, k, pre, dec = view.b_max, view.k_max or 1 << 30, [], []
    for r in view.requests:
        if len(pre) + len(dec) >= k or budget <= 0:
            break
        if r.in_prefill:
            n = min(r.prefill_left, budget)
            pre.append((conv(r.rid), conv(n)))
            budget -= n
        elif r.decode_left > 0:
            dec.append(conv(r.rid))
            budget -= 1
    return pre, dec


class Pol:
    chunked = True

    def __init__(self, name, fn):
        self.name, self.fn = name, fn

    def select(self, view):
        return self.fn(view)


def _split(view):
    """indep #1: each prompt chunk as two entries of one request, (rid, m // 2), (rid, m - m // 2)."""
    pre, dec = _fcfs(view)
    out = []
    for rid, m in pre:
        out += [(rid, m // 2), (rid, m - m // 2)] if m >= 2 else [(rid, m)]
    return Batch(prefill=tuple(out), decode=tuple(dec))


def _boom(view):
    raise ValueError("boom from the user's policy")


def _shorten(view):
    """revbad2 H3: writes every request's output length to 1, then schedules as _fcfs does."""
    for r in view.requests:
        r.output_tokens = 1
    return Batch(*_fcfs(view))


def _skip_prompts(view):
    """revbad2 H3: marks every prompt prefilled, then schedules as _fcfs does (decodes for them)."""
    for r in view.requests:
        if r.in_prefill:
            r.prefilled = r.prompt_tokens
    return Batch(*_fcfs(view))


CASES = {
    "shorten": _shorten,
    "skip-prompts": _skip_prompts,
    "split": _split,
    "empty": lambda v: Batch(),
    "float": lambda v: Batch(*_fcfs(v, float)),
    "str": lambda v: Batch(*_fcfs(v, str)),
    "not-resident": lambda v: Batch(prefill=((10 ** 6, 1),)),
    "decode-prefilling": lambda v: Batch(decode=tuple(r.rid for r in v.requests)),
    "blocked-junk": lambda v: Batch(*_fcfs(v), blocked=(None, "x")),
    "boom": _boom,
}


def _run(path, case, engine, check):
    pol = Pol(case, CASES[case])
    kw = {} if check is None else {"check_batches": check}
    if path in ("auto", "generic"):
        w = Workload(arrival=Poisson(rate_per_s=2.0), prompt_tokens=20, output_tokens=5)
        return fluidq.simulate(ENGINES[engine], w, policy=pol, horizon_s=HORIZON, rng=1, method=path, **kw)
    net = Network(stations=[Station(name="E", engine=ENGINES[engine], policy=pol)],
                  classes=[RequestClass(name="A", rate_per_s=2.0,
                                        route=[Hop(engine="E", prompt_tokens=20, output_tokens=5)])])
    return simulate_network(net, horizon_s=HORIZON, rng=1, method=path[4:], **kw)


def _err(path, case, engine, check, exc=PolicyError):
    with pytest.raises(exc) as e:
        _run(path, case, engine, check)
    msg = str(e.value)
    if path.startswith("net-"):
        assert msg.startswith(f"station 'E': policy {case!r} at t=") or exc is not PolicyError, msg
        msg = msg[len("station 'E': "):]
    return msg, e.value


def _params(engines):
    """Every path on each engine named."""
    return [pytest.param(p, eng, id=f"{p}-{eng}") for eng in engines for p in PATHS]


# -- 1. a request's prefill named twice: refused by batch_faults, with the check on or off ------------------------
@pytest.mark.parametrize("check", [None, False])
@pytest.mark.parametrize("path,engine", _params(ENGINES))
def test_a_prefill_named_twice_is_refused(path, engine, check):
    msg, _ = _err(path, "split", engine, check)
    assert re.fullmatch(r"policy 'split' at t=0\.536515 s: request \d+ appears twice in the prefill part .*", msg)


# -- 2. a policy that never schedules anything: PolicyError with a KV cache and at a network's station too ---------
@pytest.mark.parametrize("path,engine", _params(("nokv", "tokens", "paged")))
def test_a_policy_that_never_schedules_is_refused(path, engine):
    msg, _ = _err(path, "empty", engine, None)
    assert "scheduled nothing (an empty batch) while 30 requests wait with work left" in msg, msg
    # the time of the last ask (the last arrival, in both: a one-station network's arrivals are the engine's)
    assert msg.startswith("policy 'empty' at t=19.1541 s"), msg
    assert ("nothing more reached the station before the horizon" if path.startswith("net-") else
            "nothing more arrives") in msg


def test_an_idle_station_that_is_asked_again_is_not_refused():
    """A policy that waits for two requests before it schedules is idle with work between arrivals: no error."""
    def pairs(v):
        return Batch(*_fcfs(v)) if len(v.requests) >= 2 or any(not r.in_prefill for r in v.requests) else Batch()

    CASES["pairs"] = pairs
    try:
        for path in ("generic", "net-auto", "net-python"):
            res = _run(path, "pairs", "nokv", None)
            done = res.n_finished if hasattr(res, "n_finished") else sum(res.completed.values())
            assert done >= 20, path
    finally:
        del CASES["pairs"]


# -- 4. with the check off, what no engine can run is still a PolicyError (only the budgets are skipped) -----------
@pytest.mark.parametrize("case,says", [("float", "request ids and token counts are whole numbers"),
                                       ("str", "request ids and token counts are whole numbers"),
                                       ("not-resident", "which is not resident"),
                                       ("decode-prefilling", "(6a)")])
@pytest.mark.parametrize("path,engine", _params(("nokv", "paged")))
def test_the_check_off_still_refuses_what_cannot_run(path, engine, case, says):
    if case in ("not-resident", "decode-prefilling") and path == "auto":
        pytest.skip("select.py refuses these already (its arrays hold only residents)")
    on, _ = _err(path, case, engine, None)
    off, _ = _err(path, case, engine, False)
    assert off == on and says in off, (on, off)


# -- 6. a policy's own exception keeps its type, with a note; junk in ``blocked`` is refused ------------------------
@pytest.mark.parametrize("path", ["auto", "generic", "net-auto", "net-python"])
def test_a_policys_exception_keeps_its_type_with_a_note(path):
    _, exc = _err(path, "boom", "nokv", None, ValueError)
    assert str(exc) == "boom from the user's policy"
    notes = getattr(exc, "__notes__", [])
    assert len(notes) == 1 and "policy 'boom' at t=0.536515 s" in notes[0], notes
    where = {"auto": "compiled select() loop", "generic": "EngineRun", "net-auto": "compiled network loop", "net-python": "Python network clock"}
    assert where[path] in notes[0], notes


@pytest.mark.parametrize("path,engine", _params(("nokv", "tokens")))
def test_junk_in_blocked_is_refused(path, engine):
    msg, _ = _err(path, "blocked-junk", engine, None)
    assert msg == "policy 'blocked-junk' at t=0.536515 s: blocked entry None is not the id of a resident request"


# -- 5. a policy that writes the requests' fields: with the check, PolicyError (compared for the batch's requests) --
@pytest.mark.parametrize("case,field,change", [("shorten", "output_tokens", "5 -> 1"),
                                               ("skip-prompts", "prefilled", "0 -> 20")])
@pytest.mark.parametrize("path,engine", _params(("nokv", "tokens", "paged")))
def test_a_policy_writing_the_requests_is_refused_with_the_check(path, engine, case, field, change):
    msg, _ = _err(path, case, engine, None)
    assert re.fullmatch(rf"policy '{case}' at t=0\.536515 s: request \d+: the policy changed "
                        rf"RequestState\.{field} \({change}\); .*", msg), msg


# -- 7. the check off skips the budgets: a batch over k_max runs as given, on the select() loop as on EngineRun ------
def _over_kmax(view):
    """Every prompt whole (past k_max, within b_max) and every decoder."""
    pre = [(r.rid, r.prefill_left) for r in view.requests if r.in_prefill]
    dec = [r.rid for r in view.requests if not r.in_prefill and r.decode_left > 0]
    tot = sum(m for _, m in pre) + len(dec)
    while pre and tot > view.b_max:
        tot -= pre.pop()[1]
    return Batch(prefill=tuple(pre), decode=tuple(dec))


@pytest.mark.parametrize("engine", ["nokv", "tokens", "paged"])
def test_the_check_off_runs_a_batch_over_k_max_as_engine_run_does(engine):
    import numpy as np

    w = Workload(arrival=Poisson(rate_per_s=40.0), prompt_tokens=20, output_tokens=5)
    res = {m: fluidq.simulate(ENGINES[engine], w, policy=Pol("over", _over_kmax), horizon_s=HORIZON, rng=1,
                              method=m, check_batches=False, record_iterations=True) for m in ("auto", "generic")}
    a, g = res["auto"], res["generic"]
    assert a.method == "fast" and g.method == "generic"
    assert max(g.iterations["requests"]) > ENGINES[engine].k_max  # (the case runs over the budget)
    with pytest.raises(PolicyError, match=r"\(k_max\) batch has \d+ requests > k_max=8"):
        fluidq.simulate(ENGINES[engine], w, policy=Pol("over", _over_kmax), horizon_s=HORIZON, rng=1)
    for k in g.requests:
        np.testing.assert_array_equal(a.requests[k], g.requests[k], err_msg=k)
    for k in g.iterations:
        np.testing.assert_array_equal(a.iterations[k], g.iterations[k], err_msg=f"records {k}")
    for k in ("n_iterations", "tokens_served", "end_s", "examined", "n_finished", "preemptions", "peak_kv_tokens"):
        assert getattr(a, k) == getattr(g, k), k
