"""TOML case files for networks of engines (read with the standard library's ``tomllib``).

Format (every key is checked; an unknown key is an error naming it)::

    name = "llm-rybko-stolyar"
    claim = "dag"                 # optional: raise if the station graph has a cycle
    bottleneck_load = 0.9         # optional: scale all rates so the busiest point has this load

    [engines.E1]
    batch_time = { kind = "affine", c = 1.0, a = 0.0 }   # or profile = "<built-in profile>"
    b_max = 768                   # optional with profile or a roofline batch time
    k_max = 64                    # optional
    kv_capacity_tokens = 200000   # optional: a KV cache (token rules unless memory says otherwise)
    memory = "vllm"               # optional, with kv_capacity_tokens: "vllm" or a table of Memory fields,
                                  # e.g. { kind = "blocks", block_size = 16, prefix_caching = true }
    policy = "sarathi"            # optional (default sarathi)
    priority = ["B.2", "A.1"]     # optional: hop labels, highest first

    [routers.pool]
    engines = ["E1", "E2"]
    policy = "jsq"                # or "random" with probabilities = [0.5, 0.5]
    count = "requests"            # or "tokens"

    [[classes]]
    name = "A"
    rate_per_s = 1.137            # Poisson; or arrival = { kind = "periodic", rate_per_s = 1.0 }
    route = [
      { engine = "E1", prompt = 32, output = 32, name = "A.1" },
      { fork = "f", branches = [[{ engine = "E2", prompt = 64, output = 16 }],
                                [{ engine = "E3", prompt = 64, output = 16 }]] },
      { join = "f" },
      { choice = [{ p = 0.3, route = [{ engine = "E1", prompt = 8, output = 8 }] },
                  { p = 0.7, route = [] }] },
    ]

A deployment without profiles is a roofline engine (docs/reference/roofline.md)::

    [engines.planner]
    batch_time = { kind = "roofline", model = "Llama-3.1-70B", gpu = "H100", tensor_parallel_size = 4 }

``model`` is a name of ``fluidq models list`` (or ``model_config = "config.json"``, a path relative to the
case file); optional keys ``tensor_parallel_size`` (default 1), ``dtype``, ``gpu_memory_utilization``
(default 0.9), ``gpu_memory_gib`` (default the GPU table's) and ``max_model_len`` (vLLM's ``--max-model-len``:
refused above the length vLLM derives from the model's config.json, ``max_position_embeddings`` scaled by its
``rope_scaling`` (:func:`fluidq.models.context.derived_max_model_len`), or when the KV cache cannot hold one request of that
length, as vLLM refuses to start; the station's hops are then checked against it).  It is the engine of the command line's
``--gpu``/``--model`` (:func:`fluidq.engine.roofline_engine`): the roofline as a context-aware batch time, the
KV cache from vLLM's memory planner unless ``kv_capacity_tokens`` is given, ``b_max = 2048`` and
``k_max = 256`` (vLLM's defaults) unless given, the first output token emitted by the prefill.

Lengths are integers or tables ``{ dist = "geometric", mean = 100 }`` (also ``fixed`` with ``n``,
``poisson`` with ``mean``, ``lognormal`` with ``mean`` and ``sigma``; no other key); ``output = 0`` is a
prompt-only hop.  A class gives its rate once: ``rate_per_s`` (Poisson), or an ``arrival`` table
(``kind`` = ``poisson``, ``periodic`` or ``gamma`` with ``cv``) carrying ``rate_per_s`` or taking it from the
class; giving it in both places is an error.  ``priority`` and a router's ``engines`` may be a single name
instead of an array.  A choice option's empty route means leaving the network, but a choice must have an
option of positive probability that visits an engine.

A station whose table names a model (a roofline engine's ``model``, a profile's measured model in the shipped
model facts) has that model's context, vLLM's derived length (its default ``--max-model-len``): a hop
whose prompt + output passes it is refused naming the class, the hop and the station (a fixed length as it is,
a random one by its mean; behind a router, on each of its stations), as vLLM refuses such a request and as the
command line refuses one engine's ``--prompt``/``--output`` or ``--trace`` beyond it.

A case file's engine that no class visits (no hop names it, nor a router over it) is refused: it would serve
nothing, and it is most likely a typo in a hop's engine name or a table left over (:func:`network_from_dict`
accepts it, and :meth:`Network.describe` notes it on the station's line).

Every mistake raises one :class:`~fluidq.errors.FluidqError` (``DataError`` for the file's shape,
``ParameterError``/``ParameterTypeError`` for a value, ``TopologyError`` for the graph) whose one-line
message starts with the file, then the engine, router, class, step or option, then the key and the value.
"""
from __future__ import annotations

