"""Named analyses a sweep can run by name: ``"capacity"``, ``"check"``, ``"region"`` and ``"simulate"``.

Each is a function ``(point, rng) -> dict`` of flat JSON values.  A point is a dict with any of:

``profile``         built-in profile name (default: the paper's CodeLlama-34B/A100 fit)
``gpu``, ``model``  a deployment without profiles instead (both, no ``profile``): the roofline engine of
                    ``model`` (a name of ``fluidq models list``) on ``gpu`` (``fluidq gpus``), as the command
                    line's ``--gpu``/``--model`` (:func:`fluidq.engine.roofline_engine`: vLLM's planned KV
                    cache, ``b_max`` 2048 and ``k_max`` 256 unless given)
``tensor_parallel_size``  GPUs per engine, with ``gpu`` (default 1)
``b_max``, ``k_max`` token budget and batch-size limit (default: the profile's)
``engines``         identical engines behind a JSQ router (default 1; ``capacity`` only, the others
                    analyse one engine)
``prompt_tokens``, ``output_tokens``  prompt / output lengths (default 100, 100)
``lengths``         ``"fixed"`` (default) or ``"geometric"`` (the lengths are then means)
``trace``           an embedded trace name or a trace file (lengths and arrival pattern from it)
``load``            offered load as a fraction of the load basis lambda* (:func:`point_load_basis`, the one
                    ``fluidq check --load`` reads: where the KV cache binds, the capacity under its rules), or
``rate_per_s``      the arrival rate in requests per second
``policy``          scheduler name (default ``"sarathi"``)
``horizon_s``       simulated seconds (``simulate`` only, default 60)
``seed``            a replication label: it only makes points distinct (the random stream of a
                    point comes from the sweep's ``SeedSequence`` and the point's index)

Unknown keys are an error, so that a typo does not silently sweep nothing, and so is a key the analysis
does not read (:data:`ANALYSIS_KEYS`: ``load`` for ``capacity``, ``horizon_s`` for ``check``...), which would
be ignored.
"""
from __future__ import annotations

import functools

from ..errors import ParameterError, UnknownNameError

__all__ = ["ANALYSES", "ANALYSIS_KEYS", "POINT_KEYS", "resolve_analysis", "point_engine", "point_load_basis",
           "point_workload", "check_grid_values"]

POINT_KEYS = {"profile", "gpu", "model", "tensor_parallel_size", "b_max", "k_max", "engines", "prompt_tokens", "output_tokens", "lengths", "trace",
              "load", "rate_per_s", "policy", "horizon_s", "seed", "tolerance"}


_SHAPE = {"profile", "gpu", "model", "tensor_parallel_size", "b_max", "k_max", "engines", "prompt_tokens", "output_tokens", "lengths", "trace", "seed"}
#: the keys each built-in analysis reads (``seed`` is a label every one accepts); any other point key would be
#: ignored, so it is refused: ``horizon_s`` in a ``check`` sweep, ``load`` in a ``capacity`` one
ANALYSIS_KEYS = {"capacity": _SHAPE,
                 "check": _SHAPE | {"load", "rate_per_s", "policy", "tolerance"},
                 "region": _SHAPE | {"load", "rate_per_s"},
                 "simulate": _SHAPE | {"load", "rate_per_s", "policy", "horizon_s"}}
#: the analyses of one engine: ``engines`` other than 1 would set the load from several engines' capacity
#: and then analyse one (a ``simulate`` sweep at load 0.9 of two engines ran one engine at 1.8)
ONE_ENGINE = ("check", "region", "simulate")


def _key_problem(key: str, analysis: str):
    """Why point key ``key`` cannot be given to the built-in ``analysis`` (an "expected ..." phrase), or ``None``."""
    if key not in POINT_KEYS:
        return f"keys among {', '.join(sorted(POINT_KEYS))} for the {analysis!r} analysis"
    reads = ANALYSIS_KEYS.get(analysis, POINT_KEYS)
    if key not in reads:
        return (f"no {key!r} for the {analysis!r} analysis (it does not read it, so the value would be ignored; "
                f"it reads {', '.join(sorted(reads))})")
    return None


