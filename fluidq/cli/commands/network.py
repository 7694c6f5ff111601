"""``fluidq network CASE.toml``: topology, loads and a stability verdict for a network of engines."""
from __future__ import annotations

import math
from pathlib import Path

from ...results import fmt_load
from .. import emit
from ..common import check_simulation_args, parameters_as_flags, write_late
from ._roofline_args import add_refused_roofline_args, refuse_roofline_args

#: the simulated runs' sizes, by the library's names, as this command's flags
RUN_FLAGS = {"horizon_s": "--horizon", "replications": "--replications"}


def register(sub):
    p = sub.add_parser("network", help="loads, bottleneck and stability of a network of engines (TOML case)",
                       description="Read a network case file (a path, or a case shipped with fluidq by name, from fluidq/network/cases), print its topology "
                       "(DAG or cycles), per-engine loads and bottleneck, and one stability verdict from the load "
                       "conditions, the fluid model and (with --simulate) seeded simulations, naming the argument "
                       "that decided.")
    p.add_argument("case", help="TOML case file, or the name of a shipped case (with or without .toml): "
                                "fork_join, jsq_pair, llm_rybko_stolyar, lu_kumar, plan_code_review, "
                                "random_unequal, rybko_stolyar; a case with a [disaggregated] table is a "
                                "prefill/decode tandem (shipped: pd_llama8b_h100, pd_tandem; see "
                                "docs/how-to/disaggregated.md)")
    p.add_argument("--load", type=float, default=None,
                   help="rescale arrival rates so the bottleneck has this load, of the stations' b_max/t(b_max) (the "
                        "loads of the station lines); a station whose KV cache binds may be busier on the load basis "
                        "of `fluidq check`, which the 'at each station's mix' line gives with the factor that puts "
                        "the busiest at 1")
    p.add_argument("--simulate", action="store_true", help="also simulate (seeded replications)")
    p.add_argument("--horizon", type=float, default=None,
                   help="simulated seconds per replication (with --simulate; default: chosen from the growth to "
                        "detect, 1%% of the arrival rate: a first round of 3000 batches of the slowest engine at "
                        "full budget, longer where that growth would add fewer than 20 requests, and at least 20 "
                        "route sojourns at the offered loads (the first three discarded as warm-up), within a work "
                        "budget; then, while the evidence asks for longer runs, rounds of at least twice the horizon "
                        "up to a cap of 5,000,000 batches and hop visits a round, the verdict saying how long runs "
                        "would decide where the cap stops them; a [disaggregated] case: 3000 arrivals at its rate, and at "
                        "least 6 request sojourns; runs under 5 sojourns cannot call it unstable)")
    p.add_argument("--replications", type=int, default=None,
                   help="simulation replications, >= 2 (with --simulate; default 4)")
    p.add_argument("--seed", type=int, default=None,
                   help="root seed of the replications (an integer >= 0; with --simulate; default 0)")
    p.add_argument("--plot", default=None, metavar="PATH",
                   help="write the fluid path and (with --simulate) the simulated backlog to PATH, on separate "
                        "panels (format from the extension: png, pdf, svg...)")
    p.add_argument("--plot-network", default=None, metavar="PATH", help="draw the network with loads to PATH")
    p.add_argument("--json", action="store_true",
                   help="print JSON: the verdict, and the network (capacities, loads, visit rates, routers) "
                        "under 'network'")
    add_refused_roofline_args(p, ROOFLINE_WHY, model=True)
    p.set_defaults(func=run)


#: why `fluidq network` takes no --gpu/--model: each station's engine is in the case file
ROOFLINE_WHY = ("the engines are the case file's stations, each its own; give a station a roofline engine there, "
                "batch_time = { kind = \"roofline\", model = \"Llama-3.1-70B\", gpu = \"H100\", "
                "tensor_parallel_size = 4 } (fluidq.network.toml)")


def _check_plot_path(option: str, path: str) -> str:
    """Refuse up front a figure path that cannot or may not be written (see ``output_file``)."""
    from ..common import output_file

    return output_file(option, path)