import contextlib
import math
from pathlib import Path

from ..errors import DataError, FluidqError, ParameterError
from .model import Choice, Fork, Hop, Join, Network, RequestClass, Router, Station, route_hops

__all__ = ["load_network", "network_from_dict"]

#: largest case file read (a network description; a 2,000-hop route is about 150 kB)
MAX_CASE_BYTES = 16 << 20

_TOP = {"name", "claim", "bottleneck_load", "engines", "routers", "classes", "description"}
_ENGINE = {"batch_time", "profile", "b_max", "k_max", "kv_capacity_tokens", "memory", "policy", "priority"}
_ROUTER = {"engines", "policy", "probabilities", "count"}
_CLASS = {"name", "rate_per_s", "arrival", "route"}
_ARRIVAL = {"poisson": ("rate_per_s",), "periodic": ("rate_per_s",), "gamma": ("rate_per_s", "cv")}
_LENGTH = {"fixed": ("n",), "geometric": ("mean",), "poisson": ("mean",), "lognormal": ("mean", "sigma")}
_STEP_KINDS = ("engine", "fork", "join", "choice")


# ---------------------------------------------------------------------------------------------------
# errors that say where they are

def _err(where: str, msg: str) -> DataError:
    """A :class:`DataError` whose message starts with ``where`` (file, then class/engine/router/step)."""
    exc = DataError(f"{where}: {msg}")
    exc.where = where
    return exc


@contextlib.contextmanager
def _at(where: str):
    """Re-raise a fluidq error from a constructor with ``where`` in front of its message.

    The exception keeps its type and attributes (a :class:`ParameterError` still has ``name``,
    ``value``, ``expected``); an error that already says where it is passes through unchanged.
    """
    try:
        yield
    except FluidqError as exc:
        if getattr(exc, "where", None) is not None:
            raise
        cls = type(exc)
        new = cls.__new__(cls)
        new.__dict__.update(exc.__dict__)
        new.args = (f"{where}: {exc}",)
        new.where = where
        raise new from None


def _unknown(where, d, allowed):
    extra = sorted(set(d) - set(allowed))
    if extra:
        hint = ""
        if extra[0] in _TOP and any(f" {k} " in where for k in ("engine", "router", "class")):
            hint = (" (in TOML a key written after a [table] or [[table]] header belongs to that table: "
                    "put the top-level keys before the first one)")
        raise _err(where, f"unknown key {extra[0]!r}; expected one of {', '.join(sorted(allowed))}{hint}")


def _string(where, key, v):
    if not isinstance(v, str) or not v.strip():
        raise _err(where, f"{key} = {v!r}: expected a non-empty string")
    return v


def _strings(where, key, v):
    """A string (one name) or an array of strings, as a tuple."""
    if isinstance(v, str):
        v = [v]
    if not isinstance(v, list) or not all(isinstance(x, str) and x.strip() for x in v):
        raise _err(where, f"{key} = {v!r}: expected a name or an array of names (strings)")
    return tuple(v)


def _table(where, key, v, example):
    if not isinstance(v, dict):
        raise _err(where, f"{key} = {v!r}: expected a table such as {example}")
    return v


# ---------------------------------------------------------------------------------------------------
# pieces

