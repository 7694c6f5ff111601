"""Findings of the differential fuzzing of KV stations asked in Python on the compiled network loop (h-revnetkv,
2026-12-07): the compiled loop (:mod:`fluidq.kernel.network` with :mod:`fluidq.kernel.network_kv`) against the
Python clock (``method="python"``), bit for bit."""
from __future__ import annotations

import hashlib
import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from test_network_kernel_exactness import assert_identical  # noqa: E402
from test_network_select_kernel import loop_only  # noqa: E402,F401

from fluidq import Affine, ContextAware, Geometric, PiecewiseLinear, Staircase  # noqa: E402
from fluidq.engine import VLLM as VLLM_MEMORY, Engine, Memory  # noqa: E402
from fluidq.network import Hop, Network, RequestClass, Router, Station, simulate_network  # noqa: E402
from fluidq.network.model import Choice, Fork, Join  # noqa: E402
from fluidq.policies import VLLM, Batch, Sarathi  # noqa: E402
from fluidq.policies.latency import LAS, SJF, SRPT  # noqa: E402
from fluidq.policies.unified import UniBoost  # noqa: E402


def _preempting_station():
    """One KV station (400 tokens, recomputation) under ``VLLM(order=SJF())``, asked in Python, loaded so that it
    preempts from its 30th batch on."""
    e = Engine(batch_time=Staircase(c=0.006207038453847259, a=0.043433558709993804, b0=64), b_max=256,
               kv_capacity_tokens=400, memory=Memory())
    return Network(stations=[Station(name="s1", engine=e, policy=VLLM(order=SJF()))],
                   classes=[RequestClass(name="c", rate_per_s=30.0, route=[
                       Hop(engine="s1", prompt_tokens=4, output_tokens=200)])])


@pytest.mark.parametrize("max_batches", [29, 30, 31, 45, 62])
def test_the_grid_after_a_max_batches_stop_shows_the_last_memory_pass(max_batches, loop_only):
    """Finding 1: the loop stopped at ``max_batches`` recorded the grid points past its last event BEFORE the asks of
    that event were made; a KV station's memory pass there (a preempted request's tokens back in its work, by
    recomputation) was missing from them (``station_tokens`` 8385 against the Python clock's 8412 with
    ``max_batches=30``: 27 tokens, the preempted request's).  The Python clock starts that batch, then records."""
    net = _preempting_station()
    kw = dict(horizon_s=20.0, max_batches=max_batches, record_hops=True)
    a = simulate_network(net, rng=14, method="python", **kw)
    loop_only()
    b = simulate_network(net, rng=14, method="kernel", **kw)
    assert a.batches == max_batches
    assert_identical(a, b)


def test_the_stop_case_preempts_at_its_last_batch():
    """The case above binds: the stop at 30 batches falls on a preemption (more tokens at the end than the 29-batch
    stop's, and preemptions counted)."""
    net = _preempting_station()
    r29 = simulate_network(net, rng=14, method="python", horizon_s=20.0, max_batches=29)
    r30 = simulate_network(net, rng=14, method="python", horizon_s=20.0, max_batches=30)
    assert r29.preemptions["s1"] == 0 < r30.preemptions["s1"]
    assert r30.station_tokens["s1"][-1] > r29.station_tokens["s1"][-1]


# --- seeded cases of the review's generator: what the other tests do not check ---------------------------------
# (each user policy's number of calls and the views it was shown, equal on both paths; seeded-random and counting
# policies that keep state between calls; batches over k_max within b_max with the check off at KV stations; class
# priorities and random recording grids at KV stations asked in Python, on tandems, choices and fork-joins)

def _fill(reqs, v, take_dec=lambda r: True, chunk=None):
    left, kmax, pre, dec = v.b_max, v.k_max or 10**9, [], []
    for r in reqs:
        if len(pre) + len(dec) >= kmax or left <= 0:
            break
        if r.prefilled < r.prompt_tokens:
            n = min(left, r.prompt_tokens - r.prefilled, chunk or left)
            pre.append((r.rid, n))
            left -= n
        elif r.decoded < r.output_tokens and take_dec(r):
            dec.append(r.rid)
            left -= 1
    return Batch(prefill=pre, decode=dec)


class Seen:
    """Wraps a policy: counts its calls and digests every view it is shown."""

    def __init__(self, inner):
        self.inner, self.name, self.calls, self.h = inner, "seen-" + inner.name, 0, hashlib.sha1()

    def select(self, v):
        self.calls += 1
        self.h.update(repr((v.now_s, v.b_max, v.k_max, v.kv_free_tokens, tuple(
            (r.prompt_tokens, r.output_tokens, r.prefilled, r.decoded) for r in v.requests))).encode())
        return self.inner.select(v)