def _check_args(args) -> None:
    """Every option is checked before the (possibly long) analysis starts."""
    from ...errors import ParameterError

    if args.load is not None and not (math.isfinite(args.load) and args.load > 0):
        raise ParameterError("--load", args.load, "a finite load > 0")
    check_simulation_args(args)
    for opt, attr in (("--plot", "plot"), ("--plot-network", "plot_network")):
        if getattr(args, attr) is not None:  # '' is refused, not silently ignored
            setattr(args, attr, _check_plot_path(opt, getattr(args, attr)))
    if args.plot is not None and args.plot_network is not None:
        import os

        if os.path.abspath(args.plot) == os.path.abspath(args.plot_network):
            from ...errors import ParameterError

            # the network drawing would replace the fluid-path figure written a moment before
            raise ParameterError("--plot-network", args.plot_network, "a file other than --plot's (both figures "
                                 "would be written there, the second replacing the first)")


def _at_load(net, load):
    """``net.at_load(load)``, a load whose arrival rates leave the representable range refused naming --load."""
    from ..._validate import MAX_RATE_PER_S, MIN_RATE_PER_S, RATE_WHY
    from ...errors import ParameterError

    try:
        return net.at_load(load)
    except ParameterError as exc:
        if not str(exc.name).endswith("rate_per_s"):
            raise
        raise ParameterError("--load", load, f"a load whose arrival rates stay within [{MIN_RATE_PER_S:g}, "
                             f"{MAX_RATE_PER_S:g}] req/s (a class would arrive at {exc.value:.4g} req/s)",
                             RATE_WHY) from None


#: fewest arrivals a simulated replication of a disaggregated tandem may bring (its verdict's resolution is 1 %)
MIN_TANDEM_ARRIVALS = 100


def check_tandem_horizon(horizon, rate) -> None:
    """Refuse a ``--horizon`` bringing fewer than :data:`MIN_TANDEM_ARRIVALS` arrivals at ``rate`` req/s: the
    verdict compares the backlog growth with 1 % and 5 % of the arrivals, and with fewer than 100 arrivals 1 % is
    less than one request (0.1 ms at 12 req/s served nothing and 'agreed' with the fluid verdict)."""
    if horizon is not None and rate is not None and horizon * rate < MIN_TANDEM_ARRIVALS:
        from ...errors import ParameterError

        raise ParameterError("--horizon", horizon, f"a horizon bringing at least {MIN_TANDEM_ARRIVALS} "
                             f"arrivals at {rate:.4g} req/s (>= {MIN_TANDEM_ARRIVALS / rate:.4g} s)",
                             "the simulated verdict compares the backlog growth with 1 % and 5 % of the arrivals")


def _run_disaggregated(args):
    """A case with a ``[disaggregated]`` table: the prefill/decode tandem's stages, its fluid verdict and
    (with --simulate) seeded replications of the tandem simulation beside it."""
    from ...capacity.disaggregated import pd_region
    from ...capacity.disaggregated_case import check_disaggregated, load_topology
    from ...errors import ParameterError
    from ...results import fmt_value
    from .. import CliError

    for opt, v in (("--plot", args.plot), ("--plot-network", args.plot_network)):
        if v is not None:
            raise CliError(f"{opt} draws a network of engines; a disaggregated tandem has no such figure "
                           "(give it without)")
    topo = load_topology(args.case)
    if args.load is not None:
        try:
            topo = topo.at_load(args.load)
        except ParameterError as exc:
            if str(exc.name).endswith("rate_per_s"):  # the rate it would set left the range: say so, not "<= 1e9"
                from ..._validate import MAX_RATE_PER_S, MIN_RATE_PER_S

                raise ParameterError("--load", args.load, f"a load whose arrival rate stays within "
                                     f"[{MIN_RATE_PER_S:g}, {MAX_RATE_PER_S:g}] req/s (it would be "
                                     f"{exc.value:.4g} req/s)", exc.hint) from None
            raise ParameterError("--load", args.load, exc.expected, exc.hint) from None
    if args.simulate:
        check_tandem_horizon(args.horizon, topo.rate_per_s)
    with parameters_as_flags(RUN_FLAGS):
        res = check_disaggregated(topo, simulate=args.simulate, horizon_s=args.horizon,
                                  replications=4 if args.replications is None else args.replications,
                                  seed=0 if args.seed is None else args.seed)
    f = res.fluid
    reg = pd_region(f)
    decided = "the fluid model" + ("" if res.agree is None else
                                   f"; the simulation {'agrees' if res.agree else 'DISAGREES'}")
    said = res.status
    if res.withheld and res.simulated not in (None, "inconclusive"):  # the fluid model withheld: the runs decide
        said, decided = res.simulated, f"the simulation; the fluid model withheld its verdict: {res.status}"
    lines = [topo.describe(),
             "topology: DAG (disaggregated prefill/decode tandem: prefill pool -> KV transfer -> decode pool)",
             "stages: " + ", ".join(f"{k} {fmt_value(v, digits=4)} req/s" for k, v in f.stages.items()),
             f"bottleneck: {f.bottleneck} at load {fmt_load(f.load)}",
             f"verdict: {said} (decided by {decided})",
             f"  {res.reason}",
             f"region: prefill < {fmt_value(reg['prefill_tokens_per_s'], digits=4)} tokens/s, decode < "
             f"{fmt_value(reg['decode_tokens_per_s'], digits=4)} tokens/s (the rectangle this (n_p, n_d) sustains)"]
    emit(args, {**res.to_dict(), "region": reg}, "\n".join(lines))
    return 0


