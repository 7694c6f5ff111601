"""The kernel review's findings (branch h-revkern, validation/tools/revkern/repro_*.py), each fixed on h-fixk.

1. ``check_batches=False`` and a user batch over ``b_max``: EngineRun (``method="generic"``, and a network station's
   Python clock where its table ends) raises the select loop's PolicyError, not a bare IndexError.
2. A policy that writes its requests' fields with the check off: the select loop (no KV cache) judges "idle with
   work" from its arrays and raises the idle error, never ending silently with work left.
3. A network station's view: ``view.requests`` a tuple on every method (the Python clock handed a list).
4. A non-finite arrival time in a workload mapping is named (``workload['arrival_s'][i]``), not the run's size.
5. ``max_batches`` with runs of identical batches: documented (the run-skipping paths may pass it by less than a run).
"""
from __future__ import annotations

import pytest

import fluidq
from fluidq.errors import PolicyError
from fluidq.network.model import Hop, RequestClass, Station
from fluidq.policies import Batch

ROWS = {"arrival_s": [0.0, 0.1, 0.2], "prompt_tokens": [5, 7, 3], "output_tokens": [3, 2, 4]}


class Greedy:
    """Every remaining prompt at once and every decoder: over a small ``b_max``."""

    name = "greedy"

    def select(self, v):
        pre = tuple((r.rid, r.prompt_tokens - r.prefilled) for r in v.requests if r.prefilled < r.prompt_tokens)
        dec = tuple(r.rid for r in v.requests if r.prefilled >= r.prompt_tokens and r.decoded < r.output_tokens)
        return Batch(prefill=pre, decode=dec)


def _engine(b_max, **kw):
    return fluidq.Engine(batch_time=fluidq.Staircase(c=0.01, a=0.03, b0=8), b_max=b_max, **kw)


# ---- finding 1: a batch over b_max with the check off -----------------------------------------------------------

@pytest.mark.parametrize("kw", [{}, {"kv_capacity_tokens": 64},
                                {"batch_time": fluidq.ContextAware(base=fluidq.Staircase(c=0.01, a=0.03, b0=8),
                                                                   kv_s_per_token=1e-5)}],
                         ids=["no_cache", "kv_cache", "context_aware"])
def test_over_b_max_check_off_same_policy_error_on_both_paths(kw):
    bt = kw.pop("batch_time", fluidq.Staircase(c=0.01, a=0.03, b0=8))
    e = fluidq.Engine(batch_time=bt, b_max=4, **kw)
    msgs = {}
    for m in ("generic", "auto"):
        with pytest.raises(PolicyError) as ei:
            fluidq.simulate(e, ROWS, Greedy(), n_requests=3, method=m, check_batches=False)
        msgs[m] = str(ei.value)
    assert msgs["generic"] == msgs["auto"]
    assert "(6d) batch has 5 tokens > b_max=4" in msgs["generic"]


def test_over_b_max_check_off_network_kv_station_python_clock_names_the_station():
    """A KV station's Python clock charges ``tau_b[b]`` from the single-engine table (ends at ``b_max``): past it,
    the PolicyError naming the station (the run stops there), no bare IndexError."""
    e = _engine(4, kv_capacity_tokens=64)
    net = fluidq.Network(stations=(Station(name="a", engine=e, policy=Greedy()),),
                         classes=(RequestClass(name="c", route=(Hop(engine="a", prompt_tokens=5, output_tokens=3),),
                                               rate_per_s=4.0),))
    with pytest.raises(PolicyError, match=r"station 'a'.*\(6d\) batch has \d+ tokens > b_max=4"):
        fluidq.simulate_network(net, horizon_s=5.0, rng=1, method="python", check_batches=False)


# ---- finding 2: a policy that writes its requests' fields, the check off ----------------------------------------

class MutOut(Greedy):
    """Writes ``output_tokens = 1`` (forbidden: the fields are the engine's), then schedules by what it wrote."""

    name = "mutout"

    def select(self, v):
        for r in v.requests:
            r.output_tokens = 1
        return super().select(v)


