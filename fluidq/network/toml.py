"""TOML case files for networks of engines (read with the standard library's ``tomllib``).

Format (every key is checked; an unknown key is an error naming it)::

    name = "llm-rybko-stolyar"
    claim = "dag"                 # optional: raise if the station graph has a cycle
    bottleneck_load = 0.9         # optional: scale all rates so the busiest point has this load

    [engines.E1]
    batch_time = { kind = "affine", c = 1.0, a = 0.0 }   # or profile = "<built-in profile>"
    b_max = 768
    k_max = 64                    # optional
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

Lengths are integers or tables ``{ dist = "geometric", mean = 100 }`` (also ``fixed`` with ``n``,
``poisson`` with ``mean``, ``lognormal`` with ``mean`` and ``sigma``); ``output = 0`` is a prompt-only hop.
"""
from __future__ import annotations

import tomllib
from pathlib import Path

from ..errors import DataError, ParameterError
from .model import Choice, Fork, Hop, Join, Network, RequestClass, Router, Station

__all__ = ["load_network", "network_from_dict"]

_TOP = {"name", "claim", "bottleneck_load", "engines", "routers", "classes", "description"}
_ENGINE = {"batch_time", "profile", "b_max", "k_max", "kv_capacity_tokens", "policy", "priority"}
_ROUTER = {"engines", "policy", "probabilities", "count"}
_CLASS = {"name", "rate_per_s", "arrival", "route"}


def _unknown(where, d, allowed):
    extra = set(d) - allowed
    if extra:
        raise DataError(f"{where}: unknown key {sorted(extra)[0]!r}; expected one of {', '.join(sorted(allowed))}")


def _length(where, v):
    from ..workload import Fixed, Geometric, LogNormal, PoissonLength

    if isinstance(v, (int, float)) and not isinstance(v, bool):
        return int(v) if float(v).is_integer() else v
    if isinstance(v, dict):
        d = dict(v)
        kind = d.pop("dist", None)
        try:
            if kind == "fixed":
                return Fixed(n=d.pop("n"))
            if kind == "geometric":
                return Geometric(mean_tokens=d.pop("mean"))
            if kind == "poisson":
                return PoissonLength(mean_tokens=d.pop("mean"))
            if kind == "lognormal":
                return LogNormal.from_mean(d.pop("mean"), d.pop("sigma"))
        except KeyError as exc:
            raise DataError(f"{where}: length {kind!r} needs key {exc.args[0]!r}") from None
        raise DataError(f"{where}: unknown length dist {kind!r}; expected fixed, geometric, poisson or lognormal")
    raise DataError(f"{where}: a length must be an integer or a table with 'dist', got {v!r}")


def _steps(where, raw):
    if not isinstance(raw, list):
        raise DataError(f"{where}: a route must be an array of steps, got {raw!r}")
    out = []
    for k, s in enumerate(raw, 1):
        w = f"{where} step {k}"
        if not isinstance(s, dict):
            raise DataError(f"{w}: a step must be a table, got {s!r}")
        if "engine" in s:
            _unknown(w, s, {"engine", "prompt", "output", "name"})
            for key in ("prompt", "output"):
                if key not in s:
                    raise DataError(f"{w}: a hop needs {key!r}")
            out.append(Hop(engine=s["engine"], prompt_tokens=_length(w, s["prompt"]),
                           output_tokens=_length(w, s["output"]), name=s.get("name")))
        elif "fork" in s:
            _unknown(w, s, {"fork", "branches"})
            br = s.get("branches")
            if not isinstance(br, list) or not br:
                raise DataError(f"{w}: fork {s['fork']!r} needs 'branches', an array of routes")
            out.append(Fork(name=s["fork"], branches=tuple(_steps(f"{w} branch {b}", x) for b, x in enumerate(br, 1))))
        elif "join" in s:
            _unknown(w, s, {"join"})
            out.append(Join(name=s["join"]))
        elif "choice" in s:
            _unknown(w, s, {"choice"})
            opts = []
            for o, opt in enumerate(s["choice"], 1):
                if not isinstance(opt, dict) or "p" not in opt:
                    raise DataError(f"{w} option {o}: needs 'p' (probability) and 'route'")
                _unknown(f"{w} option {o}", opt, {"p", "route"})
                opts.append((opt["p"], tuple(_steps(f"{w} option {o}", opt.get("route", [])))))
            out.append(Choice(options=tuple(opts)))
        else:
            raise DataError(f"{w}: a step needs one of 'engine', 'fork', 'join', 'choice'")
    return out