def _load_network(case):
    """:func:`~fluidq.network.toml.load_network`; a name that is no file also lists the shipped disaggregated
    cases (fluidq.network cannot see them: they are read by fluidq.capacity, a layer above)."""
    from ...capacity.disaggregated_case import case_names
    from ...errors import DataError
    from ...network.toml import load_network

    try:
        return load_network(case)
    except DataError as exc:
        msg = str(exc)
        if not (msg.startswith("no such case file") and msg.endswith(")")):
            raise
        raise DataError(f"{msg[:-1]}; disaggregated prefill/decode: {', '.join(case_names())})") from None


def run(args):
    from ...capacity.disaggregated_case import is_disaggregated_case
    from ...stability.network import check_network_stability, decided_words

    refuse_roofline_args(args, "fluidq network")
    _check_args(args)
    if is_disaggregated_case(args.case):
        return _run_disaggregated(args)
    net = _load_network(args.case)
    if args.load is not None:
        net = _at_load(net, args.load)
    if args.simulate and args.horizon is not None:  # the runs' sizes, before any work, naming the flags
        from ...sim.network import check_run

        check_run(net, args.horizon, replications=4 if args.replications is None else args.replications,
                  names=RUN_FLAGS)
    with parameters_as_flags(RUN_FLAGS):  # the runs' sizes at the automatic horizon: named by the flag given
        res = check_network_stability(net, simulate=args.simulate, horizon_s=args.horizon,
                                      replications=4 if args.replications is None else args.replications,
                                      rng=0 if args.seed is None else args.seed)
    if args.plot:
        from ...stability.fluid import MAX_PATH_BUFFERS

        fp, start = res.fluid.path, None
        if net.flow.n > MAX_PATH_BUFFERS:
            fp = None  # a fluid path of so many buffers takes minutes (the verdict says it skipped them)
        elif fp is None or res.fluid.certificate != "load":
            # a path from 100 requests in the first buffer, over a few cycles when it oscillates
            from ...fluid import fluid_path

            b = net.flow.buffers[0]
            fp = fluid_path(net, {b.label: 100.0 * b.w}, max_phases=2000, cycles=3)
            start = f"100 requests ({100.0 * b.w:,.0f} tokens) in buffer {b.label!r}"
        args.plot = write_late(args, "--plot", args.plot,
                               lambda: res.plot(path=args.plot, fluid_path=fp, fluid_initial=start))
    if args.plot_network:
        args.plot_network = write_late(args, "--plot-network", args.plot_network,
                                       lambda: net.plot(path=args.plot_network))
    written = [f"{what}: {path}" for what, path in (("plot", args.plot), ("network plot", args.plot_network)) if path]
    lines = [net.describe(),
             f"topology: {'DAG' if res.is_dag else 'cycles ' + '; '.join(' -> '.join(c + c[:1]) for c in res.cycles)}",
             f"bottleneck: {res.bottleneck[0]} at load {fmt_load(res.bottleneck[1])}",
             f"verdict: {res.status.value} ("
             + (f"decided by {decided_words(res.decided_by)})" if res.decided_by else
                "no argument decides it: the loads, the fluid model and any simulation leave it open)"),
             f"  {res.reason.replace('(give horizon_s to run longer)', '(give --horizon to run longer)')}"]
    if res.fluid.growth_factor is not None:
        from ...results import fmt_value
        lines.append(f"  fluid growth per cycle x{fmt_value(res.fluid.growth_factor)}"
                     + _peaks_text(res.fluid.growth_factor, res.fluid.peak_growth))
    mix, mix_lines = _mix_basis(net)
    lines[3:3] = mix_lines
    lines += written  # where the figures went ('--plot x' writes x.png)
    out = ({**res.to_dict(), "network": net.to_dict(), "plot": args.plot, "plot_network": args.plot_network,
            "mix_basis": mix} if args.json else res)
    emit(args, out, "\n".join(lines))


