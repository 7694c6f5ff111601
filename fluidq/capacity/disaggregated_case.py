"""A disaggregated prefill/decode tandem as one topology: the description, its verdict (fluid, and
seeded replications of the tandem simulation), and the TOML case file ``fluidq network`` reads.

:class:`DisaggregatedTopology` holds what :func:`~fluidq.capacity.disaggregated.disaggregated_capacity`
takes -- the two pools' engines and sizes, the KV link, the KV bytes per token, the workload (its
arrival rate included) -- so that it can be passed around, rescaled to a load of its bottleneck
(:meth:`~DisaggregatedTopology.at_load`) and checked (:func:`check_disaggregated`): the fluid verdict
(stable below the smallest stage rate, unstable above), and with ``simulate=True`` seeded replications of
:func:`~fluidq.capacity.disaggregated_sim.simulate_disaggregated`, whose 95 % interval of the backlog's
growth share decides the simulated verdict; the result says whether the two agree.

Case file (``fluidq network CASE.toml``; every key is checked, an unknown key is an error naming it)::

    name = "pd-llama-3.1-8b-h100"
    bottleneck_load = 0.9           # optional: the arrival rate set to this load of the bottleneck

    [disaggregated]
    prefill_engines = 2
    decode_engines = 3
    links = 1                       # optional: links each prefill engine sends over (default: one per
                                    # tensor-parallel rank)
    # either a deployment without profiles (the calibrated roofline, vLLM's planned KV cache on both pools) ...
    model = "Llama-3.1-8B"          # or model_config = "path/to/config.json"
    gpu = "H100"
    tensor_parallel_size = 1        # optional; also max_num_seqs, max_num_batched_tokens,
                                    # gpu_memory_utilization (vLLM's defaults 256, 2048, 0.9)
    # ... or the two engines as a network case's [engines.NAME] tables:
    # prefill = { batch_time = { kind = "affine", c = 0.01, a = 1e-4 }, b_max = 2000 }
    # decode = { batch_time = { kind = "affine", c = 0.02, a = 1e-6 }, b_max = 2048, k_max = 64 }
    # kv_bytes_per_token = 131072   (required with explicit engines; from the model otherwise)
    link = { bandwidth_gbps = 50, latency_us = 10 }   # optional with gpu: its interconnect

    [workload]
    rate_per_s = 5.0
    prompt = 1000                   # an integer or a length table, as in network cases
    output = { dist = "geometric", mean = 200 }

References: Patel et al., "Splitwise", arXiv:2311.18677; Zhong et al., "DistServe", arXiv:2401.09670.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from pathlib import Path

from .._validate import integer, real
from ..batchtime.comm import Link
from ..engine import Engine
from ..errors import DataError, FluidqError, ParameterError
from ..results import plain
from ..workload import Workload
from .disaggregated import DisaggregatedResult, disaggregated_capacity

__all__ = ["DisaggregatedTopology", "DisaggregatedVerdict", "check_disaggregated", "topology_from_dict",
           "load_topology", "is_disaggregated_case", "case_names", "CASES_DIR"]

CASES_DIR = Path(__file__).resolve().parent / "disaggregated_cases"
"""The disaggregated case files shipped with fluidq (``fluidq network NAME``)."""

#: arrivals per replication when no horizon is given (the backlog test's resolution is 1 % of them)
DEFAULT_ARRIVALS = 3000
#: a run shorter than this many request sojourns (:func:`sojourn_s`) cannot call a tandem unstable: it starts
#: empty, and while the pools fill the requests in the system grow as an overload's backlog does (Mistral-7B on
#: 2 + 6 A100-PCIe engines, 200 + 1000 tokens, at 0.9 of its fluid capacity, a sojourn of 36.9 s: five runs of
#: 53 s (1.4 sojourns) read a growth share of 0.104, 95 % CI 0.072 to 0.136, "unstable"; three of 80 s and four of
#: 96 s (2.6) 0.020 and 0.010, CIs -0.073 to 0.113 and -0.050 to 0.071; four of 143 s (3.9) -0.0001, CI -0.039 to
#: 0.039, "stable"; 2026-12-07; five sojourns leave a margin over that one case)
MIN_SOJOURNS = 5.0
#: the automatic horizon covers at least this many sojourns (beside DEFAULT_ARRIVALS arrivals)
DEFAULT_SOJOURNS = 6.0


@dataclass(frozen=True)
class DisaggregatedTopology:
    """``n_prefill`` prefill engines, a KV transfer over ``links`` x ``link`` per prefill engine, and
    ``n_decode`` decode engines, under ``workload`` (see :mod:`fluidq.capacity.disaggregated`)."""

    prefill: Engine
    decode: Engine
    n_prefill: int
    n_decode: int
    link: Link
    kv_bytes_per_token: float
    workload: Workload
    links: int = 1
    gpus_per_engine: int = 1
    name: str = "disaggregated"
    source: str = ""

    def __post_init__(self):
        for f in ("prefill", "decode"):
            if not isinstance(getattr(self, f), Engine):
                raise ParameterError(f, getattr(self, f), "a fluidq.Engine")
        if not isinstance(self.link, Link):
            raise ParameterError("link", self.link, "a fluidq.batchtime.comm.Link (bandwidth_gbps, latency_us)")
        if not isinstance(self.workload, Workload):
            raise ParameterError("workload", self.workload, "a fluidq.Workload (its arrival rate and lengths)")
        for f in ("n_prefill", "n_decode", "links", "gpus_per_engine"):
            object.__setattr__(self, f, integer(f, getattr(self, f), minimum=1, maximum=4096))
        object.__setattr__(self, "kv_bytes_per_token", real("kv_bytes_per_token", self.kv_bytes_per_token,
                                                            positive=True))

    @property
    def rate_per_s(self) -> float:
        return self.workload.arrival_rate_per_s

    def capacity(self) -> DisaggregatedResult:
        """:func:`~fluidq.capacity.disaggregated.disaggregated_capacity` at the workload's rate (the
        verdict and load included)."""
        return disaggregated_capacity(self.prefill, self.decode, self.workload, n_prefill=self.n_prefill,
                                      n_decode=self.n_decode, link=self.link,
                                      kv_bytes_per_token=self.kv_bytes_per_token, links=self.links,
                                      gpus_per_engine=self.gpus_per_engine, rate=self.rate_per_s)

    def at_load(self, load: float) -> DisaggregatedTopology:
        """The same tandem with the arrival rate set to ``load`` x its capacity (the bottleneck's load)."""
        x = real("load", load, positive=True)
        cap = self.capacity().requests_per_s
        if not (cap > 0 and math.isfinite(cap)):
            raise ParameterError("load", load, "a tandem of positive, finite capacity to scale",
                                 f"its capacity is {cap:g} requests/s")
        return replace(self, workload=self.workload.with_rate(x * cap))

    def describe(self) -> str:
        kv = self.decode.kv_capacity_tokens
        kv = "no KV cache limit" if kv is None else f"KV cache {kv:,} tokens"
        return (f"{self.name}: {self.n_prefill} prefill engine(s) [{self.prefill.batch_time.describe()}, "
                f"b_max={self.prefill.b_max}] -> KV transfer ({self.kv_bytes_per_token:,.0f} B/token over "
                f"{self.links} x {self.link.describe()}) -> {self.n_decode} decode engine(s) "
                f"[{self.decode.batch_time.describe()}, b_max={self.decode.b_max}, k_max={self.decode.k_max}, "
                f"{kv}]; {self.workload.arrival_rate_per_s:.4g} req/s")

    def to_dict(self) -> dict:
        return plain({"kind": "disaggregated", "name": self.name, "n_prefill": self.n_prefill,
                      "n_decode": self.n_decode, "prefill": self.prefill.to_dict(), "decode": self.decode.to_dict(),
                      "link": {"bandwidth_gbps": self.link.bandwidth_gbps, "latency_us": self.link.latency_us,
                               "name": self.link.name},
                      "links": self.links, "kv_bytes_per_token": self.kv_bytes_per_token,
                      "gpus_per_engine": self.gpus_per_engine, "rate_per_s": self.rate_per_s,
                      "mean_prompt_tokens": self.workload.mean_prompt_tokens,
                      "mean_output_tokens": self.workload.mean_output_tokens, "source": self.source})


@dataclass(frozen=True)
class DisaggregatedVerdict:
    """The fluid verdict of a tandem and, when simulated, the replications' verdict beside it."""

    topology: DisaggregatedTopology
    fluid: DisaggregatedResult
    simulation: object = None  # a PDReplications
    horizon_s: float | None = None
    sojourn_s: float | None = None  # sojourn_s(topology), with a simulation

    @property
    def too_short(self) -> bool:
        """Whether the runs were shorter than :data:`MIN_SOJOURNS` request sojourns: the filling pools then
        look like a growing backlog, so the runs cannot call the tandem unstable (a stable reading stands)."""
        return (self.simulation is not None and self.sojourn_s is not None
                and self.horizon_s < MIN_SOJOURNS * self.sojourn_s)

    @property
    def status(self) -> str:
        """The fluid verdict (``stable`` below the bottleneck stage's rate, ``unstable`` above)."""
        return self.fluid.verdict

    @property
    def simulated(self) -> str | None:
        """The replications' three-way decision (:attr:`PDReplications.decision
        <fluidq.capacity.disaggregated_sim.PDReplications.decision>`), ``None`` without simulation."""
        if self.simulation is None:
            return None
        d = self.simulation.decision
        return "inconclusive" if d == "unstable" and self.too_short else d

    @property
    def inconclusive_why(self) -> str | None:
        """Why the simulated decision is ``inconclusive`` (``None`` when it is not)."""
        if self.simulated != "inconclusive":
            return None
        if self.simulation.decision == "unstable":  # a growth the filling pools can explain
            return (f"inconclusive (the backlog grew, but runs of {self.horizon_s:.4g} s are under {MIN_SOJOURNS:g} "
                    f"request sojourns of {self.sojourn_s:.3g} s: the pools were still filling; a horizon of at "
                    f"least {MIN_SOJOURNS * self.sojourn_s:.4g} s decides)")
        return "inconclusive (the interval reaches both 1 % and 5 %: more --replications or a longer --horizon)"

    @property
    def withheld(self) -> bool:
        """Whether the fluid model withheld its verdict (``critical`` within the tolerance of the capacity,
        ``unknown`` in the band of a KV-bound estimate): then the simulation decides, and cannot disagree."""
        return self.fluid.verdict in ("critical", "unknown")

    @property
    def agree(self) -> bool | None:
        """Whether the simulation decided as the fluid model did (``None``: not simulated, inconclusive, or the
        fluid model withheld its verdict -- :attr:`withheld`)."""
        if self.simulated in (None, "inconclusive") or self.withheld:
            return None
        return self.simulated == self.fluid.verdict

    @property
    def reason(self) -> str:
        txt = self.fluid.reason
        if self.simulation is not None:
            s = self.simulation
            lo, hi = s.growth_share_ci
            txt += (f"; simulated ({len(s.runs)} replications of {self.horizon_s:.4g} s): backlog growth "
                    f"{s.growth_share:.3g} of the arrivals (95 % CI {lo:.3g} to {hi:.3g}; fluid "
                    f"{max(0.0, 1 - 1 / self.fluid.load):.3g}), throughput {s.throughput_per_s:.4g} req/s: "
                    + (f"{self.simulated}, {'agrees' if self.agree else 'DISAGREES'} with the fluid verdict"
                       if self.agree is not None else
                       f"{s.decision}: the simulation decides (the fluid verdict is {self.fluid.verdict}, withheld)"
                       if self.withheld and self.simulated != "inconclusive" else self.inconclusive_why))
        return txt

    def to_dict(self) -> dict:
        return plain({"status": self.status, "bottleneck": self.fluid.bottleneck, "load": self.fluid.load,
                      "fluid": self.fluid.to_dict(), "simulated": self.simulated, "agree": self.agree,
                      "horizon_s": self.horizon_s, "sojourn_s": self.sojourn_s,
                      "simulation": None if self.simulation is None else self.simulation.to_dict(),
                      "reason": self.reason, "topology": self.topology.to_dict()})


def sojourn_s(topology: DisaggregatedTopology) -> float:
    """Seconds a request spends in the tandem at its capacity's operating point, queues aside: its prompt's
    prefill iterations (chunks of ``b_max`` tokens), the transfer (latency and bytes), and ``m_d - 1`` decode
    iterations among the ``N`` residents the fluid model puts on a decode engine.  A run that starts empty
    fills the pools for about this long; :data:`MIN_SOJOURNS` and :data:`DEFAULT_SOJOURNS` are counted in it."""
    from . import mean_resident_context

    t, w = topology, topology.workload
    mp, md, kv_bar = w.mean_prompt_tokens, w.mean_output_tokens, mean_resident_context(w)
    chunk = float(min(mp, t.prefill.b_max))
    pre = math.ceil(mp / t.prefill.b_max) * float(t.prefill.batch_time(chunk, 0.0))
    link = t.link.latency_us * 1e-6 + mp * t.kv_bytes_per_token / (t.links * t.link.bandwidth_gbps * 1e9)
    n = float(max(t.capacity().decode_residents, 1))
    dec = max(md - 1.0, 0.0) * float(t.decode.batch_time(n, n * kv_bar))
    return pre + link + dec


def default_horizon(topology: DisaggregatedTopology) -> float:
    """Seconds that bring :data:`DEFAULT_ARRIVALS` arrivals at the topology's rate, and at least
    :data:`DEFAULT_SOJOURNS` request sojourns (:func:`sojourn_s`: long decodes fill the pools for tens of
    seconds)."""
    return max(DEFAULT_ARRIVALS / topology.rate_per_s, DEFAULT_SOJOURNS * sojourn_s(topology))


def check_disaggregated(topology: DisaggregatedTopology, *, simulate: bool = False, horizon_s: float | None = None,
                        replications: int = 4, seed: int = 0) -> DisaggregatedVerdict:
    """The tandem's fluid verdict at its workload's rate; with ``simulate``, ``replications`` seeded runs of
    the tandem simulation (``horizon_s`` each, default :func:`default_horizon`: :data:`DEFAULT_ARRIVALS`
    arrivals and at least :data:`DEFAULT_SOJOURNS` request sojourns) beside it; runs shorter than
    :data:`MIN_SOJOURNS` sojourns cannot call it unstable (:attr:`DisaggregatedVerdict.too_short`)."""
    from .disaggregated_sim import replicate_disaggregated

    if not isinstance(topology, DisaggregatedTopology):
        raise ParameterError("topology", topology, "a DisaggregatedTopology")
    fluid = topology.capacity()
    if not simulate:
        return DisaggregatedVerdict(topology=topology, fluid=fluid)
    T = default_horizon(topology) if horizon_s is None else real("horizon_s", horizon_s, positive=True)
    t = topology
    reps = replicate_disaggregated(t.prefill, t.decode, t.workload, n_prefill=t.n_prefill, n_decode=t.n_decode,
                                   link=t.link, kv_bytes_per_token=t.kv_bytes_per_token, horizon_s=T, links=t.links,
                                   replications=replications, seed=seed)
    return DisaggregatedVerdict(topology=topology, fluid=fluid, simulation=reps, horizon_s=T,
                                sojourn_s=sojourn_s(topology))


# ---------------------------------------------------------------------------------------------------
# the case file

_TOP = {"name", "description", "bottleneck_load", "disaggregated", "workload"}
_DIS = {"prefill_engines", "decode_engines", "links", "model", "model_config", "gpu", "tensor_parallel_size",
        "max_num_seqs", "max_num_batched_tokens", "gpu_memory_utilization", "prefill", "decode",
        "kv_bytes_per_token", "link"}
_WL = {"rate_per_s", "prompt", "output"}


def _err(where, msg):
    return DataError(f"{where}: {msg}")


def _unknown(where, d, allowed):
    bad = sorted(set(d) - allowed)
    if bad:
        raise _err(where, f"unknown key {bad[0]!r} (expected one of {', '.join(sorted(allowed))})")


def _need(where, d, keys, why=""):
    """A :func:`_err` naming the first of ``keys`` missing from table ``d`` (``why`` says what it is)."""
    for k in keys:
        if k not in d:
            raise _err(where, f"needs {k}{f' ({why})' if why else ''}")


def _table(where, key, v):
    if not isinstance(v, dict):
        raise _err(where, f"{key} = {v!r}: expected a table")
    return v


def _number(where, key, v, *, kind=float, **kw):
    if isinstance(v, bool) or not isinstance(v, (int, float)):
        raise _err(where, f"{key} = {v!r}: expected a number")
    try:
        return integer(key, v, **kw) if kind is int else real(key, v, **kw)
    except ParameterError as exc:
        raise _err(where, str(exc)) from None


def _roofline_engines(w, d):
    from ..batchtime.roofline import roofline
    from ..models import ModelFacts, kv_capacity_estimate, load_gpu, load_model

    if ("model" in d) == ("model_config" in d):
        raise _err(w, "give the model once: model = NAME or model_config = \"config.json\"")
    if "gpu" not in d:
        raise _err(w, "a deployment without profiles needs gpu = NAME (see `fluidq gpus`)")
    for k in ("prefill", "decode", "kv_bytes_per_token"):
        if k in d:
            raise _err(w, f"{k!r} describes an engine of its own: give either model/gpu or prefill/decode "
                          "(with kv_bytes_per_token), not both")
    try:
        model = (ModelFacts.from_config(d["model_config"], option="model_config") if "model_config" in d
                 else load_model(str(d["model"]), option="model"))
        gpu = load_gpu(str(d["gpu"]), option="gpu")
    except FluidqError as exc:
        raise _err(w, str(exc)) from None
    tp = _number(w, "tensor_parallel_size", d.get("tensor_parallel_size", 1), kind=int, minimum=1, maximum=64)
    k_max = _number(w, "max_num_seqs", d.get("max_num_seqs", 256), kind=int, minimum=1, maximum=1 << 20)
    b_max = _number(w, "max_num_batched_tokens", d.get("max_num_batched_tokens", 2048), kind=int, minimum=1,
                    maximum=1 << 24)
    util = _number(w, "gpu_memory_utilization", d.get("gpu_memory_utilization", 0.9), positive=True, maximum=1.0)
    try:
        rf = roofline(model, gpu, tp)
        kv = kv_capacity_estimate(model, gpu_memory_gib=gpu.memory_gib, gpu_memory_utilization=util,
                                  tensor_parallel_size=tp, max_num_batched_tokens=b_max, max_num_seqs=k_max).tokens
    except ParameterError as exc:
        if exc.name != "gpu_memory_gib":
            raise _err(w, str(exc)) from None
        # the planner's "the weights do not fit": the file's gpu and tensor_parallel_size chose that memory, and
        # its advice names the keys of this file, not the CLI's flags
        txt = exc.expected.replace("more memory: ", "a deployment that fits: ", 1) + (
            f" ({exc.hint})" if exc.hint else "")
        for flag in ("gpu-memory-utilization", "tensor-parallel-size"):
            txt = txt.replace(f"--{flag}", flag.replace("-", "_"))
        raise _err(w, f"gpu = {gpu.name!r} with tensor_parallel_size = {tp}: expected {txt} [vLLM's planner on "
                      f"{exc.value:g} GiB per GPU]") from None
    except FluidqError as exc:
        raise _err(w, str(exc)) from None
    pre = Engine(batch_time=rf, b_max=b_max, kv_capacity_tokens=kv, name="prefill")  # each pool its own memory
    dec = Engine(batch_time=rf, b_max=b_max, k_max=k_max, kv_capacity_tokens=kv, name="decode")
    link = Link(bandwidth_gbps=gpu.link_bandwidth_gbps, latency_us=gpu.link_latency_us, name=gpu.interconnect,
                source=gpu.name)
    return pre, dec, float(model.kv_bytes_per_token()), link, tp


def topology_from_dict(d: dict, *, source: str = "<dict>") -> DisaggregatedTopology:
    """Build a :class:`DisaggregatedTopology` from a parsed case table (see the module docstring); every
    mistake is one :class:`~fluidq.errors.DataError` naming the file, the table and the key."""
    from ..network.toml import _engine, _length
    from ..workload import Poisson

    if not isinstance(d, dict):
        raise _err(source, f"expected a table, got {type(d).__name__}")
    _unknown(source, d, _TOP)
    name = str(d.get("name", Path(source).stem if source != "<dict>" else "disaggregated"))
    w = f"{source} [disaggregated]"
    dis = _table(source, "disaggregated", d.get("disaggregated"))
    _unknown(w, dis, _DIS)
    _need(w, dis, ("prefill_engines", "decode_engines"), "the pool's size")
    n_p = _number(w, "prefill_engines", dis["prefill_engines"], kind=int, minimum=1, maximum=4096)
    n_d = _number(w, "decode_engines", dis["decode_engines"], kind=int, minimum=1, maximum=4096)
    if "model" in dis or "model_config" in dis or "gpu" in dis:
        pre, dec, kvb, link, tp = _roofline_engines(w, dis)
    else:
        _need(w, dis, ("prefill", "decode", "kv_bytes_per_token", "link"),
              "or model and gpu: a deployment without profiles")
        for k in ("tensor_parallel_size", "max_num_seqs", "max_num_batched_tokens", "gpu_memory_utilization"):
            if k in dis:
                raise _err(w, f"{k} is read only with model and gpu (the engines' tables carry their budgets)")
        pre = _engine(source, "prefill", _table(w, "prefill", dis["prefill"])).engine
        dec = _engine(source, "decode", _table(w, "decode", dis["decode"])).engine
        kvb = _number(w, "kv_bytes_per_token", dis["kv_bytes_per_token"], positive=True)
        link, tp = None, 1
    # one link per tensor-parallel rank by default (each rank sends its share of the KV), as `fluidq disagg`
    links = _number(w, "links", dis.get("links", tp), kind=int, minimum=1, maximum=4096)
    if "link" in dis:
        lk = _table(w, "link", dis["link"])
        _unknown(f"{w} link", lk, {"bandwidth_gbps", "latency_us", "name"})
        _need(f"{w} link", lk, ("bandwidth_gbps", "latency_us"))
        try:
            link = Link(bandwidth_gbps=lk["bandwidth_gbps"], latency_us=lk["latency_us"],
                        name=str(lk.get("name", "KV link")))
        except ParameterError as exc:
            raise _err(f"{w} link", str(exc)) from None
    ww = f"{source} [workload]"
    wl = _table(source, "workload", d.get("workload"))
    _unknown(ww, wl, _WL)
    _need(ww, wl, ("prompt", "output"), "tokens: an integer or a length table")
    rate = _number(ww, "rate_per_s", wl.get("rate_per_s", 1.0), positive=True)
    try:
        workload = Workload(arrival=Poisson(rate_per_s=rate), prompt_tokens=_length(ww, "prompt", wl["prompt"]),
                            output_tokens=_length(ww, "output", wl["output"]), name=name)
    except ParameterError as exc:  # name the file's key (prompt, output), not the Workload's parameter
        key = {"prompt_tokens": "prompt", "output_tokens": "output"}.get(exc.name, exc.name)
        raise _err(ww, f"{key} = {exc.value!r}: expected {exc.expected}") from None
    try:
        topo = DisaggregatedTopology(prefill=pre, decode=dec, n_prefill=n_p, n_decode=n_d, link=link,
                                     kv_bytes_per_token=kvb, workload=workload, links=links, gpus_per_engine=tp,
                                     name=name, source=source)
    except ParameterError as exc:
        raise _err(source, str(exc)) from None
    _fits(ww, topo, wl)
    if "bottleneck_load" in d:
        bl = _number(source, "bottleneck_load", d["bottleneck_load"], positive=True)
        try:
            topo = topo.at_load(bl)
        except ParameterError as exc:  # the rate it sets is out of range: say which key set it
            raise _err(source, f"bottleneck_load = {bl:g} sets {exc}") from None
    return topo


def _fits(where: str, topo: DisaggregatedTopology, wl: dict) -> None:
    """Refuse lengths whose prompt no prefill engine, or whose request no decode engine, can hold (the tandem
    serves nothing: its capacity is 0, while its simulation refuses every request at arrival and would call the
    empty tandem stable), naming the [workload] keys -- as `fluidq disagg` names --input-len/--output-len."""
    from .disaggregated import decode_rate, prefill_memory_rate

    w = topo.workload
    lengths = f"prompt = {wl['prompt']!r}, output = {wl['output']!r}"
    pre = topo.prefill.kv_capacity_tokens
    if prefill_memory_rate(topo.prefill, w, 1.0, 1.0) == 0.0:
        raise _err(where, f"{lengths}: expected lengths whose mean prompt ({w.mean_prompt_tokens:.6g} tokens) fits "
                          f"the prefill engine's KV cache ({pre:,} tokens)")
    if decode_rate(topo.decode, w)[0] <= 0:
        from . import mean_resident_context

        raise _err(where, f"{lengths}: expected lengths whose mean resident context "
                          f"({mean_resident_context(w):.6g} tokens) fits the decode engine's KV cache "
                          f"({topo.decode.kv_capacity_tokens:,} tokens)")


def case_names() -> list:
    """Names of the shipped disaggregated case files."""
    return sorted(p.stem for p in CASES_DIR.glob("*.toml"))


def _resolve(path) -> Path | None:
    text = str(path)
    p = Path(text)
    try:
        if p.is_file():
            return p
    except (OSError, ValueError):
        return None
    if text.strip() and p.parent == Path("."):
        for n in ([p.name] if p.suffix == ".toml" else [p.name + ".toml"]):
            if (CASES_DIR / n).is_file():
                return CASES_DIR / n
    return None


def _read(p: Path) -> dict:
    from .._io import read_text, toml_loads

    text = read_text("case file", p, what="case file", max_bytes=1 << 20)
    return toml_loads(text, where=str(p))


def is_disaggregated_case(path) -> bool:
    """Whether ``path`` (a file, or a shipped name) is a case file with a ``[disaggregated]`` table; a
    file that cannot be read is not (the network reader then says why)."""
    p = _resolve(path)
    if p is None:
        return False
    if p.parent == CASES_DIR:
        return True
    try:
        d = _read(p)
    except FluidqError:
        return False
    return isinstance(d, dict) and "disaggregated" in d


def load_topology(path) -> DisaggregatedTopology:
    """Read a disaggregated case file (a path, or a shipped case's name: :func:`case_names`)."""
    p = _resolve(path)
    if p is None:
        raise DataError(f"no such disaggregated case file: {path} (a path, or one of the shipped cases: "
                        f"{', '.join(case_names())})")
    return topology_from_dict(_read(p), source=str(p) if p.parent != CASES_DIR else p.name)