def network_from_dict(d: dict, *, source: str = "<dict>") -> Network:
    """Build a :class:`Network` from the parsed TOML table (see the module docstring)."""
    from ..batchtime import batch_time_from_dict
    from ..engine import Engine
    from ..workload import Gamma, Periodic, Poisson

    _unknown(source, d, _TOP)
    engines = d.get("engines")
    if not isinstance(engines, dict) or not engines:
        raise DataError(f"{source}: needs an [engines.NAME] table for each engine")
    stations = []
    for name, e in engines.items():
        w = f"{source} engine {name!r}"
        if not isinstance(e, dict):
            raise DataError(f"{w}: expected a table")
        _unknown(w, e, _ENGINE)
        if "profile" in e:
            if "batch_time" in e:
                raise DataError(f"{w}: give either 'profile' or 'batch_time', not both")
            from ..profiles import load_profile

            changes = {k: e[k] for k in ("b_max", "k_max") if k in e}
            eng = load_profile(e["profile"]).engine(**changes).with_(name=name)
        else:
            if "batch_time" not in e or "b_max" not in e:
                raise DataError(f"{w}: needs 'batch_time' (a table with 'kind') and 'b_max', or 'profile'")
            try:
                bt = batch_time_from_dict(e["batch_time"])
            except TypeError as exc:
                raise DataError(f"{w}: batch_time {e['batch_time']!r}: {exc}") from None
            eng = Engine(batch_time=bt, b_max=e["b_max"], k_max=e.get("k_max"),
                         kv_capacity_tokens=e.get("kv_capacity_tokens"), name=name)
        stations.append(Station(name=name, engine=eng, policy=e.get("policy", "sarathi"),
                                priority=tuple(e.get("priority", ()))))
    routers = []
    for name, r in (d.get("routers") or {}).items():
        w = f"{source} router {name!r}"
        _unknown(w, r, _ROUTER)
        if "engines" not in r:
            raise DataError(f"{w}: needs 'engines'")
        routers.append(Router(name=name, engines=tuple(r["engines"]), policy=r.get("policy", "jsq"),
                              probabilities=r.get("probabilities"), count=r.get("count", "requests")))
    classes = []
    raw = d.get("classes")
    if not isinstance(raw, list) or not raw:
        raise DataError(f"{source}: needs at least one [[classes]] entry")
    for k, c in enumerate(raw, 1):
        w = f"{source} class {c.get('name', k)!r}"
        _unknown(w, c, _CLASS)
        if "route" not in c or "name" not in c:
            raise DataError(f"{w}: needs 'name' and 'route'")
        arrival = None
        if "arrival" in c:
            a = dict(c["arrival"])
            kind = str(a.pop("kind", "poisson")).lower()
            kinds = {"poisson": Poisson, "periodic": Periodic, "gamma": Gamma}
            if kind not in kinds:
                raise DataError(f"{w}: arrival kind {kind!r}; expected poisson, periodic or gamma")
            arrival = kinds[kind](**a)
        elif "rate_per_s" not in c:
            raise DataError(f"{w}: needs 'rate_per_s' or 'arrival'")
        classes.append(RequestClass(name=c["name"], route=tuple(_steps(w, c["route"])), arrival=arrival,
                                    rate_per_s=c.get("rate_per_s") if arrival is None else None))
    net = Network(stations=stations, classes=classes, routers=routers, claim=d.get("claim"),
                  name=d.get("name", Path(source).stem if source != "<dict>" else "network"))
    if "bottleneck_load" in d:
        bl = d["bottleneck_load"]
        if isinstance(bl, bool) or not isinstance(bl, (int, float)) or not bl > 0:
            raise ParameterError("bottleneck_load", bl, "a load > 0")
        net = net.at_load(float(bl))
    return net


CASES_DIR = Path(__file__).resolve().parent / "cases"
"""The case files shipped with fluidq."""


def case_names() -> list:
    """Names of the shipped case files (``fluidq network NAME`` reads them)."""
    return sorted(p.stem for p in CASES_DIR.glob("*.toml"))


def _resolve_case(path) -> Path:
    p = Path(path)
    if p.exists():
        return p
    if p.parent == Path("."):  # a bare name: NAME or NAME.toml among the shipped cases, then a checkout's
        names = [p.name] if p.suffix == ".toml" else [p.name + ".toml", p.name]
        for d in (CASES_DIR, Path(__file__).resolve().parents[2] / "examples" / "cases"):
            for n in names:
                if (d / n).is_file():
                    return d / n
    raise FileNotFoundError(f"no such case file: {path} (a path, or one of the shipped cases: "
                            f"{', '.join(case_names())})")


def load_network(path) -> Network:
    """Read a network from a TOML case file (see :mod:`fluidq.network.toml` for the format).

    ``path`` is a file path, or the name of a shipped case with or without ``.toml`` (see
    :func:`case_names`, e.g. ``"rybko_stolyar"``).
    """
    p = _resolve_case(path)
    try:
        with open(p, "rb") as fh:
            d = tomllib.load(fh)
    except tomllib.TOMLDecodeError as exc:
        raise DataError(f"{p}: not valid TOML ({exc})") from None
    return network_from_dict(d, source=str(p))