def _engines_problem(v, analysis: str):
    if analysis in ONE_ENGINE and v != 1:
        return (f"1 for the {analysis!r} analysis (one engine; several engines behind a router: the 'capacity' "
                "analysis, or fluidq.simulate_network)")
    return None


def _check_keys(point: dict, analysis: str):
    for k in sorted(point):
        problem = _key_problem(k, analysis)
        if problem is not None:
            raise ParameterError(f"point[{k!r}]", point[k], problem)
    if "engines" in point:
        problem = _engines_problem(point["engines"], analysis)
        if problem is not None:
            raise ParameterError("point['engines']", point["engines"], problem)


def _value_problem(key: str, v):
    """What is wrong with value ``v`` of point key ``key`` (an "expected ..." phrase), or ``None``."""
    import math
    from numbers import Integral, Real

    def count(minimum):
        ok = not isinstance(v, bool) and isinstance(v, Integral) and v >= minimum
        return None if ok else f"an integer >= {minimum}"

    def positive():
        ok = not isinstance(v, bool) and isinstance(v, Real) and math.isfinite(v) and v > 0
        return None if ok else "a finite number > 0"

    if key in ("b_max", "k_max", "engines", "prompt_tokens", "output_tokens", "tensor_parallel_size"):
        return None if (key == "k_max" and v is None) else count(1)
    if key in ("load", "rate_per_s", "horizon_s"):
        return positive()
    if key == "tolerance":
        ok = not isinstance(v, bool) and isinstance(v, Real) and 0 <= v < 1
        return None if ok else "a number in [0, 1)"
    if key == "trace":
        import os
        import stat

        if not isinstance(v, str) or not v.strip():
            return "a trace name or the path of a trace file"
        try:
            st = os.stat(v)  # never blocks, unlike opening a FIFO
        except (OSError, ValueError):
            return None  # an embedded trace name (or a missing file: the loader says which)
        if not stat.S_ISREG(st.st_mode):
            return "a trace name or a regular trace file (a FIFO, device or folder cannot be read as a trace)"
        return None
    if key == "lengths":
        return None if v in ("fixed", "geometric") else "'fixed' or 'geometric'"
    if key == "policy":
        from ..errors import FluidqError
        from ..policies import POLICY_NAMES, resolve_policy

        if not isinstance(v, str):
            return f"a policy name (one of {', '.join(POLICY_NAMES)})"
        try:
            resolve_policy(v, "policy")
        except FluidqError:
            return f"a policy name (one of {', '.join(POLICY_NAMES)})"
        return None
    if key in ("gpu", "model"):
        from ..errors import FluidqError
        from ..models import load_gpu, load_model

        if not isinstance(v, str) or not v.strip():
            return f"a {'GPU of `fluidq gpus`' if key == 'gpu' else 'model name of `fluidq models list`'}"
        try:
            (load_gpu if key == "gpu" else load_model)(v)
        except FluidqError as exc:
            return f"a {'GPU of `fluidq gpus`' if key == 'gpu' else 'model of `fluidq models list`'} ({exc})"
        return None
    if key == "profile":
        from ..errors import FluidqError
        from ..profiles import load_profile

        if v is None:
            return None
        try:
            load_profile(v)
        except (FluidqError, TypeError):
            return "a built-in profile name (fluidq profiles lists them)"
        return None
    return None


