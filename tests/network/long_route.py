"""The long network route of issue 13, written once: tests/network/test_network_route_size.py checks its verdicts
and benchmarks/bench_route_size.py times it (the bench puts this folder on sys.path, as benchmarks/fuzz_cli.py
does tests/fuzz).  A helper imported by name, not a test module."""
from __future__ import annotations

from pathlib import Path

from fluidq import Affine, Engine
from fluidq.network import Hop, Network, RequestClass, Station

#: both engines: one second per batch whatever its size, batches of up to 768 tokens
E = Engine(batch_time=Affine(c=1.0, a=0.0), b_max=768)


def rate_per_s(n):
    """The arrival rate that puts each engine at load 0.25: n / 2 hops of 20 tokens each per request, 768 tokens/s."""
    return 0.5 * 768 / (n * 20)


def long_route(n, *, priority=False):
    """n hops alternating E1 / E2, each (10, 10) tokens, both engines at load 0.25; ``priority``: each station
    serves its hops in route order."""
    hops = [Hop(engine="E1" if i % 2 == 0 else "E2", prompt_tokens=10, output_tokens=10, name=f"h{i}")
            for i in range(n)]
    pr = ({"E1": tuple(f"h{i}" for i in range(0, n, 2)), "E2": tuple(f"h{i}" for i in range(1, n, 2))}
          if priority else {})
    return Network(stations=[Station(name="E1", engine=E, priority=pr.get("E1", ())),
                             Station(name="E2", engine=E, priority=pr.get("E2", ()))],
                   classes=[RequestClass(name="A", rate_per_s=rate_per_s(n), route=hops)])


def long_route_case(folder: Path, n=2000) -> Path:
    """The same route (unnamed hops, no priority) as a TOML case file for ``fluidq network``, written to
    ``folder/long.toml``."""
    lines = ['name = "long"']
    for e in ("E1", "E2"):
        lines += [f"[engines.{e}]", 'batch_time = { kind = "affine", c = 1.0, a = 0.0 }', "b_max = 768"]
    lines += ["[[classes]]", 'name = "A"', f"rate_per_s = {rate_per_s(n)}", "route = ["]
    lines += [f'  {{ engine = "E{1 + i % 2}", prompt = 10, output = 10 }},' for i in range(n)] + ["]"]
    case = folder / "long.toml"
    case.write_text("\n".join(lines) + "\n")
    return case
