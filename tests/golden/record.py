"""Record the golden results (tests/golden/golden.json) that issue 14's one-engine-model move must keep.

    PYTHONPATH=. python tests/golden/record.py            # rewrite golden.json from this checkout
    PYTHONPATH=. python tests/golden/record.py --check    # compare, print the differences

Re-record ONLY when a change is meant to alter these numbers, and say so (which numbers, why) in
that commit's message; tests/golden/test_golden.py compares a fresh run against the file.

What is recorded (each case seeded, short horizons; integers exact, floats to 1e-9 relative):

* ``network``: ``simulate_network`` on the network-exactness shapes of
  tests/network/test_network_sim_exactness.py (both methods) and on every shipped case of
  fluidq/network/cases at its ``bottleneck_load``;
* ``single``: ``fluidq.simulate`` per built-in scheduler (sarathi, orca, vllm, vllm-chunked,
  fastertransformer), without and with a KV-cache capacity (both kernels where the fast one
  applies), plus ``k_max``, swap-preemption and fixed-count (no horizon) variants;
* ``validation``: the latency rows of ``fluidq.validate`` for the two LLMServingSim vLLM runs
  (``fluidq.simulate`` on the run's vLLM engine -- the "replay" keys -- and the fitted-profile
  ``fluidq.simulate`` error column with its counters).
"""
from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
GOLDEN = HERE / "golden.json"
REL = 1e-9
SIG = 15  # digits kept in the file (comparison is at REL)

VALIDATION_CASES = ("rtx4090-llama3.1-8b", "rtxpro6000-llama3.1-8b")


# ----------------------------------------------------------------------------------- summaries
def _f(x) -> float | None:
    if x is None:
        return None  # undefined (e.g. no request of a class completed)
    x = float(x)
    if math.isnan(x):
        return None  # JSON has no NaN; None means "NaN"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return float(f"{x:.{SIG}g}")


def _stats(a) -> dict:
    a = np.asarray(a, dtype=float)
    fin = a[np.isfinite(a)]
    return {"n": int(fin.size), "sum": _f(fin.sum()) if fin.size else 0.0,
            "min": _f(fin.min()) if fin.size else None, "max": _f(fin.max()) if fin.size else None}


def _net_summary(res, *, with_batches: bool) -> dict:
    out = {"completed": {k: int(v) for k, v in sorted(res.completed.items())},
           "mean_sojourn_s": {k: _f(v) for k, v in sorted(res.mean_sojourn_s.items())},
           "total_in_system": _stats(res.total_in_system),
           "final_in_system": {k: int(np.asarray(v)[-1]) for k, v in sorted(res.in_system.items())},
           "station_tokens_sum": {k: _f(np.asarray(v, dtype=float).sum()) for k, v in sorted(res.station_tokens.items())},
           "buffer_tokens_sum": {k: _f(np.asarray(v, dtype=float).sum()) for k, v in sorted(res.buffer_tokens.items())}}
    if with_batches:  # the event-skipping path may count batches differently at the horizon (documented)
        out["batches"] = int(res.batches)
    return out


def _sim_summary(res) -> dict:
    r = res.requests
    lat = res.latencies()
    return {"method": res.method, "n_requests": int(res.n_requests), "n_finished": int(res.n_finished),
            "n_iterations": int(res.n_iterations), "tokens_served": int(res.tokens_served),
            "preemptions": int(res.preemptions), "wasted_tokens": int(res.wasted_tokens),
            "swap_tokens": int(res.swap_tokens), "rejected": int(res.rejected),
            "peak_kv_tokens": int(res.peak_kv_tokens), "blocked": int(res.blocked),
            "end_s": _f(res.end_s), "busy_fraction": _f(res.busy_fraction),
            "mixed_batch_fraction": _f(res.mixed_batch_fraction),
            "first_scheduled_s": _stats(r["first_scheduled_s"]), "prefill_done_s": _stats(r["prefill_done_s"]),
            "first_token_s": _stats(r["first_token_s"]), "finish_s": _stats(r["finish_s"]),
            "ttft_s": _stats(lat["ttft_s"]), "ttlt_s": _stats(lat["ttlt_s"]), "tpot_s": _stats(lat["tpot_s"]),
            "backlog_tokens": _stats(res.backlog["tokens"])}