def check_grid_values(grid, analysis: str = "check") -> None:
    """Validate every value of a grid for a built-in analysis, before any point runs.

    Checks each axis value and each fixed value (policy names via
    :func:`fluidq.policies.resolve_policy`, profile names, ``b_max``/``k_max``/``engines`` and token
    lengths integers >= 1, ``load``/``rate_per_s``/``horizon_s`` finite and > 0), so that a typo in
    one value is reported at once instead of after the earlier points were computed.

    Raises
    ------
    ParameterError
        Naming the axis (``grid.policy``) or fixed key (``fixed.b_max``), the value and what was expected.
    """
    for k in grid.fixed:
        if k not in POINT_KEYS:
            _check_keys({k: grid.fixed[k]}, analysis)  # (an unknown key: named as a point key, as before)
    sources = [(f"fixed.{k}", k, [v]) for k, v in grid.fixed.items()]
    if grid.axes is not None:
        for k in grid.axes:
            if k not in POINT_KEYS:
                raise ParameterError(f"grid.{k}", list(grid.axes[k]),
                                     f"an axis among {', '.join(sorted(POINT_KEYS))} for the {analysis!r} analysis")
        sources += [(f"grid.{k}", k, list(vals)) for k, vals in grid.axes.items()]
    else:
        sources += [(f"points[{i}].{k}", k, [v]) for i, p in enumerate(grid.points) for k, v in p.items()]
    if grid.axes is not None:
        key_sets = [set(grid.fixed) | set(grid.axes)]
    else:
        key_sets = [set(grid.fixed) | set(p) for p in grid.points] or [set(grid.fixed)]
    for keys in key_sets:
        problem = _deployment_problem(keys)
        if problem is not None:
            raise ParameterError(problem[0], sorted(keys), problem[2])
    for label, key, values in sources:
        problem = _key_problem(key, analysis)
        if problem is not None:
            raise ParameterError(label, values[0] if len(values) == 1 and not label.startswith("grid.") else values,
                                 problem)
        for v in values:
            problem = _value_problem(key, v)
            if problem is None and key == "engines":
                problem = _engines_problem(v, analysis)
            if problem is not None:
                raise ParameterError(label, v, problem)
    if grid.axes is not None:  # a value given twice on an axis would compute the same points twice
        for k, vals in grid.axes.items():
            keys = [_same_key(k, v) for v in vals]
            twice = [v for i, v in enumerate(vals) if keys[i] in keys[:i]]
            if twice:
                raise ParameterError(f"grid.{k}", list(vals), "distinct values",
                                     f"{twice[0]!r} is given twice (the same points would be computed twice)")


def _same_key(key, v):
    """What makes two values of one axis the same point: a policy's resolved name, a number's value."""
    if key == "policy" and isinstance(v, str):
        return ("policy", v.strip().lower().replace("_", "-"))  # (as resolve_policy reads a name)
    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return ("number", float(v))
    return ("value", repr(v))


def _deployment_problem(keys):
    """``(key, value, expected)`` when a point's keys describe no one engine (``gpu`` without ``model``, either with
    ``profile``, ``tensor_parallel_size`` without ``gpu``), else ``None``."""
    if ("gpu" in keys) != ("model" in keys):
        given = "gpu" if "gpu" in keys else "model"
        return (given, "<given>", "'gpu' and 'model' together (a deployment without profiles: the roofline engine of "
                                  "the model on the GPU)")
    if "gpu" in keys and "profile" in keys:
        return ("profile", "<given>", "no 'profile' with 'gpu' and 'model' (they describe the engine themselves)")
    if "tensor_parallel_size" in keys and "gpu" not in keys:
        return ("tensor_parallel_size", "<given>", "'gpu' and 'model' with it (GPUs per roofline engine; a "
                                                  "profile's engine is measured at its own)")
    return None


@functools.lru_cache(maxsize=64)
def _roofline_engine(gpu, model, tensor_parallel_size, b_max, k_max, context_tokens=None):
    from ..engine import roofline_engine

    return roofline_engine(model, gpu, int(tensor_parallel_size or 1), b_max=int(b_max or 2048),
                           k_max=int(k_max or 256), context_tokens=context_tokens)


def _held_context(point: dict):
    """The mean context a roofline point's requests hold, ``prompt_tokens + output_tokens / 2`` (100 each by
    default; the laws' means for geometric lengths), at which a sliding-window model's planned cache is taken, as
    ``fluidq check``/``capacity --gpu`` take it; ``None`` (the tokens vLLM logs) for a trace point, as they do with
    a ``--trace``.  Before h-consist the point's engine took the logged tokens and its capacity headline the mean
    context of its lengths, so one row's ``requests_per_s`` and ``load_basis_requests_per_s`` read two caches."""
    if point.get("trace") is not None:
        return None
    c = float(point.get("prompt_tokens", 100)) + float(point.get("output_tokens", 100)) / 2
    return c if c > 0 else None


