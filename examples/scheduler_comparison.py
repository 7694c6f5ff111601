"""The five engine schedulers at 75 % of capacity (Li, Dai, Peng, arXiv:2504.07347, Fig. 1 setting).

Poisson arrivals, every request (129, 112) tokens, b_max = 512, the paper's CodeLlama-34B/A100
staircase, 0.75 lambda* for 90 s. A public reproduction reports Sarathi-Serve and Orca flat near 100
requests in the system, FasterTransformer about 940 and vanilla vLLM about 560 and still climbing:
the non-work-conserving schedulers fall behind well below the Theorem-2 boundary. fluidq's own
thresholds for these lengths (``fluidq check --prompt 129 --output 112``) say why: FasterTransformer
is stable only below about 0.04 of lambda*, so at 0.75 it climbs linearly; vanilla vLLM's threshold
is about 0.757 of lambda*, so 0.75 loads it to 0.99 of its own limit, a nearly critical queue that
is far larger than Sarathi's and slow to settle. Sarathi-Serve, Orca and chunked vLLM are
work-conserving and share one path.

``--quick`` runs 45 s instead of 90 s (the simulations take well under a second either way); the
order of the curves is already the full run's.

Writes ``scheduler_comparison.png`` (requests in the system) and ``scheduler_comparison_tokens.png``
(token backlog) to --out.
"""
from __future__ import annotations

import argparse
from pathlib import Path

import fluidq
from fluidq.plotting import axes, finish

POLICIES = ["sarathi", "orca", "vllm-chunked", "vllm", "fastertransformer"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="45 s instead of 90 s")
    ap.add_argument("--out", default="figures", help="folder for the PNGs")
    ap.add_argument("--load", type=float, default=0.75, help="fraction of the Theorem-2 capacity")
    ap.add_argument("--seed", type=int, default=2026)
    args = ap.parse_args(argv)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)

    engine = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)
    shape = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=1.0), prompt_tokens=129, output_tokens=112)
    lam = args.load * fluidq.max_throughput(engine, shape).requests_per_s
    workload = shape.with_rate(lam)
    horizon = 45.0 if args.quick else 90.0
    print(f"lambda = {lam:.2f} requests/s ({args.load:.2f} of lambda* = {lam / args.load:.2f}), {horizon:g} s")
    runs = {p: fluidq.simulate(engine, workload, p, horizon_s=horizon, rng=args.seed) for p in POLICIES}

    styles = {"sarathi": "-", "orca": "--", "vllm-chunked": ":"}  # the three work-conserving ones overlap
    quick = f"\n(quick run: {horizon:g} s, one seed)" if args.quick else ""
    for key, name, label in (("requests", "scheduler_comparison.png", "requests in system"),
                             ("tokens", "scheduler_comparison_tokens.png", "remaining tokens in system")):
        fig, ax = axes()
        for p, r in runs.items():
            ax.step(r.backlog["t_s"], r.backlog[key], where="post", label=p, lw=1.2, ls=styles.get(p, "-"))
        ax.set_xlabel("time (s)")
        ax.set_ylabel(label)
        ax.set_title(f"(129, 112) tokens, b_max = 512, load {args.load:g} of lambda*{quick}", fontsize="medium")
        ax.legend(fontsize="small")
        finish(fig, ax, out / name)
    for p, r in runs.items():
        s = r.summary()
        print(f"  {p:18s} {s['final_requests_in_system']:5d} in system at the end, "
              f"mean {s['mean_requests_in_system']:.0f}, work-conserving: "
              f"{fluidq.check_work_conserving(p).work_conserving}")
    print(f"wrote {out}/scheduler_comparison.png, scheduler_comparison_tokens.png")


if __name__ == "__main__":
    main()
