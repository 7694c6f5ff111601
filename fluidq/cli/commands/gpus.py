"""``fluidq gpus``: the shipped GPU table (peak dense FLOPs, memory, bandwidth, interconnect, source)."""
from __future__ import annotations

from .. import emit


def register(sub):
    p = sub.add_parser("gpus", help="the GPU table the roofline batch time uses (datasheet figures)",
                       description="The shipped GPU table: peak dense tensor FLOPs per number format (never the "
                       "with-sparsity figures), memory size and bandwidth, the GPU-to-GPU link (bandwidth per "
                       "direction; latency an assumption, not a datasheet figure) and the vendor datasheet each "
                       "entry is copied from. 'list' (the default) prints one line per GPU; 'show NAME' one GPU. "
                       "`fluidq capacity --gpu NAME --model NAME` uses them.")
    p.add_argument("action", nargs="?", choices=["list", "show"], default="list",
                   help="list the GPUs (default) or show one")
    p.add_argument("name", nargs="?", default=None, help="GPU to show (with 'show'); aliases and any case work")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=run)


def run(args):
    from ...models import list_gpus, load_gpu
    from .. import CliError

    if args.action == "show":
        if not args.name:
            raise CliError("show needs a GPU NAME: `fluidq gpus show NAME` (names: `fluidq gpus list`)")
        g = load_gpu(args.name, option="NAME")
        d = g.to_dict()
        lines = [f"{k:<22} {v}" for k, v in d.items() if k != "tflops"]
        lines.insert(3, f"{'dense TFLOPs':<22} " + ", ".join(f"{k} {v:g}" for k, v in g.tflops.items()))
        emit(args, d, "\n".join(lines))
        return 0
    if args.name is not None:
        raise CliError(f"NAME {args.name!r} is ignored by 'list' (it lists every GPU); to see one: "
                       f"`fluidq gpus show {args.name}`")
    gpus = list_gpus()
    w = max(len(g.name) for g in gpus)
    lines = [f"{'name':<{w}}  {'bf16 TF':>8} {'fp8 TF':>7} {'GiB':>6} {'HBM GB/s':>9}  link"]
    for g in gpus:
        fp8 = g.tflops.get("float8")
        lines.append(f"{g.name:<{w}}  {g.tflops.get('bfloat16', 0):>8g} {fp8 if fp8 else '-':>7} {g.memory_gib:>6g} "
                     f"{g.memory_bandwidth_gbps:>9g}  {g.interconnect} {g.link_bandwidth_gbps:g} GB/s")
    emit(args, [g.to_dict() for g in gpus], "\n".join(lines))
    return 0