def _length(where, key, v):
    from ..workload import Fixed, Geometric, LogNormal, PoissonLength

    if isinstance(v, (int, float)) and not isinstance(v, bool):
        if not math.isfinite(v):
            raise _err(where, f"{key} = {v!r}: expected a finite number of tokens")
        # a whole float as an int (100.0 -> 100), but not one past 2**53: 1e300 would be refused as a 301-digit int
        return int(v) if float(v).is_integer() and abs(v) <= 2 ** 53 else v
    if not isinstance(v, dict):
        raise _err(where, f"{key} = {v!r}: a length must be an integer or a table with 'dist', "
                          "e.g. { dist = \"geometric\", mean = 100 }")
    kind = v.get("dist")
    if not isinstance(kind, str) or kind not in _LENGTH:
        raise _err(f"{where} {key}", f"unknown length dist {kind!r}; expected fixed, geometric, poisson or lognormal")
    need = _LENGTH[kind]
    _unknown(f"{where} {key}", v, {"dist", *need})
    for k in need:
        if k not in v:
            raise _err(f"{where} {key}", f"length {kind!r} needs key {k!r}")
    with _at(f"{where} {key}"):
        if kind == "fixed":
            return Fixed(n=v["n"])
        if kind == "geometric":
            return Geometric(mean_tokens=v["mean"])
        if kind == "poisson":
            return PoissonLength(mean_tokens=v["mean"])
        return LogNormal.from_mean(v["mean"], v["sigma"])


def _has_hop(steps) -> bool:
    for s in steps:
        if isinstance(s, Hop):
            return True
        if isinstance(s, Fork) and any(_has_hop(b) for b in s.branches):
            return True
        if isinstance(s, Choice) and any(p > 0 and _has_hop(r) for p, r in s.options):
            return True
    return False


def _steps(where, raw):
    if not isinstance(raw, list):
        raise _err(where, f"a route must be an array of steps, got {raw!r}")
    out = []
    for k, s in enumerate(raw, 1):
        w = f"{where} step {k}"
        if not isinstance(s, dict):
            raise _err(w, f"a step must be a table, got {s!r}")
        kinds = [x for x in _STEP_KINDS if x in s]
        if len(kinds) != 1:
            got = f"got {' and '.join(repr(x) for x in kinds)}" if kinds else f"got keys {sorted(s)}"
            raise _err(w, f"a step needs exactly one of 'engine', 'fork', 'join', 'choice'; {got}")
        if kinds[0] == "engine":
            _unknown(w, s, {"engine", "prompt", "output", "name"})
            for key in ("prompt", "output"):
                if key not in s:
                    raise _err(w, f"a hop needs {key!r}")
            eng = _string(w, "engine", s["engine"])
            name = _string(w, "name", s["name"]) if "name" in s else None
            prompt, output = _length(w, "prompt", s["prompt"]), _length(w, "output", s["output"])
            with _at(w):
                out.append(Hop(engine=eng, prompt_tokens=prompt, output_tokens=output, name=name))
        elif kinds[0] == "fork":
            _unknown(w, s, {"fork", "branches"})
            name = _string(w, "fork", s["fork"])
            br = s.get("branches")
            if not isinstance(br, list) or not br or not all(isinstance(b, list) for b in br):
                raise _err(w, f"fork {name!r} needs 'branches', an array of routes (each an array of steps), "
                              f"got {br!r}")
            branches = tuple(tuple(_steps(f"{w} branch {b}", x)) for b, x in enumerate(br, 1))
            with _at(w):
                out.append(Fork(name=name, branches=branches))
        elif kinds[0] == "join":
            _unknown(w, s, {"join"})
            with _at(w):
                out.append(Join(name=_string(w, "join", s["join"])))
        else:
            _unknown(w, s, {"choice"})
            raw_opts = s["choice"]
            if not isinstance(raw_opts, list) or not raw_opts:
                raise _err(w, f"choice = {raw_opts!r}: expected a non-empty array of options "
                              "[{ p = 0.3, route = [...] }, { p = 0.7, route = [] }]")
            opts = []
            for o, opt in enumerate(raw_opts, 1):
                wo = f"{w} option {o}"
                if not isinstance(opt, dict) or "p" not in opt or "route" not in opt:
                    raise _err(wo, f"an option is a table with 'p' (probability) and 'route' (array of steps), "
                                   f"got {opt!r}")
                _unknown(wo, opt, {"p", "route"})
                opts.append((opt["p"], tuple(_steps(wo, opt["route"]))))
            with _at(w):
                ch = Choice(options=tuple(opts))
            if not any(p > 0 and r for p, r in ch.options):
                raise _err(w, "every option of this choice that has a positive probability has an empty route, "
                              "so the choice does nothing; an empty route means leaving the network, and a "
                              "choice needs an option that visits an engine")
            out.append(ch)
    return out


