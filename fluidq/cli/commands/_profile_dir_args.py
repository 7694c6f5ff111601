"""``--profile-dir`` for ``fluidq check`` and ``fluidq simulate`` (issue 16 item 6): one vLLM engine predicted
from an operator-profile folder in LLMServingSim's layout, with vLLM's arguments, without any run.

``--tensor-parallel-size`` and ``--gpu-memory-utilization`` (added by ``add_roofline_args``), ``--max-num-seqs``,
``--max-num-batched-tokens`` and ``--kv-capacity`` are the command's own flags, read here too."""
from __future__ import annotations

#: the flags this group adds, with their defaults (each is refused without --profile-dir: it would be ignored)
_OWN = (("--gpu-memory-gib", "gpu_memory_gib", None), ("--block-size", "block_size", 16),
        ("--link-bandwidth-gbps", "link_bandwidth_gbps", None), ("--link-latency-us", "link_latency_us", None),
        ("--all-reduce-csv", "all_reduce_csv", None))


def add_profile_dir_args(p) -> None:
    g = p.add_argument_group("a vLLM engine from its operator-profile folder (no run needed)")
    g.add_argument("--profile-dir", default=None, metavar="DIR",
                   help="an operator-profile folder in LLMServingSim's layout (profile_meta.yaml, profile_tp1_*.csv): "
                        "vLLM's engine (paged KV blocks, recompute preemption) with the folder's iteration time, "
                        "--max-num-batched-tokens (default 2048), --max-num-seqs (default 256), "
                        "--tensor-parallel-size, and the KV cache of --kv-capacity or vLLM's memory planner "
                        "(an estimate from --gpu-memory-gib and --gpu-memory-utilization); see also "
                        "`fluidq capacity --profile-dir` for pipeline and data parallel layouts")
    g.add_argument("--gpu-memory-gib", type=float, default=None,
                   help="with --profile-dir or --gpu: one GPU's memory, GiB, for vLLM's KV-cache planner (default: "
                        "the folder's peer_sim_config.json, or the GPU table's)")
    g.add_argument("--block-size", type=int, default=16, help="with --profile-dir: vLLM's --block-size (default 16)")
    add_link_args(g, "with --profile-dir and --tensor-parallel-size > 1")


def add_link_args(g, when: str) -> None:
    """The communication model of a profile folder's GPUs (``--link-bandwidth-gbps``, ``--link-latency-us``,
    ``--all-reduce-csv``), shared by ``capacity``, ``check`` and ``simulate``; ``when`` opens the bandwidth's
    help (which layouts communicate)."""
    g.add_argument("--link-bandwidth-gbps", type=float, default=None,
                   help=f"{when}: link bandwidth per direction, GB/s (default: the folder's peer_sim_config.json "
                        "link_bw)")
    g.add_argument("--link-latency-us", type=float, default=None,
                   help="with --link-bandwidth-gbps: latency per message, microseconds")
    g.add_argument("--all-reduce-csv", default=None, metavar="CSV",
                   help="with --profile-dir: a measured all-reduce table (Vidur's all_reduce*.csv) instead of a link")


def reject_profile_dir_flags(args) -> None:
    """Without ``--profile-dir``: its own flags would be ignored, so they are refused by name (``--gpu-memory-gib``
    is read with ``--gpu`` too: the roofline engine's KV cache is planned on it)."""
    from .. import CliError

    for flag, dest, default in _OWN:
        if flag == "--gpu-memory-gib" and getattr(args, "gpu", None) is not None:
            continue
        if getattr(args, dest) != default:
            where = "--profile-dir or --gpu" if flag == "--gpu-memory-gib" else "--profile-dir"
            raise CliError(f"{flag} is read only with {where} (it would be ignored)")


def check_profile_dir(profile_dir: str) -> None:
    """Refuse a ``--profile-dir`` that is empty, missing or a file (a ``CliError`` naming the flag)."""
    from pathlib import Path

    from .. import CliError

    folder = Path(profile_dir)
    if not profile_dir.strip() or not folder.is_dir():
        what = "that is a file" if profile_dir.strip() and folder.exists() else "there is no such folder"
        raise CliError(f"--profile-dir {profile_dir or repr('')}: expected a folder of operator profiles "
                       f"(profile_meta.yaml, profile_tp1_*.csv); {what}")