@functools.lru_cache(maxsize=64)
def _engine(profile, b_max, k_max):
    from ..profiles import DEFAULT_PROFILE, load_profile

    prof = load_profile(profile or DEFAULT_PROFILE)
    changes = {}
    if b_max is not None:
        changes["b_max"] = int(b_max)
    if k_max is not None:
        changes["k_max"] = int(k_max)
    return prof.engine(**changes)


def point_engine(point: dict):
    """The :class:`~fluidq.Engine` a point describes (cached per process): a profile's, or with ``gpu`` and
    ``model`` the roofline engine of :func:`fluidq.engine.roofline_engine`."""
    problem = _deployment_problem(set(point))
    if problem is not None:
        key, _, expected = problem
        raise ParameterError(f"point[{key!r}]", point.get(key), expected)
    if "gpu" in point:
        return _roofline_engine(point["gpu"], point["model"], point.get("tensor_parallel_size"), point.get("b_max"),
                                point.get("k_max"), _held_context(point))
    return _engine(point.get("profile"), point.get("b_max"), point.get("k_max"))


@functools.lru_cache(maxsize=16)
def _trace_workload(trace):
    from ..workload import Workload

    return Workload.from_trace(trace)


def _shape(point: dict):
    from ..workload import Geometric, Poisson, Workload

    if point.get("trace") is not None:
        if "prompt_tokens" in point or "output_tokens" in point:
            raise ParameterError("point['trace']", point["trace"], "either trace or prompt/output tokens, not both")
        return _trace_workload(point["trace"])
    mp = point.get("prompt_tokens", 100)
    md = point.get("output_tokens", 100)
    lengths = point.get("lengths", "fixed")
    if lengths == "geometric":
        lp, ld = Geometric(mean_tokens=float(mp)), Geometric(mean_tokens=float(md))
    elif lengths == "fixed":
        lp, ld = mp, md
    else:
        raise ParameterError("point['lengths']", lengths, "'fixed' or 'geometric'")
    return Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=lp, output_tokens=ld)


def point_workload(point: dict, *, engine=None):
    """The :class:`~fluidq.Workload` a point describes; ``load`` is relative to the load basis lambda*
    (:func:`point_load_basis`, the one ``fluidq check --load`` reads)."""
    return _point_workload(point, engine=engine)[0]


def point_load_basis(point: dict, *, engine=None):
    """The :class:`~fluidq.dtmc.load_basis.LoadBasis` a point's ``load`` is a fraction of
    (:func:`fluidq.dtmc.load_basis.load_basis` of its engine(s) and lengths: vLLM's flow balance for an engine
    whose batch time reads the batch composition, the capacity under the KV cache's rules where the cache
    binds, else :func:`fluidq.max_throughput`), as ``fluidq check --load``, ``fluidq simulate --load`` and
    ``fluidq latency --loads`` read it."""
    return _load_basis(point, engine if engine is not None else point_engine(point), _shape(point))


def _load_basis(point: dict, engine, shape):
    """:func:`point_load_basis` of the point's ``engine`` and ``shape`` (:func:`_shape`), built once by the caller."""
    from ..dtmc.load_basis import load_basis

    return load_basis(engine, shape, n_engines=int(point.get("engines", 1)))


def _point_workload(point: dict, *, engine=None):
    """``(workload or None, LoadBasis or None)``: the basis when the point gives a ``load``."""
    shape = _shape(point)
    has_load, has_rate = "load" in point, "rate_per_s" in point
    if has_load and has_rate:
        raise ParameterError("point['load']", point["load"], "either load or rate_per_s, not both")
    if has_rate:
        return shape.with_rate(float(point["rate_per_s"])), None
    if has_load:
        basis = _load_basis(point, engine if engine is not None else point_engine(point), shape)
        from .._validate import load_rate

        return shape.with_rate(load_rate("load", float(point["load"]), basis.requests_per_s)), basis
    return None, None


def _basis_columns(basis) -> dict:
    """The flat columns naming a point's load basis (``{}`` without a ``load``)."""
    if basis is None:
        return {}
    return {"load_basis": basis.basis, "load_basis_requests_per_s": basis.requests_per_s}