def _arrival(w, c):
    from ..workload import Gamma, Periodic, Poisson

    a = _table(w, "arrival", c["arrival"], '{ kind = "poisson", rate_per_s = 1.0 }')
    kind = a.get("kind", "poisson")
    kinds = {"poisson": Poisson, "periodic": Periodic, "gamma": Gamma}
    if not isinstance(kind, str) or kind.lower() not in kinds:
        raise _err(f"{w} arrival", f"kind = {kind!r}; expected poisson, periodic or gamma")
    kind = kind.lower()
    _unknown(f"{w} arrival", a, {"kind", *_ARRIVAL[kind]})
    kw = {k: a[k] for k in _ARRIVAL[kind] if k in a}
    if "rate_per_s" in c:
        if "rate_per_s" in a:
            raise _err(w, f"rate_per_s is given twice, rate_per_s = {c['rate_per_s']!r} and in arrival "
                          f"rate_per_s = {a['rate_per_s']!r}; give it once (either place)")
        kw["rate_per_s"] = c["rate_per_s"]
    elif "rate_per_s" not in a:
        raise _err(w, "needs a rate: rate_per_s = ... in the class or in its arrival table")
    with _at(f"{w} arrival"):
        return kinds[kind](**kw)


def _kwarg_words(exc) -> str:
    """A constructor's complaint about its keywords, in the file's words (keys, not arguments)."""
    import re

    msg = str(exc)
    m = re.search(r"unexpected keyword argument '(\w+)'", msg)
    if m:
        return f"unknown key {m.group(1)!r}"
    m = re.search(r"missing \d+ required (?:keyword-only |positional )?arguments?: (.+)$", msg)
    if m:
        return f"needs key{'s' if ',' in m.group(1) or ' and ' in m.group(1) else ''} {m.group(1)}"
    return msg


#: the keys of ``batch_time = { kind = "roofline", ... }`` (fluidq.engine.roofline_engine's arguments)
_ROOFLINE = {"kind", "model", "model_config", "gpu", "tensor_parallel_size", "dtype", "gpu_memory_utilization",
             "gpu_memory_gib", "max_model_len"}


