"""Rybko-Stolyar with LLM engines: under-loaded engines, an unstable network (arXiv:2504.07347, §5.4).

Two Sarathi engines, b_max = 768, one second per batch; type A makes a short call (32, 32) on E1
then a long one (512, 32) on E2, type B mirrors it; each engine 90 % loaded. When each engine gives
strict priority to the class leaving through it, the token backlog oscillates with growing peaks;
with the priorities reversed it stays bounded. ``--quick`` (600 s instead of 4000 s) already shows
six cycles, each peak higher than the last. The case is ``fluidq/network/cases/llm_rybko_stolyar.toml`` (``fluidq network llm_rybko_stolyar``).

Writes ``rybko_stolyar.png`` (token backlog of both priority orders) and
``rybko_stolyar_stations.png`` (tokens at each engine, unstable order) to --out.
"""
from __future__ import annotations

import argparse
from pathlib import Path

from fluidq.network import load_network, simulate_network
from fluidq.plotting import axes, finish

CASE = "llm_rybko_stolyar"  # a case shipped in fluidq/network/cases


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="600 s instead of 4000 s")
    ap.add_argument("--out", default="figures", help="folder for the PNGs")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    net = load_network(CASE)
    print(net.describe())
    reverse = net.with_priorities({"E1": ["A.1", "B.2"], "E2": ["B.1", "A.2"]})
    horizon = 600.0 if args.quick else 4000.0
    quick = f"\n(quick run: {horizon:g} s, one seed)" if args.quick else ""
    runs = {"leaving class first (paper)": simulate_network(net, horizon_s=horizon, rng=args.seed),
            "entering class first (reversed)": simulate_network(reverse, horizon_s=horizon, rng=args.seed)}

    fig, ax = axes()
    for label, r in runs.items():
        total = sum(r.station_tokens.values())
        ax.plot(r.times_s, total, label=label, lw=1.2)
        half = len(total) // 2
        print(f"  {label:32s} peak tokens first half {total[:half].max():9.0f}, second half {total[half:].max():9.0f}")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("remaining tokens in the network")
    ax.set_title("LLM Rybko-Stolyar: both engines 90 % loaded" + quick, fontsize="medium")
    ax.legend(fontsize="small")
    finish(fig, ax, out / "rybko_stolyar.png")

    r = runs["leaving class first (paper)"]
    fig, ax = axes()
    for st, tok in r.station_tokens.items():
        ax.plot(r.times_s, tok, label=st, lw=1.0)
    ax.set_xlabel("time (s)")
    ax.set_ylabel("remaining tokens at the engine")
    ax.set_title("Tokens at each engine (leaving class first): higher peaks every cycle" + quick, fontsize="medium")
    ax.legend(fontsize="small")
    finish(fig, ax, out / "rybko_stolyar_stations.png")
    print(f"wrote {out}/rybko_stolyar.png, rybko_stolyar_stations.png")


if __name__ == "__main__":
    main()
