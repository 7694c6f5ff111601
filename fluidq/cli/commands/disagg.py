"""``fluidq disagg``: disaggregated prefill/decode pools of one model on one GPU type (roofline engines)."""
from __future__ import annotations

from .. import emit
from ..common import check_simulation_args, fmt_tokens
from .network import MIN_TANDEM_ARRIVALS, check_tandem_horizon


def register(sub):
    p = sub.add_parser(
        "disagg", help="disaggregated prefill/decode pools: capacity, verdict, sizing, against co-located",
        description="A prefill pool, a KV transfer and a decode pool (Splitwise, DistServe) of --model (or "
        "--model-config) on --gpu, each engine --tensor-parallel-size GPUs with the calibrated roofline batch time "
        "(an estimate: see docs/reference/roofline.md). Give --prefill-engines and --decode-engines for the "
        "capacity of that tandem (and its verdict with --rate); --rate alone for the fewest engines that sustain "
        "it; --gpus for the best split of that many GPUs against co-located serving on the same GPUs. The KV "
        "crosses --link-gbps (default: the GPU's interconnect) per tensor-parallel rank.")
    g = p.add_argument_group("deployment")
    g.add_argument("--model", default=None, help="a model of `fluidq models list`")
    g.add_argument("--model-config", default=None, metavar="JSON", help="a Hugging Face config.json instead")
    g.add_argument("--gpu", required=True, help="a GPU of `fluidq gpus`")
    g.add_argument("--tensor-parallel-size", type=int, default=1, help="GPUs per engine (default 1)")
    g.add_argument("--max-num-seqs", "--k-max", dest="k_max", type=int, default=256,
                   help="decode engines' batch-size limit (default 256)")
    g.add_argument("--max-num-batched-tokens", "--b-max", dest="b_max", type=int, default=2048,
                   help="token budget per iteration, both pools (default 2048)")
    g.add_argument("--gpu-memory-utilization", type=float, default=0.9,
                   help="for the engines' KV cache, both pools (default 0.9)")
    g.add_argument("--link-gbps", type=float, default=None, help="KV-transfer bandwidth per rank, GB/s")
    g.add_argument("--link-latency-us", type=float, default=None, help="KV-transfer latency, us")
    w = p.add_argument_group("workload and question")
    w.add_argument("--input-len", "--prompt", dest="prompt", type=float, default=None, help="mean prompt tokens (default 1000)")
    w.add_argument("--output-len", "--output", dest="output", type=float, default=None, help="mean output tokens (default 200)")
    w.add_argument("--prefill-engines", type=int, default=None, help="n_p (with --decode-engines)")
    w.add_argument("--decode-engines", type=int, default=None, help="n_d (with --prefill-engines)")
    w.add_argument("--rate", type=float, default=None, help="arrival rate, requests/s")
    w.add_argument("--gpus", type=int, default=None, help="a GPU budget: best split against co-located serving")
    s = p.add_argument_group("simulation (with --rate: the tandem's verdict)")
    s.add_argument("--simulate", action="store_true",
                   help="also simulate the tandem (seeded replications of fluidq.capacity.disaggregated_sim, the "
                        "API's check_disaggregated(simulate=True)): its backlog verdict beside the fluid one, "
                        "labelled (sim)")
    s.add_argument("--horizon", type=float, default=None,
                   help="simulated seconds per replication (with --simulate; default: 3000 arrivals at --rate and "
                        f"at least 6 request sojourns; at least {MIN_TANDEM_ARRIVALS} arrivals; runs under 5 sojourns "
                        "cannot call the tandem unstable: its pools are still filling)")
    s.add_argument("--replications", type=int, default=None,
                   help="simulation replications, >= 2 (with --simulate; default 4)")
    s.add_argument("--seed", type=int, default=None,
                   help="seed of the first replication (an integer >= 0, the next ones +1, ...; with --simulate; "
                        "default 0)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def _engines(args):
    from ...batchtime.comm import Link
    from ...batchtime.roofline import roofline
    from ...engine import Engine
    from ...models import ModelFacts, kv_capacity_estimate, load_gpu, load_model
    from .. import CliError
    from ._roofline_args import memory_named

    if (args.model is None) == (args.model_config is None):
        raise CliError("give the model: --model NAME or --model-config config.json, one of them")
    model = (ModelFacts.from_config(args.model_config, option="--model-config") if args.model_config
             else load_model(args.model, option="--model"))
    gpu = load_gpu(args.gpu, option="--gpu")
    rf = roofline(model, gpu, args.tensor_parallel_size)
    with memory_named(gpu.name, args.tensor_parallel_size):  # the weights do not fit: --gpu, not gpu_memory_gib
        kv = kv_capacity_estimate(model, gpu_memory_gib=gpu.memory_gib,
                                  gpu_memory_utilization=args.gpu_memory_utilization,
                                  tensor_parallel_size=args.tensor_parallel_size, max_num_batched_tokens=args.b_max,
                                  max_num_seqs=args.k_max).tokens
    pre = Engine(batch_time=rf, b_max=args.b_max, kv_capacity_tokens=kv, name="prefill")  # its own memory: a
    # prompt's KV waits there until the link has sent it (the same GPUs and planner as the decode engines)
    dec = Engine(batch_time=rf, b_max=args.b_max, k_max=args.k_max, kv_capacity_tokens=kv, name="decode")
    col = Engine(batch_time=rf, b_max=args.b_max, k_max=args.k_max, kv_capacity_tokens=kv, name="co-located")
    link = Link(bandwidth_gbps=gpu.link_bandwidth_gbps if args.link_gbps is None else args.link_gbps,
                latency_us=gpu.link_latency_us if args.link_latency_us is None else args.link_latency_us,
                name=_link_name(gpu.interconnect, args))
    return rf, pre, dec, col, link, kv


def _link_name(interconnect: str, args) -> str:
    """The KV link named after where its figures come from: the GPU's interconnect, the flags, or both."""
    bw, lat = args.link_gbps is not None, args.link_latency_us is not None
    if bw and lat:
        return "--link-gbps, --link-latency-us"
    if bw:
        return f"--link-gbps, {interconnect} (latency)"
    if lat:
        return f"{interconnect} (bandwidth), --link-latency-us"
    return interconnect


#: this command's own parameter names -> its flags, beside the roofline's (``_roofline_args.FLAGS``) that
#: ``named_by_flag`` knows (an error raised below the CLI names the flag typed)
_FLAGS = {"rate_per_s": "--rate", "rate": "--rate", "gpus": "--gpus", "n_prefill": "--prefill-engines",
          "n_decode": "--decode-engines", "bandwidth_gbps": "--link-gbps", "latency_us": "--link-latency-us",
          "prompt_tokens": "--input-len", "k_max": "--max-num-seqs", "b_max": "--max-num-batched-tokens",
          "horizon_s": "--horizon", "replications": "--replications", "seed": "--seed"}


def _tokens(flag: str, v: float) -> int:
    """A whole number of tokens >= 1 (the pools' workload has fixed lengths: 2.5 is not silently 2)."""
    from ..._validate import MAX_REQUEST_TOKENS, REQUEST_WHY, integer, real

    v = real(flag, v, minimum=1.0)
    if not v.is_integer():
        from ...errors import ParameterError

        raise ParameterError(flag, v, "a whole number of tokens (the requests have fixed lengths)")
    return integer(flag, int(v), minimum=1, maximum=MAX_REQUEST_TOKENS, why=REQUEST_WHY)


def run(args):
    from ...errors import ParameterError
    from ._roofline_args import named_by_flag

    # the lengths default to 1000 + 200 tokens; the answer says so when neither was given
    args._default_lengths = [f"{flag} {v} by default" for flag, v, given in
                             (("--input-len", 1000, args.prompt), ("--output-len", 200, args.output)) if given is None]
    args.prompt = 1000.0 if args.prompt is None else args.prompt
    args.output = 200.0 if args.output is None else args.output
    try:
        with named_by_flag(_FLAGS):
            return _run(args)
    except ParameterError as exc:
        if exc.name not in ("prefill", "decode"):
            raise
        # the pools' engines are built here from the flags: one whose KV cache holds no request (the capacity's
        # "an engine that can hold one request") is the lengths' doing
        raise _lengths_too_long(args, exc.name, exc.value) from None


def _lengths_too_long(args, name: str, engine):
    """The refusal of lengths whose request (or prompt, for the prefill pool) the ``name`` engine's KV cache
    cannot hold, naming the length flags."""
    from ...errors import ParameterError

    return ParameterError("--input-len/--output-len", tuple(int(v) for v in (args.prompt, args.output)),
                          f"lengths whose {'prompt' if name == 'prefill' else 'request'} fits the {name} engine's "
                          f"KV cache ({getattr(engine, 'kv_capacity_tokens', None)} tokens)")


def _run(args):
    from ...capacity.disaggregated import compare, decode_rate, disaggregated_capacity, pd_region, size_pools
    from ...results import fmt_load
    from ...validate.roofline import ERROR_NOTE
    from ...workload import Poisson, Workload
    from .. import CliError

    pools = (args.prefill_engines, args.decode_engines)
    if (pools[0] is None) != (pools[1] is None):
        raise CliError("--prefill-engines and --decode-engines go together (the two pools' sizes)")
    if args.gpus is not None and (pools[0] is not None or args.rate is not None):
        raise CliError("--gpus compares the best split with co-located serving: give it without --rate and the "
                       "pool sizes")
    if pools[0] is None and args.rate is None and args.gpus is None:
        raise CliError("what to answer: --prefill-engines N --decode-engines M (a tandem), --rate R (sizing) or "
                       "--gpus G (against co-located)")
    check_simulation_args(args)
    if args.simulate and args.gpus is not None:
        raise CliError("--simulate checks a tandem's verdict at --rate; --gpus compares capacities (give it without "
                       "--simulate)")
    if args.simulate and args.rate is None:
        raise CliError("--simulate checks the tandem's verdict at an arrival rate: give --rate (with the pool sizes, "
                       "or alone for the pools it sizes)")
    if args.simulate:
        check_tandem_horizon(args.horizon, args.rate)
    from ..._validate import MAX_RATE_PER_S, MIN_RATE_PER_S, RATE_WHY, real

    if args.rate is not None:
        real("--rate", args.rate, positive=True)
        real("--rate", args.rate, minimum=MIN_RATE_PER_S, maximum=MAX_RATE_PER_S, why=RATE_WHY)
    defaults = args._default_lengths
    prompt, output = _tokens("--input-len", args.prompt), _tokens("--output-len", args.output)
    for flag, v in (("--link-gbps", args.link_gbps), ("--link-latency-us", args.link_latency_us)):
        if v is not None:
            real(flag, v, positive=flag == "--link-gbps", nonnegative=True)
    rf, pre, dec, col, link, kv = _engines(args)
    wl = Workload(arrival=Poisson(rate_per_s=1.0 if args.rate is None else args.rate), prompt_tokens=prompt,
                  output_tokens=output)
    if decode_rate(dec, wl)[0] <= 0:  # no request fits a decode engine: every question's answer would be 0
        raise _lengths_too_long(args, "decode", dec)
    kvb = rf.model.kv_bytes_per_token()
    deployment = {"batch_time": rf.to_dict(), "b_max": args.b_max, "k_max": args.k_max,
                  "gpu_memory_utilization": args.gpu_memory_utilization, "decode_kv_cache_tokens": kv,
                  "kv_bytes_per_token": kvb, "link": link.describe(), "links": args.tensor_parallel_size,
                  "estimate": ERROR_NOTE}  # what the text's head and last line say, for --json
    kw = dict(link=link, kv_bytes_per_token=kvb, links=args.tensor_parallel_size,
              gpus_per_engine=args.tensor_parallel_size)
    head = [f"deployment      {rf.describe()}",
            f"KV cache        {kv:,} tokens per engine, both pools (vLLM's planner, an estimate)",
            f"KV transfer     {kvb:,} B per token over {args.tensor_parallel_size} x {link.describe()}",
            f"workload        m_p={fmt_tokens(prompt)}, m_d={fmt_tokens(output)} tokens per request"
            + (f" ({', '.join(defaults)})" if defaults else "")]
    if args.gpus is not None:
        c = compare(pre, dec, col, wl, gpus=args.gpus, **kw)
        d = c["disaggregated"]
        lines = head + [f"disaggregated   {d['n_prefill']} prefill + {d['n_decode']} decode engines: "
                        f"{d['requests_per_s']:.4g} req/s ({d['bottleneck']} binds)",
                        f"co-located      {c['engines']} engines: {c['colocated_requests_per_s']:.4g} req/s",
                        f"winner          {c['winner']} (ratio {c['ratio']:.3g})", f"estimate        {ERROR_NOTE}"]
        emit(args, {**c, "deployment": deployment}, "\n".join(lines))
        return 0
    if pools[0] is None:
        r = size_pools(pre, dec, wl, rate=args.rate, **kw)
    else:
        r = disaggregated_capacity(pre, dec, wl, n_prefill=pools[0], n_decode=pools[1], rate=args.rate, **kw)
    reg = pd_region(r)
    lines = head + [f"pools           {r.n_prefill} prefill + {r.n_decode} decode engines ({r.gpus} GPUs)",
                    "stages          " + ", ".join(f"{k} {v:.4g} req/s" for k, v in r.stages.items()),
                    f"capacity        {r.requests_per_s:.4g} req/s ({r.requests_per_s_per_gpu:.4g} per GPU), "
                    f"{r.bottleneck} binds",
                    f"region          prefill < {reg['prefill_tokens_per_s']:.4g} tokens/s, decode < "
                    f"{reg['decode_tokens_per_s']:.4g} tokens/s"]
    out = {**r.to_dict(), "region": reg, "deployment": deployment}
    if r.verdict is not None:
        lines.append(f"verdict         {r.verdict} at {args.rate:g} req/s (load {fmt_load(r.load)}): "
                     f"{r.inputs['verdict_reason']}")
    if pools[0] is None and r.verdict != "stable":  # sized by capacity > rate: say what the verdict would call stable
        s = _stable_pools(pre, dec, wl, r, args.rate, kw)
        out["stable_pools"] = None if s is None else [s.n_prefill, s.n_decode]
        lines.append("sizing          the fewest engines whose fluid capacity exceeds the rate; " + (
            f"the verdict is stable from {s.n_prefill} prefill + {s.n_decode} decode engines (load "
            f"{fmt_load(s.load)})" if s is not None else "no pools of up to 4096 engines make the verdict stable"))
    if args.simulate:
        sim = _simulated(args, pre, dec, wl, r, link, kvb)
        lines.append(sim["line"])
        out.update({k: sim[k] for k in ("simulated", "agree", "horizon_s", "simulation")})
    lines.append(f"estimate        {ERROR_NOTE}")
    emit(args, out, "\n".join(lines))
    return 0


def _stable_pools(pre, dec, wl, r, rate, kw):
    """The sized tandem ``r`` with engines added to its bottleneck pool until the fluid verdict at ``rate`` is
    ``stable`` (``None`` past 4096 engines a pool): the sizing asks capacity > rate, the verdict also a margin
    (2 % of the capacity, 20 % where the decode pool binds through its KV cache)."""
    from ...capacity.disaggregated import disaggregated_capacity

    n_p, n_d = r.n_prefill, r.n_decode
    while r.verdict != "stable":
        if r.bottleneck == "decode":
            n_d += 1
        else:
            n_p += 1
        if max(n_p, n_d) > 4096:
            return None
        r = disaggregated_capacity(pre, dec, wl, n_prefill=n_p, n_decode=n_d, rate=rate, **kw)
    return r


def _simulated(args, pre, dec, wl, r, link, kvb) -> dict:
    """Seeded replications of the tandem ``r`` sized (fluidq.capacity.disaggregated_case.check_disaggregated, as
    ``fluidq network CASE --simulate`` runs a [disaggregated] case): its three-way decision labelled (sim), its
    growth share's interval beside the fluid model's, and whether the two agree."""
    from ...capacity.disaggregated_case import DisaggregatedTopology, check_disaggregated

    topo = DisaggregatedTopology(prefill=pre, decode=dec, n_prefill=r.n_prefill, n_decode=r.n_decode, link=link,
                                 kv_bytes_per_token=kvb, workload=wl, links=args.tensor_parallel_size,
                                 gpus_per_engine=args.tensor_parallel_size, name="disagg")
    v = check_disaggregated(topo, simulate=True, horizon_s=args.horizon,
                            replications=4 if args.replications is None else args.replications,
                            seed=0 if args.seed is None else args.seed)
    s = v.simulation
    lo, hi = s.growth_share_ci
    fluid_growth = max(0.0, 1 - 1 / v.fluid.load) if v.fluid.load > 0 else 0.0
    said = (f"{'agrees' if v.agree else 'DISAGREES'} with the fluid verdict" if v.agree is not None else
            f"the simulation decides (the fluid verdict is {v.fluid.verdict}, withheld)"
            if v.withheld and v.simulated != "inconclusive" else v.inconclusive_why)
    line = (f"simulated       {v.simulated} (sim) at {args.rate:g} req/s: backlog growth {s.growth_share:.3g} of the "
            f"arrivals (95 % CI {lo:.3g} to {hi:.3g}; fluid {fluid_growth:.3g}), throughput "
            f"{s.throughput_per_s:.4g} req/s, {len(s.runs)} seeded runs of {v.horizon_s:.4g} s; {said}")
    return {"line": line, "simulated": v.simulated, "agree": v.agree, "horizon_s": v.horizon_s,
            "simulation": s.to_dict()}