def _roofline(w, name, bt, budgets, base_dir, models=None):
    """A deployment without profiles: :func:`fluidq.engine.roofline_engine` of the table's model and GPU, the
    station's ``b_max``/``k_max`` (vLLM's 2048/256 unless given) and ``kv_capacity_tokens`` (vLLM's memory
    planner unless given)."""
    from ..engine import roofline_engine
    from ..models import ModelFacts

    wb = f"{w} batch_time"
    _unknown(wb, bt, _ROOFLINE)
    if ("model" in bt) == ("model_config" in bt):
        raise _err(wb, 'kind = "roofline" needs the model: model = "NAME" (see `fluidq models list`) or '
                       'model_config = "path/to/config.json", one of them')
    if "gpu" not in bt:
        raise _err(wb, 'kind = "roofline" needs gpu = "NAME" (see `fluidq gpus`)')
    gpu = _string(wb, "gpu", bt["gpu"])
    if "model_config" in bt:
        path = Path(_string(wb, "model_config", bt["model_config"]))
        if not path.is_absolute() and base_dir is not None:
            path = Path(base_dir) / path  # relative to the case file, as a user reads it
        with _at(wb):
            model = ModelFacts.from_config(path, option="model_config")
    else:
        model = _string(wb, "model", bt["model"])
    kw = {k: bt[k] for k in ("tensor_parallel_size", "dtype", "gpu_memory_utilization", "gpu_memory_gib",
                             "max_model_len") if k in bt}
    for k in ("b_max", "k_max"):
        if k in budgets:
            kw[k] = budgets[k]
    if "kv_capacity_tokens" in budgets:
        kw["kv_capacity_tokens"] = budgets["kv_capacity_tokens"]
    from ..errors import ParameterError

    with _at(wb):
        try:
            eng = roofline_engine(model, gpu, **kw, name=name)
        except ParameterError as exc:  # the planner's "the weights do not fit": under the keys that chose it
            if exc.name != "gpu_memory_gib":
                raise
            hint = ("raise gpu_memory_utilization or tensor_parallel_size, or use a larger GPU"
                    if exc.hint and exc.hint.startswith("raise --") else exc.hint)
            if "gpu_memory_gib" in bt:
                raise ParameterError("gpu_memory_gib", exc.value, exc.expected, hint) from None
            raise ParameterError("gpu", f"{gpu} with tensor_parallel_size {kw.get('tensor_parallel_size', 1)}",
                                 exc.expected.replace("more memory: ", "a deployment that fits: ", 1)
                                 + f" [vLLM's planner on {exc.value:g} GiB per GPU as CUDA reports it]",
                                 hint) from None
    if "memory" in budgets:
        with _at(w):
            eng = eng.with_(memory=budgets["memory"])
    if models is not None:  # (the name roofline_engine read: the same table entry)
        from ..models import load_model

        models[name] = model if isinstance(model, ModelFacts) else load_model(model, option="model")
        if "max_model_len" in bt:  # the hops' context limit (checked by roofline_engine): vLLM refuses longer
            models[(name, "max_model_len")] = int(bt["max_model_len"])
    return eng


def _engine(source, name, e, base_dir=None, models=None):
    """The station ``name`` of the table ``e``.  ``models``: a dict that receives the station's model facts
    where the table names a model (a roofline engine's model, a profile's measured model in the shipped facts),
    for the context check of the hops (:func:`_check_context`)."""
    from ..batchtime import batch_time_from_dict
    from ..engine import Engine

    w = f"{source} engine {name!r}"
    if not isinstance(e, dict):
        raise _err(w, f"expected a table [engines.{name}] with batch_time and b_max (or profile), got {e!r}")
    _unknown(w, e, _ENGINE)
    budgets = {k: e[k] for k in ("b_max", "k_max", "kv_capacity_tokens") if k in e}
    if "memory" in e:
        budgets["memory"] = _memory(w, e)
    if "profile" in e:
        if "batch_time" in e:
            raise _err(w, "give either 'profile' or 'batch_time', not both")
        from ..profiles import load_profile

        prof = _string(w, "profile", e["profile"])
        with _at(w):
            profile = load_profile(prof)
            eng = profile.engine(**budgets).with_(name=name)
        if models is not None and profile.model:
            from ..models import find_model

            facts = find_model(profile.model)
            if facts is not None:
                models[name] = facts
    elif isinstance(e.get("batch_time"), dict) and e["batch_time"].get("kind") == "roofline":
        eng = _roofline(w, name, e["batch_time"], budgets, base_dir, models)
    else:
        if "batch_time" not in e or "b_max" not in e:
            raise _err(w, "needs 'batch_time' (a table with 'kind') and 'b_max', or 'profile'")
        bt = _table(w, "batch_time", e["batch_time"], '{ kind = "affine", c = 0.05, a = 0.0002 }')
        if "kind" not in bt:
            raise _err(w, f"batch_time = {bt!r}: needs 'kind' (affine, staircase, piecewise_linear, ...)")
        if bt["kind"] == "context_aware" and "base" in bt:
            _table(w, "batch_time base", bt["base"], '{ kind = "affine", c = 0.05, a = 0.0002 }')
        try:
            with _at(f"{w} batch_time"):
                bt = batch_time_from_dict(bt)
        except FluidqError:
            raise
        except KeyError as exc:
            raise _err(w, f"batch_time {bt!r}: needs key {exc.args[0]!r}") from None
        except (TypeError, ValueError, AttributeError) as exc:
            raise _err(w, f"batch_time {bt!r}: {_kwarg_words(exc)}") from None
        with _at(w):
            eng = Engine(batch_time=bt, name=name, **{"k_max": None, "kv_capacity_tokens": None, **budgets})
    priority = _strings(w, "priority", e.get("priority", []))
    with _at(w):
        return Station(name=name, engine=eng, policy=e.get("policy", "sarathi"), priority=priority)