class Shuffled:
    """Residents in a seeded random order, random chunks, a decoder left out now and then (state: its generator)."""

    name = "shuffled"

    def __init__(self, seed):
        self.rng = random.Random(seed)

    def select(self, v):
        reqs = list(v.requests)
        self.rng.shuffle(reqs)
        left, kmax, pre, dec = v.b_max, v.k_max or 10**9, [], []
        for r in reqs:
            if len(pre) + len(dec) >= kmax or left <= 0:
                break
            if r.prefilled < r.prompt_tokens:
                n = self.rng.randint(1, min(left, r.prompt_tokens - r.prefilled))
                pre.append((r.rid, n))
                left -= n
            elif r.decoded < r.output_tokens and self.rng.random() < 0.9:
                dec.append(r.rid)
                left -= 1
        return Batch(prefill=pre, decode=dec)


class Newest:
    name = "newest"

    def select(self, v):
        return _fill(list(reversed(v.requests)), v)


class EveryOtherDecode:
    """Decoders every other call only, 3-token chunks (state: its count of calls)."""

    name = "every-other-decode"

    def __init__(self):
        self.n = 0

    def select(self, v):
        self.n += 1
        return _fill(v.requests, v, take_dec=lambda r: self.n % 2 == 0, chunk=3)


class PrefillsFirst:
    name = "prefills-first"

    def select(self, v):
        p = [r for r in v.requests if r.prefilled < r.prompt_tokens]
        return _fill(p or v.requests, v)


class OverK:
    """Every decoder and 8-token chunks of every prompt, within b_max but not k_max (the check off only)."""

    name = "over-k"

    def select(self, v):
        b = v.b_max
        dec = [r.rid for r in v.requests if r.prefilled >= r.prompt_tokens and r.decoded < r.output_tokens][:b]
        b -= len(dec)
        pre = []
        for r in v.requests:
            if r.prefilled < r.prompt_tokens and b > 0:
                m = min(b, r.prompt_tokens - r.prefilled, 8)
                pre.append((r.rid, m))
                b -= m
        return Batch(prefill=tuple(pre), decode=tuple(dec))


def _bt(R):
    k = R.randrange(4)
    bt = (Staircase(c=R.uniform(0.001, 0.02), a=R.uniform(0.005, 0.05), b0=R.choice([1, 4, 16, 64])),
          Affine(c=R.uniform(0.0001, 0.002), a=R.uniform(0.005, 0.05)),
          PiecewiseLinear(c=R.uniform(0.001, 0.02), a=R.uniform(0.005, 0.05), b0=R.choice([2, 8, 32])),
          Affine(c=1 / 1024, a=1 / 128))[k]
    return ContextAware(base=bt, kv_s_per_token=R.choice([1e-5, 2**-14])) if R.random() < 0.3 else bt


def _asked(R, seed, i, check_off):
    opts = [lambda: Newest(), lambda: Shuffled(seed * 7 + i), lambda: EveryOtherDecode(), lambda: PrefillsFirst(),
            lambda: Sarathi(order=SJF()), lambda: Sarathi(order=SRPT()), lambda: Sarathi(order=LAS()),
            lambda: VLLM(order=SJF()), lambda: UniBoost()] + [lambda: OverK()] * (2 * check_off)
    return Seen(R.choice(opts)())


def _memory(R):
    m = R.randrange(5)
    if m < 3:
        return (Memory(), VLLM_MEMORY, Memory(preemption="swap"))[m]
    return Memory(kind="blocks", block_size=R.choice([1, 4, 16]), prefix_caching=R.random() < 0.4,
                  reservation=R.choice(["whole_prompt", "incremental"]),
                  victim=R.choice(["last_in_order", "most_recent"]))


