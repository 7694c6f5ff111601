"""Vertex C: under a batch-size limit, filling the token budget is not optimal (arXiv:2504.07347, §6).

The paper's staircase with k_max = 100 requests per batch. The stability region in the plane of
(prefill, decode) tokens per second has the vertex C = (29/46.75, 99/46.75) tokens/ms: batches of
exactly 128 tokens, 29 prefill and 99 decode. The deterministic experiment at C sends one request
of (290, 990) tokens every 467.5 ms; only Sarathi-Serve with b_max = 128 keeps up (its backlog
levels off after the first 40 s; the other two keep climbing by about 400-500 tokens/s).
``--quick`` (120 s instead of 600 s) already shows the split.

Writes ``vertex_c_region.png`` (the regions for b_max = 128 and 1024 with C) and
``vertex_c_backlog.png`` (token backlog of the three runs) to --out.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import fluidq
from fluidq.plotting import axes, finish

RUNS = [("sarathi", 128), ("sarathi", 1024), ("orca", 128)]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="120 s instead of 600 s")
    ap.add_argument("--out", default="figures", help="folder for the PNGs")
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    bt = fluidq.Staircase(c=0.01128, a=0.03547, b0=128)
    c_point = (29 / 0.04675, 99 / 0.04675)  # tokens per second
    print(f"vertex C = ({c_point[0] / 1e3:.6f}, {c_point[1] / 1e3:.6f}) tokens/ms (paper: 0.620321, 2.117647)")

    fig, ax = axes()
    for b_max, style in ((1024, "--"), (128, "-")):
        region = fluidq.stability_region(fluidq.Engine(batch_time=bt, b_max=b_max, k_max=100))
        v = region.vertices
        ax.plot(list(v[:, 0]) + [v[0, 0]], list(v[:, 1]) + [v[0, 1]], style, label=f"region, b_max = {b_max}")
        print(f"b_max = {b_max}: C inside the region: {region.contains(c_point)}")
    ax.plot(*c_point, marker="*", ms=14, color="crimson", ls="none", label="C = (29, 99) tokens / 46.75 ms")
    ax.set_xlabel("prefill tokens/s")
    ax.set_ylabel("decode tokens/s")
    ax.set_title("Stability region with k_max = 100" + ("\n(quick run: the same analytic regions)" if args.quick else ""),
                 fontsize="medium")
    ax.legend(fontsize="small")
    finish(fig, ax, out / "vertex_c_region.png")

    workload = fluidq.Workload(arrival=fluidq.Periodic(rate_per_s=1 / 0.4675), prompt_tokens=290,
                               output_tokens=990)
    horizon = 120.0 if args.quick else 600.0
    quick = f"\n(quick run: {horizon:g} s)" if args.quick else ""
    fig, ax = axes()
    for policy, b_max in RUNS:
        engine = fluidq.Engine(batch_time=bt, b_max=b_max, k_max=100)
        res = fluidq.simulate(engine, workload, policy, horizon_s=horizon, rng=0)
        s = res.summary()
        ax.step(res.backlog["t_s"], res.backlog["tokens"], where="post", label=f"{policy}, b_max = {b_max}")
        print(f"  {policy:8s} b_max = {b_max:5d}: {s['final_token_backlog']:7d} tokens left at {horizon:g} s, "
              f"backlog slope {s['token_backlog_slope_per_s']:.0f} tokens/s")
    ax.set_xlabel("time (s)")
    ax.set_ylabel("remaining tokens in system")
    ax.set_title("One (290, 990)-token request every 467.5 ms, k_max = 100" + quick, fontsize="medium")
    ax.legend(fontsize="small")
    finish(fig, ax, out / "vertex_c_backlog.png")
    print(f"wrote {out}/vertex_c_region.png, vertex_c_backlog.png")


if __name__ == "__main__":
    main()