def _memory(w, e):
    """The engine's ``memory``: ``"vllm"`` (:data:`fluidq.engine.VLLM`) or a table of Memory fields."""
    from ..engine import VLLM, Memory

    m = e["memory"]
    roof = isinstance(e.get("batch_time"), dict) and e["batch_time"].get("kind") == "roofline"
    if "kv_capacity_tokens" not in e and not roof:  # a roofline engine has vLLM's planned cache
        raise _err(w, f"memory = {m!r}: needs kv_capacity_tokens (the KV cache whose allocation it describes)")
    if isinstance(m, str):
        if m != "vllm":
            raise _err(w, f"memory = {m!r}: expected \"vllm\" or a table of Memory fields")
        return VLLM
    _table(w, "memory", m, '{ kind = "blocks", block_size = 16, prefix_caching = true } (or "vllm")')
    with _at(f"{w} memory"):
        return Memory.from_dict(m)


def _router(source, name, r):
    w = f"{source} router {name!r}"
    if not isinstance(r, dict):
        raise _err(w, f"expected a table [routers.{name}] with engines = [...], got {r!r}")
    _unknown(w, r, _ROUTER)
    if "engines" not in r:
        raise _err(w, "needs 'engines' (the stations behind the router)")
    engines = _strings(w, "engines", r["engines"])
    probs = r.get("probabilities")
    if probs is not None and not isinstance(probs, list):
        raise _err(w, f"probabilities = {probs!r}: expected an array of numbers, one per engine")
    with _at(w):
        return Router(name=name, engines=engines, policy=r.get("policy", "jsq"),
                      probabilities=None if probs is None else tuple(probs), count=r.get("count", "requests"))


def _request_class(source, k, c):
    if not isinstance(c, dict):
        raise _err(f"{source} class {k}", f"expected a table ([[classes]] with name, rate_per_s and route), "
                                          f"got {c!r}")
    if "name" not in c:
        raise _err(f"{source} class {k}", "needs 'name' and 'route'")
    name = _string(f"{source} class {k}", "name", c["name"])
    w = f"{source} class {name!r}"
    _unknown(w, c, _CLASS)
    if "route" not in c:
        raise _err(w, "needs 'name' and 'route'")
    if "arrival" in c:
        arrival, rate = _arrival(w, c), None
    elif "rate_per_s" in c:
        arrival, rate = None, c["rate_per_s"]
    else:
        raise _err(w, "needs 'rate_per_s' or 'arrival'")
    route = tuple(_steps(w, c["route"]))
    with _at(w):
        cls = RequestClass(name=name, route=route, arrival=arrival, rate_per_s=rate)
    if not _has_hop(cls.route):
        raise _err(w, "the route visits no engine; give at least one hop { engine = ..., prompt = ..., output = ... }")
    return cls


# ---------------------------------------------------------------------------------------------------