def test_select_loop_no_cache_never_ends_silently_with_work_left():
    """The select loop runs on its arrays (the written ``output_tokens`` is not the engine's): the policy stops
    scheduling requests the arrays say have output left, which is the idle error, not n_finished=0 with NaN."""
    e = _engine(16)
    with pytest.raises(PolicyError, match=r"scheduled nothing .* 3 requests wait with work left \(ids \[0, 1, 2\]\)"):
        fluidq.simulate(e, ROWS, MutOut(), n_requests=3, method="auto", check_batches=False)


def test_idle_error_from_the_arrays_unchanged_for_an_honest_policy():
    """An honest policy that leaves a request out with nothing more to arrive: the same idle error on both paths."""

    class Skip0(Greedy):
        name = "skip0"

        def select(self, v):
            b = super().select(v)
            return Batch(prefill=tuple(p for p in b.prefill if p[0] != 0), decode=tuple(d for d in b.decode if d))

    e = _engine(16)
    msgs = []
    for m in ("generic", "auto"):
        with pytest.raises(PolicyError) as ei:
            fluidq.simulate(e, ROWS, Skip0(), n_requests=3, method=m, check_batches=False)
        msgs.append(str(ei.value))
    assert msgs[0] == msgs[1]
    assert "ids [0]" in msgs[0]


# ---- finding 3: a network station's Python clock handed the policy a list -----------------------------------------

class Pop:
    """Pops the oldest request from its view's sequence where it can, then schedules as Sarathi."""

    name = "pop"

    def __init__(self):
        self.kinds = set()

    def select(self, v):
        from fluidq.policies import Sarathi

        self.kinds.add(type(v.requests).__name__)
        if hasattr(v.requests, "pop"):
            v.requests.pop(0)
        return Sarathi().select(v)


def test_network_view_requests_a_tuple_on_every_method():
    eng = _engine(16)
    out = {}
    for m in ("python", "auto"):
        p = Pop()
        net = fluidq.Network(stations=(Station(name="a", engine=eng, policy=p),),
                             classes=(RequestClass(name="c", route=(Hop(engine="a", prompt_tokens=5, output_tokens=3),),
                                                   rate_per_s=4.0),))
        r = fluidq.simulate_network(net, horizon_s=10.0, rng=1, method=m)
        assert p.kinds == {"tuple"}, (m, p.kinds)
        out[m] = (r.completed, r.batches)
    assert out["python"] == out["auto"]


# ---- finding 4: an infinite arrival time blamed n_requests ------------------------------------------------------

@pytest.mark.parametrize("bad", [float("inf"), float("nan"), -float("inf")])
@pytest.mark.parametrize("kw", [{"n_requests": 2}, {"horizon_s": 5.0}])
def test_non_finite_arrival_time_named_not_the_run_size(bad, kw):
    from fluidq.errors import ParameterError

    rows = {"arrival_s": [0.0, bad], "prompt_tokens": [3, 3], "output_tokens": [3, 3]}
    with pytest.raises(ParameterError, match=r"workload\['arrival_s'\]\[1\]=-?(inf|nan): expected finite numbers of "
                                             r"seconds"):
        fluidq.simulate(_engine(16), rows, "sarathi", **kw)


# ---- finding 5: max_batches and runs of identical batches (documented, not cut) ---------------------------------

def test_max_batches_as_documented():
    """simulate_network's docstring: "generic" stops at exactly max_batches; the run-skipping paths stop at the
    first run end that reaches it (at least max_batches, less than one run more), the same count on both."""
    e = _engine(16)
    net = fluidq.Network(stations=(Station(name="a", engine=e), Station(name="b", engine=e)),
                         classes=(RequestClass(name="c", route=(Hop(engine="a", prompt_tokens=5, output_tokens=3),
                                                                Hop(engine="b", prompt_tokens=5, output_tokens=30)),
                                               rate_per_s=2.0),))
    over = 0
    for mb in (1, 2, 3, 10, 50):
        got = {m: fluidq.simulate_network(net, horizon_s=10.0, rng=1, method=m, max_batches=mb).batches
               for m in ("generic", "python", "kernel")}
        assert got["generic"] == mb
        assert got["python"] == got["kernel"] >= mb
        over += got["python"] - mb
    assert over > 0  # (the overshoot the docstring describes happens here: max_batches=2 gives 4)