def review_case(seed):
    """A random network (1-4 stations, KV stations asked in Python mixed with built-in FCFS ones, a random or JSQ
    router by requests, tandems, choices, fork-joins, class priorities) and its options."""
    R = random.Random(seed)
    check_off = R.random() < 0.35
    ns = R.randint(1, 4)
    names = [f"s{i}" for i in range(ns)]
    kvs = {n for n in names if R.random() < 0.6} or {R.choice(names)}
    asked = {n for n in sorted(kvs) if R.random() < 0.75} or {sorted(kvs)[0]}  # (sorted: a set's order follows PYTHONHASHSEED)
    eng, pol = {}, {}
    for i, n in enumerate(names):
        b_max, k_max = R.choice([4, 16, 32, 64, 128, 256]), R.choice([None, None, 2, 5, 16])
        if n in kvs:
            mem = _memory(R)
            kv = R.choice([40, 64, 100, 200, 400, 1000, 3000])
            kv = max(kv, 4 * mem.block_size)
            eng[n] = Engine(batch_time=_bt(R), b_max=b_max, k_max=k_max, kv_capacity_tokens=kv, memory=mem,
                            prefill_emits_token=R.random() < 0.35)
        else:
            eng[n] = Engine(batch_time=_bt(R), b_max=b_max, k_max=k_max, prefill_emits_token=R.random() < 0.3)
        pol[n] = _asked(R, seed, i, check_off) if n in asked else R.choice(["sarathi", "orca", "vllm",
                                                                                  "fastertransformer"])
    routers, targets = [], list(names)
    if ns >= 2 and R.random() < 0.5:
        routers.append(Router(name="r", engines=tuple(R.sample(names, R.randint(2, ns))),
                              policy=R.choice(["jsq", "random"]), count="requests"))
        targets.append("r")
    hops = {}

    def length(zero_ok=False):
        k = R.randrange(5)
        return (R.randint(1, 120), Geometric(mean_tokens=R.uniform(2, 40)), 0 if zero_ok else R.randint(1, 10),
                R.randint(20, 300), R.randint(1, 10))[k]

    def hop(t):
        name = f"h{sum(map(len, hops.values())) + 1}"
        hops.setdefault(t, []).append(name)
        return Hop(engine=t, prompt_tokens=length(), output_tokens=length(True), name=name)

    nf = [0]  # forks so far (their names)

    def route(depth):
        if depth == 0 and R.random() < 0.25:  # a tandem through every station
            return [hop(n) for n in R.sample(names, ns)]
        steps = []
        for _ in range(R.randint(1, 3)):
            x = R.random()
            if x < 0.55 or depth > 1:
                steps.append(hop(R.choice(targets)))
            elif x < 0.75:
                p = R.choice([0.3, 0.5, 0.9])
                steps.append(Choice(options=((p, tuple(route(depth + 1))),
                                             (1 - p, tuple(route(depth + 1)) if R.random() < 0.5 else ()))))
            else:
                nf[0] += 1
                fork = f"f{nf[0]}"
                steps += [Fork(name=fork, branches=tuple(tuple(route(depth + 1)) for _ in range(R.randint(1, 3)))),
                          Join(name=fork)]
                if R.random() < 0.5:
                    steps.append(hop(R.choice(targets)))
        return steps

    classes = [RequestClass(name=f"c{c}", route=tuple(route(0)),
                            rate_per_s=R.uniform(0.5, 20)) for c in range(R.randint(1, 3))]
    stations = []
    for n in names:
        hs = hops.get(n, []) + [h for r in routers if n in r.engines for h in hops.get("r", [])]
        pr = tuple(R.sample(hs, R.randint(1, len(hs)))) if hs and R.random() < 0.35 else ()
        stations.append(Station(name=n, engine=eng[n], policy=pol[n], priority=pr))
    net = Network(stations=stations, classes=classes, routers=routers)
    hz = R.choice([2.0, 5.0, 20.0, 40.0])
    kw = dict(horizon_s=hz, record_hops=R.random() < 0.7, swap_s_per_token=R.choice([0.0, 1e-5, 2**-12]),
              max_batches=R.choice([None] * 6 + [7, 300, R.randint(20, 400)]))
    if check_off:
        kw["check_batches"] = False
    if R.random() < 0.3:
        kw["record_dt_s"] = hz / R.choice([10, 137, 1000])
    return net, kw


def _calls(net):
    return {s.name: (s.policy.calls, s.policy.h.hexdigest()) for s in net.stations if isinstance(s.policy, Seen)}


# (since 2026-12-07 evening the generator iterates ``sorted(kvs)``: before, which stations were asked followed
# PYTHONHASHSEED, so a seed's case changed between processes -- seed 81 once asked 19 times, below the check's 20.
# The descriptions below are of the cases as first picked; the asserts -- preemption at an asked KV station, more
# than 20 asks -- hold for every seed on the sorted generator, whatever the hash seed.)
# picked from seeds 0-169 for their variety (every one preempts at a KV station asked in Python): 20, 43 and 81 stop
# at max_batches (43 under the seeded-random policy with the check off, fork-joins and blocked hops; 81 swapping, at
# 4 stations); 21 UNIBOOST with refusals, priorities, the first token from the prefill, the check off; 23 and 38 the
# every-other-call decoder (38 with priorities, 4 stations, a JSQ router); 39 over k_max with the check off; 42 paged
# blocks under the every-other-call decoder; 50 prefix caching under the seeded-random policy; 62 prefills first with
# priorities; 94 swapping under last-in-first-out
REVIEW_SEEDS = [20, 21, 23, 38, 39, 42, 43, 50, 62, 81, 94]


@pytest.mark.parametrize("seed", REVIEW_SEEDS)
def test_review_cases_python_and_loop_identical(seed, loop_only):
    net, kw = review_case(seed)
    a = simulate_network(net, rng=seed, method="python", **kw)
    calls_a = _calls(net)
    net, kw = review_case(seed)
    loop_only()
    b = simulate_network(net, rng=seed, method="kernel", **kw)
    assert_identical(a, b)
    assert _calls(net) == calls_a
    assert a.batches > 20 and sum(n for n, _ in calls_a.values()) > 20  # (a policy asked in Python did the work)
    assert sum(a.preemptions.values()) > 0