def network_from_dict(d: dict, *, source: str = "<dict>", base_dir=None) -> Network:
    """Build a :class:`Network` from the parsed TOML table (see the module docstring).

    Raises
    ------
    DataError, ParameterError, ParameterTypeError, TopologyError, UnknownNameError
        (all :class:`~fluidq.errors.FluidqError`) with a one-line message that starts with ``source``
        and the engine, router, class and step concerned, then names the key and the value.

    ``base_dir``: the folder a roofline engine's relative ``model_config`` path is read from (the case file's
    folder, for :func:`load_network`; default the working directory).
    """
    if not isinstance(d, dict):
        raise _err(source, f"expected a table, got {type(d).__name__}")
    _unknown(source, d, _TOP)
    name = _string(source, "name", d["name"]) if "name" in d else (
        Path(source).stem if source != "<dict>" else "network")
    if "description" in d:
        _string(source, "description", d["description"])
    engines = d.get("engines")
    if not isinstance(engines, dict) or not engines:
        raise _err(source, "needs an [engines.NAME] table for each engine")
    models: dict = {}  # station -> the model facts its table names (for the context of its hops)
    stations = [_engine(source, n, e, base_dir, models) for n, e in engines.items()]
    routers = d.get("routers", {})
    if not isinstance(routers, dict):
        raise _err(source, f"routers = {routers!r}: expected [routers.NAME] tables, "
                           "e.g. [routers.pool] with engines = [\"E1\", \"E2\"]")
    routers = [_router(source, n, r) for n, r in routers.items()]
    raw = d.get("classes")
    if not isinstance(raw, list) or not raw:
        raise _err(source, "needs at least one [[classes]] entry (an array of tables with name, rate_per_s "
                           f"and route), got {raw!r}")
    classes = [_request_class(source, k, c) for k, c in enumerate(raw, 1)]
    with _at(source):
        net = Network(stations=stations, classes=classes, routers=routers, claim=d.get("claim"), name=name)
    _check_context(source, net, models)
    if "bottleneck_load" in d:
        bl = d["bottleneck_load"]
        with _at(source):
            if isinstance(bl, bool) or not isinstance(bl, (int, float)) or not (bl > 0 and math.isfinite(bl)):
                raise ParameterError("bottleneck_load", bl, "a finite load > 0")
            try:
                net = net.at_load(float(bl))
            except ParameterError as exc:  # a class's rate left the representable range: the key that set it
                if not str(exc.name).endswith("rate_per_s"):
                    raise
                raise ParameterError("bottleneck_load", bl, "a load whose arrival rates stay representable "
                                     f"(a class would arrive at rate_per_s={exc.value:.4g}: {exc.expected})",
                                     exc.hint) from None
    return net


def _check_visited(source, net) -> None:
    """Refuse an engine that no class visits (no hop names it, nor a router over it): it would be accepted at load
    0 and say nothing, while it is most likely a typo in a hop's engine name or a table left over from an edit."""
    seen = net._visited()
    idle = [s.name for s in net.stations if s.name not in seen]
    if idle:
        visited = ", ".join(s.name for s in net.stations if s.name in seen)
        raise _err(f"{source} engine {idle[0]!r}", "no class visits it (no hop names it, nor a router over it), so "
                   "it would serve nothing at load 0: a typo in a hop's engine name, or a table left over? route a "
                   f"class through it or remove [engines.{idle[0]}] (engines the classes visit: {visited})"
                   + (f"; also unvisited: {', '.join(idle[1:])}" if idle[1:] else ""))