def profile_dir_engine(args):
    """``(engine, note)`` of ``--profile-dir`` (:func:`fluidq.validate.deployment.deployment_engine`),
    refusing the options that describe another engine."""
    from ...validate.deployment import deployment_engine
    from .. import CliError
    from ..common import parameters_as_flags, profile_dir_flags

    given = [o for o, v in (("--profile", args.profile), ("--fit", getattr(args, "fit", None)), ("--c-ms", args.c_ms),
                            ("--a-ms", args.a_ms), ("--b0", args.b0), ("--model", args.model), ("--gpu", args.gpu))
             if v is not None]
    if given:
        raise CliError(f"--profile-dir describes the engine itself: give it without {', '.join(given)}")
    check_profile_dir(args.profile_dir)
    profile_dir_context(args)
    with parameters_as_flags(**profile_dir_flags(args)):
        return deployment_engine(args.profile_dir, model=profiled_model(args),
                                 max_num_seqs=256 if args.k_max is None else args.k_max,
                                 max_num_batched_tokens=2048 if args.b_max is None else args.b_max,
                                 tensor_parallel_size=args.tensor_parallel_size, kv_capacity_tokens=args.kv_capacity,
                                 gpu_memory_gib=args.gpu_memory_gib, gpu_memory_utilization=args.gpu_memory_utilization,
                                 block_size=args.block_size, link_bandwidth_gbps=args.link_bandwidth_gbps,
                                 link_latency_us=args.link_latency_us, all_reduce_csv=args.all_reduce_csv)


def profiled_model(args):
    """The facts of ``--model-config`` (the profiled model's config.json), or None: found from the folder's
    ``profile_meta.yaml`` in the shipped table.  Read once per command and kept on ``args`` (the context check,
    the engine and the answer's text each ask for it)."""
    if getattr(args, "model_config", None) is None:
        return None
    if getattr(args, "_profiled_model", None) is None:
        from ...models import ModelFacts

        args._profiled_model = ModelFacts.from_config(args.model_config, option="--model-config")
    return args._profiled_model


def profile_dir_context(args, trace=None) -> None:
    """Refuse ``--prompt`` + ``--output`` beyond the context of the folder's model (profile_meta.yaml's model
    in the shipped model facts; :func:`~fluidq.cli.commands._roofline_args.check_context`), and record that
    the KV cache is vLLM's memory planner's estimate when ``--kv-capacity`` is not given."""
    from pathlib import Path

    from ...models import find_model
    from ...validate.deployment import _profile_model
    from ._roofline_args import check_context, kv_estimated

    folder = Path(args.profile_dir)
    facts = profiled_model(args)
    if facts is None:
        name = _profile_model(folder)
        facts = find_model(name) if name else None
    if facts is not None:
        check_context(args, facts, trace)
    gib = getattr(args, "gpu_memory_gib", None)
    mem = f"--gpu-memory-gib {gib:g}" if gib is not None else "the GPU memory of the folder's peer_sim_config.json"
    kv_estimated(args, f"{facts.name if facts is not None else 'the model'} from --profile-dir {folder.name}: {mem} x "
                       f"--gpu-memory-utilization {args.gpu_memory_utilization:g}, less the weights and activations")


def profile_dir_capacity(args, workload):
    """vLLM's flow-balance capacity of ``--profile-dir`` for ``workload`` (what ``fluidq capacity --profile-dir``
    prints, :func:`fluidq.validate.deployment.predict_deployment`), the basis of ``--load`` in ``simulate``
    (``check`` calls :func:`fluidq.dtmc.flow_basis.flow_balance_capacity` on its engine, the same
    :func:`~fluidq.validate.predict.predict_capacity` with the engine's own budgets and cache, which its verdicts
    read too).

    The engine those commands build reads the batch composition when it simulates, but its ``t(b)`` is one
    prefill chunk of ``b`` tokens: a capacity from ``t(b)`` counts no per-request decode cost (for Llama-3.1-8B
    on the RTX PRO 6000 folder at 300 + 200 tokens, 24,123 tokens/s against the flow balance's 12,953 and the
    simulated 13,076), so ``--load 0.9`` of it put 1.7 times the engine's capacity on it."""
    import numpy as np

    from ...validate.deployment import predict_deployment
    from ..common import parameters_as_flags, profile_dir_flags

    if workload.trace is not None:  # (built from --trace: its requests, not read again)
        tr = workload.trace
        lengths = (np.asarray(tr.prompt_tokens), np.asarray(tr.output_tokens))
    else:
        lengths = (workload.mean_prompt_tokens, workload.mean_output_tokens)
    # (profile_dir_engine, which its caller ran first, checked the context and named the KV estimate)
    # (a cache no request fits: --kv-capacity, or the planner's estimate)
    with parameters_as_flags(**profile_dir_flags(args)):
        return predict_deployment(args.profile_dir, input_tokens=lengths[0], output_tokens=lengths[1],
                                  model=profiled_model(args),
                                  max_num_seqs=256 if args.k_max is None else args.k_max,
                                  max_num_batched_tokens=2048 if args.b_max is None else args.b_max,
                                  tensor_parallel_size=args.tensor_parallel_size,
                                  link_bandwidth_gbps=args.link_bandwidth_gbps, link_latency_us=args.link_latency_us,
                                  all_reduce_csv=args.all_reduce_csv, kv_capacity_tokens=args.kv_capacity,
                                  gpu_memory_gib=args.gpu_memory_gib, gpu_memory_utilization=args.gpu_memory_utilization,
                                  block_size=args.block_size)
