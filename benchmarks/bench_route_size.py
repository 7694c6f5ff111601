"""Benchmark: long network routes (issue 13) -- what tests/network/test_network_route_size.py used to time.

The unit tests keep the behaviour (verdicts, reasons, refusals before any simulation); the timings are here:

* building a route is linear in its hops: ``Network`` of 3,000 and of 30,000 hops (alternating two engines),
  the time ratio should be about 10 (duplicate checks by ``list.count`` made it quadratic: ratio ~100,
  30,000 hops about 20 s);
* a 2,000-hop route is judged within seconds: ``check_network_stability`` with and without station priorities,
  the same route from a TOML case file through ``fluidq network`` (target < 10 s each), and with
  ``simulate=True`` (target < 20 s);
* a horizon or replication count too large to simulate is refused at once (target < 2 s for both refusals).

Run: ``python benchmarks/bench_route_size.py`` (best of ``--repeats`` per figure; prints value, target and
the build-time ratio).  Recorded figures: ``benchmarks/README.md`` (long routes).
"""
from __future__ import annotations

import argparse
import contextlib
import io
import sys
import tempfile
import time
from pathlib import Path

from fluidq.errors import ParameterError
from fluidq.network import check_network_stability
from fluidq.network.examples import llm_rybko_stolyar
from fluidq.network.stability import MAX_REPLICATIONS

# the route of the unit tests, written once (tests/network/long_route.py): n hops alternating E1 / E2, each (10, 10)
# tokens, both engines at load 0.25; the same route as a 2,000-hop TOML case file
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "network"))
from long_route import long_route, long_route_case  # noqa: E402


def best(fn, repeats):
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return min(times)


def refusals():
    net = llm_rybko_stolyar()
    for kw in ({"horizon_s": 1e12}, {"replications": MAX_REPLICATIONS + 1}):
        try:
            check_network_stability(net, simulate=True, **kw)
        except ParameterError:
            pass
        else:  # pragma: no cover - the unit tests hold this
            raise SystemExit(f"not refused: {kw}")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3, help="best of this many per figure (default 3)")
    args = ap.parse_args(argv)
    from fluidq.cli import main as cli

    rows = []
    t3 = best(lambda: long_route(3_000), args.repeats)
    t30 = best(lambda: long_route(30_000), args.repeats)
    ratio = t30 / t3
    rows.append(("build 3,000 hops", t3, None))
    rows.append(("build 30,000 hops", t30, 8.0))
    for p in (False, True):
        rows.append((f"check 2,000 hops, priority={p}",
                     best(lambda p=p: check_network_stability(long_route(2000, priority=p)), args.repeats), 10.0))
    with tempfile.TemporaryDirectory() as d:
        case = long_route_case(Path(d), 2000)

        def run_cli():
            with contextlib.redirect_stdout(io.StringIO()):
                assert cli(["network", str(case)]) == 0

        rows.append(("fluidq network, 2,000-hop case file", best(run_cli, args.repeats), 10.0))
    rows.append(("check 2,000 hops, simulate=True", best(
        lambda: check_network_stability(long_route(2000), simulate=True, rng=1), 1), 20.0))
    rows.append(("refuse horizon 1e12 and replications too many", best(refusals, args.repeats), 2.0))
    print(f"{'measurement':48s} {'seconds':>9s} {'target':>8s}")
    for name, t, target in rows:
        verdict = "" if target is None else ("met" if t < target else "NOT met")
        print(f"{name:48s} {t:9.3f} {'' if target is None else f'< {target:g}':>8s} {verdict}")
    print(f"build time ratio 30,000 / 3,000 hops: {ratio:.1f} (linear ~10, quadratic ~100): "
          f"{'met' if ratio < 20 else 'NOT met'} (target < 20)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