# ----------------------------------------------------------------------------------- cases
def network_cases() -> dict:
    from fluidq import Affine, Engine, Staircase
    from fluidq.network import Hop, Network, RequestClass, Router, Station
    from fluidq.network.examples import lu_kumar, rybko_stolyar
    from fluidq.network.sim import simulate_network
    from fluidq.network.toml import case_names, load_network
    from fluidq.workload import Geometric, Periodic, Poisson

    stair = Staircase(c=0.01128, a=0.03547, b0=128)

    def small(name, b_max=256):
        return Engine(batch_time=stair, b_max=b_max, name=name)

    def one_geometric():
        return Network(stations=[Station(name="E", engine=Engine(batch_time=stair, b_max=512))], classes=[
            RequestClass(name="c", rate_per_s=8.0, route=[Hop(engine="E", prompt_tokens=Geometric(mean_tokens=300),
                                                              output_tokens=Geometric(mean_tokens=40))])])

    def random_unequal():
        fast, slow = Engine(batch_time=Affine(c=0.05, a=0.0), b_max=256), Engine(batch_time=Affine(c=0.10, a=0.0), b_max=256)
        return Network(stations=[Station(name="fast", engine=fast), Station(name="slow", engine=slow)],
                       routers=[Router(name="split", engines=("fast", "slow"), policy="random", probabilities=(0.5, 0.5))],
                       classes=[RequestClass(name="c", rate_per_s=1.0, route=[Hop(engine="split", prompt_tokens=96, output_tokens=8)])])

    def jsq():
        return Network(stations=[Station(name="E1", engine=small("E1")), Station(name="E2", engine=small("E2"))],
                       routers=[Router(name="pool", engines=("E1", "E2"), policy="jsq", count="requests")],
                       classes=[RequestClass(name="c", rate_per_s=1.0, route=[Hop(engine="pool", prompt_tokens=96, output_tokens=8)])])

    def dag():
        return Network(stations=[Station(name=n, engine=small(n)) for n in ("plan", "code", "review")],
                       classes=[RequestClass(name="t", rate_per_s=1.0, route=[
                           Hop(engine="plan", prompt_tokens=64, output_tokens=8, name="plan"),
                           Hop(engine="code", prompt_tokens=160, output_tokens=16, name="code"),
                           Hop(engine="review", prompt_tokens=96, output_tokens=4, name="review")])],
                       claim="dag", name="plan-code-review")

    def tandem():
        e = Engine(batch_time=Affine(c=0.125, a=0.0), b_max=256)
        return Network(stations=[Station(name="E", engine=e), Station(name="F", engine=e)],
                       classes=[RequestClass(name="c", arrival=Periodic(rate_per_s=16.0), rate_per_s=16.0, route=[
                           Hop(engine="E", prompt_tokens=96, output_tokens=8),
                           Hop(engine="F", prompt_tokens=64, output_tokens=4)])])

    def one_engine(engine, arrival, prompt, output):
        return Network(stations=[Station(name="E", engine=engine)],
                       classes=[RequestClass(name="c", arrival=arrival, rate_per_s=arrival.rate_per_s,
                                             route=[Hop(engine="E", prompt_tokens=prompt, output_tokens=output)])])

    flat = Engine(batch_time=Affine(c=0.125, a=0.0), b_max=256)
    stair512 = Engine(batch_time=stair, b_max=512)
    shapes = {  # name: (network, horizon_s, seed) -- as in test_network_sim_exactness.py
        "one_geometric": (one_geometric(), 60.0, 11),
        "random": (random_unequal().at_load(0.9), 40.0, 11),
        "jsq_requests": (jsq().at_load(1.05), 40.0, 11),
        "dag": (dag().at_load(0.9), 40.0, 11),
        "rybko_stolyar": (rybko_stolyar(tokens_per_unit=10), 50.0, 11),
        "lu_kumar": (lu_kumar(tokens_per_unit=10), 50.0, 11),
        "tandem_coincident": (tandem(), 30.0, 1),
        "one_engine_periodic_exact_ties": (one_engine(flat, Periodic(rate_per_s=16.0), 96, 8), 60.0, 1),
        "one_engine_periodic": (one_engine(flat, Periodic(rate_per_s=20.0), 96, 8), 60.0, 1),
        "one_engine_poisson": (one_engine(flat, Poisson(rate_per_s=16.0), 96, 8), 60.0, 1),
        "one_engine_poisson_staircase": (one_engine(stair512, Poisson(rate_per_s=15.0), 100, 100), 60.0, 1),
    }
    out = {}
    for name, (net, h, seed) in shapes.items():
        for method in ("auto", "generic"):
            res = simulate_network(net, horizon_s=h, rng=seed, method=method)
            out[f"{name}/{method}"] = _net_summary(res, with_batches=method == "generic")
    for name in case_names():  # the shipped TOML cases at their bottleneck_load, auto only
        res = simulate_network(load_network(name), horizon_s=120.0, rng=3)
        out[f"case:{name}/auto"] = _net_summary(res, with_batches=False)
    return out


SCHEDULERS = ("sarathi", "orca", "vllm", "vllm-chunked", "fastertransformer")