def _check_context(source, net, models) -> None:
    """Refuse a hop whose prompt + output passes the context of a station it runs on (the length vLLM
    derives from the station's model, its default ``--max-model-len``: vLLM refuses such a request), naming the class,
    the hop and the station, as ``--prompt``/``--output`` and ``--trace`` are refused for one engine.  A fixed
    length is checked as it is, a random one (geometric, Poisson, log-normal) by its mean, as ``--geometric``'s
    means are; a hop behind a router is checked on each station of the router."""
    if not models:
        return
    from ..models.context import derived_max_model_len

    def tokens(length) -> float:
        sup = length.support()
        return float(max(sup[0])) if sup is not None else float(length.mean)

    for cls in net.classes:
        for hop in route_hops(cls.route):
            for st in net.engines_of(hop.engine):
                facts = models.get(st)
                limit = models.get((st, "max_model_len")) or derived_max_model_len(facts)
                if not limit:
                    continue
                p, o = tokens(hop.prompt_tokens), tokens(hop.output_tokens)
                if p + o > limit:
                    words = ("the station's max_model_len (vLLM refuses a longer request); shorten the hop or raise "
                             "max_model_len" if (st, "max_model_len") in models else
                             f"{getattr(facts, 'name', '')}'s context (the length vLLM derives from its config.json, "
                             "vLLM's default --max-model-len; vLLM refuses a longer request); shorten the hop or give "
                             "the engine a model with a longer context")
                    random = [k for k, ln in (("prompt", hop.prompt_tokens), ("output", hop.output_tokens))
                              if ln.support() is None]
                    means = f" (the mean of its random {' and '.join(random)})" if random else ""
                    label = f"hop {hop.name!r}" if hop.name else "a hop"
                    raise _err(f"{source} class {cls.name!r} {label} on engine {st!r}",
                               f"prompt + output = {p:,.0f} + {o:,.0f} = {p + o:,.0f} tokens{means}: expected at most "
                               f"{int(limit):,} tokens, {words}")


CASES_DIR = Path(__file__).resolve().parent / "cases"
"""The case files shipped with fluidq."""


def case_names() -> list:
    """Names of the shipped case files (``fluidq network NAME`` reads them)."""
    return sorted(p.stem for p in CASES_DIR.glob("*.toml"))


def _resolve_case(path) -> Path:
    """The case file ``path`` names: a path that exists (checked by :func:`fluidq._io.input_file` when it is
    read), or a shipped case's name."""
    from .._io import input_file

    text = str(path) if path is not None else ""
    p = Path(text)
    try:
        st = p.stat() if text.strip() and "\x00" not in text else None
    except FileNotFoundError:
        st = None
    except (OSError, ValueError):
        input_file("case file", path, what="case file")  # one DataError saying why (a loop, a long name...)
        raise
    if st is not None:
        if p.is_dir():
            raise DataError(f"{_shown(p)}: is a folder, not a case file")
        return p
    if text.strip() and p.parent == Path("."):  # a bare name: NAME or NAME.toml among the shipped cases
        names = [p.name] if p.suffix == ".toml" else [p.name + ".toml", p.name]
        for d in (CASES_DIR, Path(__file__).resolve().parents[2] / "examples" / "cases"):
            for n in names:
                if (d / n).is_file():
                    return d / n
    if not text.strip() or "\x00" in text:
        input_file("case file", path, what="case file")  # an empty name: a ParameterError naming it
    raise DataError(f"no such case file: {_shown(text)} (a path, or one of the shipped cases: "
                    f"{', '.join(case_names())})")


def _shown(path) -> str:
    text = str(path)
    return text if len(text) <= 120 else text[:60] + "..." + text[-40:]


def load_network(path) -> Network:
    """Read a network from a TOML case file (see :mod:`fluidq.network.toml` for the format).

    ``path`` is a file path, or the name of a shipped case with or without ``.toml`` (see
    :func:`case_names`, e.g. ``"rybko_stolyar"``).
    """
    from .._io import read_text, toml_loads

    p = _resolve_case(path)
    # regular files only (a FIFO or device would block), bounded size, UTF-8 text: one DataError naming it
    text = read_text("case file", p, what="case file", max_bytes=MAX_CASE_BYTES)
    d = toml_loads(text, where=_shown(p))  # invalid or too deeply nested: one DataError naming the file
    net = network_from_dict(d, source=_shown(p), base_dir=p.parent)
    _check_visited(_shown(p), net)  # a file's engine table no class visits (a dict's: Network.describe notes it)
    return net