def capacity(point: dict, rng=None) -> dict:
    """The point's capacity, the headline of ``fluidq capacity`` for the same deployment.

    Columns: ``requests_per_s`` and ``tokens_per_s`` (``m_p + m_d`` tokens a request), the capacity line of
    ``fluidq capacity``: for a ``gpu``/``model`` point vLLM's flow balance on the roofline
    (:func:`fluidq.validate.roofline.predict_roofline_deployment`, what ``fluidq capacity --gpu`` prints: the KV
    cache's rules, blocks of 16 tokens), for a profile's engine :func:`fluidq.max_throughput`;
    ``capacity_basis`` names which (``"vllm_roofline"`` or ``"max_throughput"``).
    ``max_throughput_requests_per_s``, ``max_throughput_tokens_per_s`` and ``batch_tokens``: :func:`fluidq.max_throughput`
    (for a roofline point the ``region`` line of ``fluidq capacity --gpu``: the batch that mean request footprints
    allow, which overstates what the engine serves where the KV cache binds -- Gemma-2-9B on an A10G at 2000 + 100
    tokens: 0.4233 req/s against the capacity line's 0.2970).  ``load_basis`` and
    ``load_basis_requests_per_s``: the lambda* a ``load`` of this point is a fraction of
    (:func:`point_load_basis`, the one ``fluidq check --load`` reads; 0.3002 req/s there).  For a roofline point
    the lengths go in as :func:`fluidq.dtmc.load_basis.load_basis` reads them: the fixed pair, a trace's rows, or
    seeded draws of geometric lengths.
    """
    _check_keys(point, "capacity")
    e = point_engine(point)
    shape = _shape(point)
    n = int(point.get("engines", 1))
    # beside the headline, the lambda* a load of this point is a fraction of (they differ where the KV cache binds
    # or the batch time reads the batch composition); the basis has computed max_throughput where it read it
    basis = _load_basis(point, e, shape)
    r = basis.max_throughput(e, shape, n_engines=n)
    row = {"tokens_per_s": r.tokens_per_s, "requests_per_s": r.requests_per_s, "capacity_basis": "max_throughput",
           "max_throughput_tokens_per_s": r.tokens_per_s, "max_throughput_requests_per_s": r.requests_per_s,
           "batch_tokens": r.batch_tokens if isinstance(r.batch_tokens, int) else list(r.batch_tokens),
           **_basis_columns(basis)}
    if "gpu" in point:  # the capacity line of `fluidq capacity --gpu` (cli/commands/capacity.py, one engine x n)
        head = _roofline_capacity(point["gpu"], point["model"], point.get("tensor_parallel_size"), point.get("b_max"),
                                  point.get("k_max"), shape, _held_context(point))
        row.update(tokens_per_s=n * head.tokens_per_s, requests_per_s=n * head.requests_per_s,
                   capacity_basis="vllm_roofline")
    return row


def _roofline_capacity(gpu, model, tensor_parallel_size, b_max, k_max, shape, context_tokens=None):
    """:func:`fluidq.validate.roofline.predict_roofline_deployment` of one engine with the arguments ``fluidq
    capacity --gpu`` gives it by default (vLLM's ``max_num_seqs`` 256, ``max_num_batched_tokens`` 2048, blocks of 16,
    the planned KV cache at ``gpu_memory_utilization`` 0.9, a windowed model's at ``context_tokens``, as the point's
    engine) and ``shape``'s lengths as the load basis reads them."""
    from ..dtmc.flow_basis import length_rows
    from ..validate.roofline import predict_roofline_deployment

    p, o = length_rows(shape)
    return predict_roofline_deployment(model, gpu, input_tokens=p, output_tokens=o,
                                       tensor_parallel_size=int(tensor_parallel_size or 1),
                                       max_num_seqs=int(k_max or 256), max_num_batched_tokens=int(b_max or 2048),
                                       context_tokens=context_tokens)


def check(point: dict, rng=None) -> dict:
    """A stability verdict (:func:`fluidq.check_stability`) at the point's load and policy."""
    from ..stability import check_stability

    _check_keys(point, "check")  # (engines other than 1 refused there)
    e = point_engine(point)
    w, basis = _point_workload(point, engine=e)
    if w is None:
        raise ParameterError("point", point, "a 'load' or a 'rate_per_s' for the 'check' analysis")
    r = check_stability(e, w, point.get("policy", "sarathi"), tolerance=float(point.get("tolerance", 0.02)))
    return {"status": r.status.value, "rho": r.load, "work_conserving": r.work_conserving,
            "capacity_tokens_per_s": r.capacity_tokens_per_s, "offered_tokens_per_s": r.offered_tokens_per_s,
            "arrival_rate_per_s": w.arrival_rate_per_s, "reason": r.reason, **_basis_columns(basis)}