def single_cases() -> dict:
    import fluidq
    from fluidq import Engine, Staircase, Workload
    from fluidq.workload import Geometric, Poisson

    stair = Staircase(c=0.01128, a=0.03547, b0=128)
    # ~0.9 of Theorem 2's capacity of the paper's fit with (200, 50)-token means; geometric lengths
    wl = Workload(arrival=Poisson(rate_per_s=7.0), prompt_tokens=Geometric(mean_tokens=200),
                  output_tokens=Geometric(mean_tokens=50))
    engines = {"nokv": Engine(batch_time=stair, b_max=512),
               "kv": Engine(batch_time=stair, b_max=512, kv_capacity_tokens=4000)}
    out = {}
    for pol in SCHEDULERS:
        for mem, eng in engines.items():
            out[f"{pol}/{mem}"] = _sim_summary(fluidq.simulate(eng, wl, pol, horizon_s=40.0, rng=5))
    kmax = Engine(batch_time=stair, b_max=512, k_max=8)
    for pol in ("sarathi", "vllm"):
        out[f"{pol}/kmax8"] = _sim_summary(fluidq.simulate(kmax, wl, pol, horizon_s=40.0, rng=5))
    out["sarathi/kv/swap"] = _sim_summary(fluidq.simulate(engines["kv"], wl, "sarathi", horizon_s=40.0, rng=5,
                                                          preemption="swap", swap_s_per_token=2e-6))
    for pol in SCHEDULERS:  # the generic select() path on the runs the event-skipping kernel takes
        out[f"{pol}/nokv/generic"] = _sim_summary(fluidq.simulate(engines["nokv"], wl, pol, horizon_s=40.0,
                                                                  rng=5, method="generic"))
    for mem, eng in engines.items():  # no horizon: a fixed number of arrivals, run until all finish
        out[f"sarathi/{mem}/n200"] = _sim_summary(fluidq.simulate(eng, wl, "sarathi", n_requests=200, rng=6))
    return out


def validation_cases() -> dict:
    import fluidq

    res = fluidq.validate(case=list(VALIDATION_CASES))
    out = {}
    for cr in res.cases:
        lat = cr.data["latency"]
        rows = {r.quantity: {"predicted": _f(r.predicted), "measured": _f(r.measured)}
                for r in cr.rows if r.unit == "ms" or "latency metrics" in r.quantity}
        out[cr.case.name] = {"replay": lat["replay"],
                             "replay_ms": {k: _f(v) for k, v in lat["fluidq"].items()},
                             "measured_ms": {k: _f(v) for k, v in lat["measured"].items()},
                             "simulate_error_pct": ({k: _f(v) for k, v in lat["fluidq_simulate_error_pct"].items()}
                                                    if lat["fluidq_simulate_error_pct"] else None),
                             "rows": rows}
    return out


def compute() -> dict:
    return {"network": network_cases(), "single": single_cases(), "validation": validation_cases()}


# ----------------------------------------------------------------------------------- compare
def diff(want, got, path="") -> list[str]:
    """Differences between two recorded trees: integers and strings exact, floats to REL."""
    if isinstance(want, dict) and isinstance(got, dict):
        out = []
        for k in sorted(set(want) | set(got)):
            if k not in got:
                out.append(f"{path}/{k}: missing in the new run")
            elif k not in want:
                out.append(f"{path}/{k}: new in the run (not recorded)")
            else:
                out += diff(want[k], got[k], f"{path}/{k}")
        return out
    if isinstance(want, float) and isinstance(got, (int, float)) and not isinstance(got, bool):
        ok = math.isclose(want, got, rel_tol=REL, abs_tol=1e-300)
        return [] if ok else [f"{path}: recorded {want!r}, now {got!r}"]
    if type(want) is not type(got) or want != got:
        return [f"{path}: recorded {want!r}, now {got!r}"]
    return []


def _commit() -> str:
    try:
        sha = subprocess.run(["git", "rev-parse", "HEAD"], cwd=HERE, capture_output=True, text=True,
                             check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--", "fluidq"], cwd=HERE.parents[1],
                               capture_output=True, text=True, check=True).stdout.strip()
        return sha + (" (with uncommitted changes under fluidq/)" if dirty else "")
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def _dump(header: dict, results: dict) -> str:
    """One line per case (readable diffs when a re-record changes some numbers)."""
    lines = ["{", ' "header": ' + json.dumps(header, indent=1).replace("\n", "\n ") + ",", ' "results": {']
    parts = list(results)
    for i, part in enumerate(parts):
        lines.append(f"  {json.dumps(part)}: {{")
        names = list(results[part])
        for j, name in enumerate(names):
            comma = "," if j < len(names) - 1 else ""
            lines.append(f"   {json.dumps(name)}: {json.dumps(results[part][name])}{comma}")
        lines.append("  }" + ("," if i < len(parts) - 1 else ""))
    lines += [" }", "}"]
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    got = compute()
    if "--check" in argv:
        want = json.loads(GOLDEN.read_text())["results"]
        d = diff(want, json.loads(json.dumps(got)))
        print("\n".join(d) if d else "golden results unchanged")
        return 1 if d else 0
    header = {
        "what": "golden results that issue 14's one-engine-model move must keep (tests/golden/test_golden.py)",
        "recorded_at_commit": _commit(),
        "how_to_re_record": "PYTHONPATH=. python tests/golden/record.py -- only when a change is meant to alter "
                            "these numbers; say which and why in that commit's message",
        "comparison": f"integers and strings exact, floats to {REL:g} relative; null = NaN",
    }
    GOLDEN.write_text(_dump(header, got))
    print(f"wrote {GOLDEN}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
