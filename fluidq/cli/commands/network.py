"""``fluidq network CASE.toml``: topology, loads and a stability verdict for a network of engines."""
from __future__ import annotations

from .. import emit


def register(sub):
    p = sub.add_parser("network", help="loads, bottleneck and stability of a network of engines (TOML case)",
                       description="Read a network case file (a path, or a case shipped with fluidq by name, from fluidq/network/cases), print its topology "
                       "(DAG or cycles), per-engine loads and bottleneck, and one stability verdict from the load "
                       "conditions, the fluid model and (with --simulate) seeded simulations, naming the argument "
                       "that decided.")
    p.add_argument("case", help="TOML case file, or the name of a shipped case (with or without .toml): "
                                "fork_join, jsq_pair, llm_rybko_stolyar, lu_kumar, plan_code_review, "
                                "random_unequal, rybko_stolyar")
    p.add_argument("--load", type=float, default=None, help="rescale arrival rates so the bottleneck has this load")
    p.add_argument("--simulate", action="store_true", help="also simulate (seeded replications)")
    p.add_argument("--horizon", type=float, default=None, help="simulated seconds per replication")
    p.add_argument("--replications", type=int, default=4, help="simulation replications (>= 2)")
    p.add_argument("--seed", type=int, default=0, help="root seed of the replications")
    p.add_argument("--plot", default=None, metavar="PATH", help="write the fluid (and simulated) backlog to PATH")
    p.add_argument("--plot-network", default=None, metavar="PATH", help="draw the network with loads to PATH")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def run(args):
    from ...errors import ParameterError
    from ...network.stability import check_network_stability
    from ...network.toml import load_network

    net = load_network(args.case)
    if args.load is not None:
        if not args.load > 0:
            raise ParameterError("--load", args.load, "a load > 0")
        net = net.at_load(args.load)
    res = check_network_stability(net, simulate=args.simulate, horizon_s=args.horizon,
                                  replications=args.replications, rng=args.seed)
    if args.plot:
        from ...fluid import fluid_path
        from ...plotting import axes, finish

        fig, ax = axes(None)
        fp = res.fluid.path
        if fp is None or res.fluid.certificate != "load":
            # a path from 100 requests in the first buffer, over a few cycles when it oscillates
            b = net.flow.buffers[0]
            fp = fluid_path(net, {b.label: 100.0 * b.w}, max_phases=2000, cycles=3)
        ax.plot(fp.times_s, fp.total_tokens, color="k", lw=1.4, label=f"fluid ({fp.outcome})")
        if res.runs:
            r = res.runs[0]
            ax.plot(r.times_s, r.total_tokens, color="C3", lw=0.9, label="simulation")
        ax.set_xlabel("time [s]")
        ax.set_ylabel("backlog [tokens]")
        ax.set_title(f"{net.name}: {res.status.value} ({res.decided_by})", fontsize=9)
        ax.legend(fontsize=7)
        finish(fig, ax, args.plot)
    if args.plot_network:
        net.plot(path=args.plot_network)
    lines = [net.describe(),
             f"topology: {'DAG' if res.is_dag else 'cycles ' + '; '.join(' -> '.join(c) for c in res.cycles)}",
             f"bottleneck: {res.bottleneck[0]} at load {res.bottleneck[1]:.3f}",
             f"verdict: {res.status.value} (decided by {res.decided_by or 'nothing: unknown'})",
             f"  {res.reason}"]
    if res.fluid.growth_factor is not None:
        lines.append(f"  fluid growth per cycle x{res.fluid.growth_factor:.4g}"
                     + (f", peak to peak x{res.fluid.peak_growth:.4g}" if res.fluid.peak_growth else ""))
    emit(args, res, "\n".join(lines))