def _mix_basis(net):
    """The loads of the stations whose capacity above is only an upper bound because their batch time reads the
    KV cache (or a KV cache limits them), at the mix of hops each serves, on the load basis of `fluidq check`
    (:func:`fluidq.dtmc.station_basis.station_load_bases`: where the KV cache binds, the capacity under its rules),
    beside the mean-footprint figure (:func:`fluidq.capacity.network.mix_loads`, full batches of the residents the
    mean footprints allow) and the upper bound's; and the rates that put the busiest at 1: its JSON (None when no
    station has one; each station's ``load`` is the load basis's, ``mean_footprint_load`` the other) and its
    lines."""
    from ...capacity.network import mix_loads
    from ...dtmc.load_basis import BASIS_WORDS
    from ...dtmc.station_basis import station_load_bases
    from ...results import fmt_value

    loads = mix_loads(net)
    if not loads:
        return None, []
    bases = station_load_bases(net, loads)
    for k, v in loads.items():  # the load basis's load where it reads the mix, the mean footprints' beside it
        b = bases.get(k) or {}
        v["mean_footprint_load"] = v["load"]
        if b.get("load") is not None:
            v["load"] = b["load"]
        v.update({kk: vv for kk, vv in b.items() if kk.startswith("load_basis")})

    def station(k, v):
        words = (f"{k} load {fmt_load(v['load'])} ({fmt_value(bases[k]['rate_per_s'], digits=4)} of "
                 f"{fmt_value(v['load_basis_requests_per_s'], digits=4)} req/s, "
                 f"{BASIS_WORDS.get(v['load_basis'], v['load_basis'])}), " if v.get("load_basis") else
                 f"{k} (no load basis: {v.get('load_basis_reason') or 'not read'}), ")
        return (words + f"at the mean footprints {fmt_value(v['capacity_tokens_per_s'], digits=4)} tokens/s, load "
                f"{fmt_load(v['mean_footprint_load'])} (upper bound's {fmt_load(v['upper_bound_load'])})")

    name = max(loads, key=lambda k: loads[k]["load"])
    top = loads[name]["load"]
    scale = 1.0 / top if 0 < top < float("inf") else None  # inf: a station that serves none of its mix
    lines = ["at each station's mix, on the load basis of `fluidq check` (fluidq.dtmc.load_basis at the mix of hops "
             "it serves: where the KV cache binds, the capacity under its rules), beside full batches at the mean "
             "request footprints (b/t(b) at the batch the residents allow, the batch time at their mean context): "
             + "; ".join(station(k, v) for k, v in loads.items())]
    if scale is not None:
        rates = ", ".join(f"{c.name!r} {fmt_value(c.arrival.rate_per_s * scale, digits=4)} req/s"
                          for c in net.classes)
        lines.append(f"  busiest at its mix: {name} at load {fmt_load(top)}: the classes' rates x"
                     f"{fmt_value(scale, digits=4)} put it at 1 ({rates})"
                     + ("; above 1 it is overloaded at its mix (a fluid estimate, as `fluidq check`'s, not a bound)"
                        if top > 1 else ""))
    if top == float("inf"):
        lines.append(f"  {name} serves none of its mix: {loads[name]['reason']}")
    out = {"stations": loads, "bottleneck": [name, top], "rate_scale_at_load_1": scale}
    return out, lines


def _peaks_text(growth, peak):
    """How the peak-to-peak factor relates to the per-cycle one (a cycle may hold several peaks)."""
    from ...results import fmt_value, is_defined

    if not peak:
        return ""
    text = f", peak to peak x{fmt_value(peak)}"
    if is_defined(growth) and is_defined(peak) and growth > 1 and peak > 1:
        import math

        k = math.log(growth) / math.log(peak)
        if abs(k - round(k)) < 0.05 and round(k) >= 1:
            k = int(round(k))
            text += (f" (the total backlog peaks {k} times per cycle: x{fmt_value(peak)}^{k} = "
                     f"x{fmt_value(peak ** k)})" if k > 1 else " (one peak per cycle)")
    return text