def region(point: dict, rng=None) -> dict:
    """The k_max stability region (:func:`fluidq.stability_region`) along the point's workload.

    Returns the largest sustainable request rate in the direction ``(m_p, m_d)`` and, when the
    point has a ``load`` or ``rate_per_s``, whether its operating point is inside the batch shapes (``inside``),
    its load on the load basis of ``fluidq check`` (``load_basis_load``) and the verdict on both (``verdict``,
    :func:`fluidq.region.verdict.point_verdict`): where the vertices leave out what the basis counts (the KV cache's
    rules), ``"OUTSIDE"`` above ``fluidq check``'s band or outside the shapes, ``"too close to call"`` within it, and
    below it :data:`fluidq.region.verdict.INSIDE_BY_ESTIMATE` where the cache binds (``fluidq check`` gives no verdict
    there either: an estimate, not proven) or ``"inside"`` on the flow balance's band.
    """
    from ..region import stability_region

    _check_keys(point, "region")
    e = point_engine(point)
    shape = _shape(point)
    from ..region.capacity import fixed_prompt

    reg = stability_region(e, prompt_tokens=fixed_prompt(shape))  # the region max_throughput uses
    mp, md = shape.mean_prompt_tokens, shape.mean_output_tokens
    out = {"max_request_rate_per_s": reg.max_request_rate(mp, md),
           "theorem2_requests_per_s": reg.capacity_tokens_per_s / (mp + md), "vertices": len(reg.vertices)}
    w, basis = _point_workload(point, engine=e)
    if w is not None:
        lam = w.arrival_rate_per_s
        out["arrival_rate_per_s"] = lam
        out["inside"] = bool(reg.contains((lam * mp, lam * md)))
        from ..region.verdict import basis_band, point_verdict

        lb = basis if basis is not None else _load_basis(point, e, shape)
        band = basis_band(lb, out["max_request_rate_per_s"])
        out["load_basis_load"] = lam / lb.requests_per_s if lb.requests_per_s > 0 else float("inf")
        out["verdict"] = ("inside" if out["inside"] else "OUTSIDE") if band is None else \
            point_verdict((lam * mp, lam * md), shape, lb, band, reg.scale_of((lam * mp, lam * md)))["verdict"]
        out.update(_basis_columns(basis))
    return out


def simulate(point: dict, rng=None) -> dict:
    """One seeded simulation (:func:`fluidq.simulate`) of the point; summary numbers only."""
    try:
        from .. import sim as _sim
    except ImportError as exc:  # the simulator is an optional part of this checkout
        raise UnknownNameError("analysis", "simulate (fluidq.sim is not available)", ANALYSES) from exc
    _check_keys(point, "simulate")
    e = point_engine(point)
    w, basis = _point_workload(point, engine=e)
    if w is None:
        raise ParameterError("point", point, "a 'load' or a 'rate_per_s' for the 'simulate' analysis")
    res = _sim.simulate(e, w, point.get("policy", "sarathi"), horizon_s=float(point.get("horizon_s", 60.0)),
                        rng=rng)
    return {**_sim_summary(res), **_basis_columns(basis)}


def _sim_summary(res) -> dict:
    """Flat scalars of a simulation result (whatever it names them)."""
    from ..results import plain

    if hasattr(res, "summary"):
        d = plain(res.summary())
    else:
        d = plain(res.to_dict()) if hasattr(res, "to_dict") else {}
    d.pop("policy", None)  # already a point coordinate
    return {k: v for k, v in d.items() if isinstance(v, (str, int, float, bool)) or v is None}


ANALYSES = {"capacity": capacity, "check": check, "region": region, "simulate": simulate}


def resolve_analysis(name: str):
    try:
        return ANALYSES[name]
    except KeyError:
        raise UnknownNameError("analysis", name, ANALYSES) from None
