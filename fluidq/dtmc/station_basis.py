"""The load basis of each station of a network at the mix of hops it serves (h-user6b).

``fluidq network`` printed a station's load at its mix on the mean-footprint basis of
:func:`fluidq.capacity.network.mix_capacity` (b/t(b) at the batch that mean request footprints allow), where the
KV cache binds 5-46 % above what the engine serves under the cache's rules, and above ``fluidq check``'s load for
the same engine, lengths and rate: Llama-3.1-8B on an A10G at 1500 + 100 tokens and 2.072 req/s read 0.7430 there
and 1.023 in ``check``.  :func:`station_load_bases` reads :func:`fluidq.dtmc.load_basis.load_basis` of each
station's (effective) engine at its mix instead, the one lambda* of ``check``, ``simulate``, ``latency`` and a
sweep.  It lives here, not in :mod:`fluidq.capacity.network`, for the reason :mod:`fluidq.dtmc.load_basis` gives
(``fluidq.capacity`` may not import the flow balance of ``fluidq.validate``).
"""
from __future__ import annotations

import numpy as np

from ..errors import FluidqError
from ..workload import Poisson, Workload
from .flow_basis import N_LENGTH_ROWS

__all__ = ["MIX_ROWS", "mix_workload", "station_load_bases"]

#: rows of the (prompt, output) pairs standing for a mix of several hops (each hop's share of the rows is its share
#: of the visits, rounded: within 1/(2 MIX_ROWS) of it)
MIX_ROWS = N_LENGTH_ROWS


def mix_workload(mix) -> Workload:
    """A :class:`~fluidq.Workload` (arrival rate 1, not read) whose lengths are the mix ``[(visit rate, Hop), ...]``:
    one hop's own lengths; for several, a trace of :data:`MIX_ROWS` (prompt, output) rows, each hop's share of them
    its share of the visits (largest remainders), its lengths drawn with a fixed seed (a fixed length repeated) --
    the rows the flow balance reads (:func:`fluidq.dtmc.flow_basis.length_rows`), pairing each hop's lengths as
    :func:`fluidq.capacity.network.mix_capacity` does."""
    from ..workload import Empirical
    from ..workload.traces import Trace

    if len(mix) == 1:
        hop = mix[0][1]
        return Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=hop.prompt_tokens,
                        output_tokens=hop.output_tokens)
    rates = np.array([r for r, _ in mix], dtype=float)
    share = rates / rates.sum() * MIX_ROWS
    counts = np.floor(share).astype(int)
    rest = MIX_ROWS - int(counts.sum())
    counts[np.argsort(-(share - counts), kind="stable")[:rest]] += 1
    rng = np.random.default_rng(0)
    p = np.concatenate([np.asarray(h.prompt_tokens.sample(rng, k), dtype=np.int64) for k, (_, h) in zip(counts, mix)])
    o = np.concatenate([np.asarray(h.output_tokens.sample(rng, k), dtype=np.int64) for k, (_, h) in zip(counts, mix)])
    tr = Trace(arrival_s=np.arange(len(p), dtype=float), prompt_tokens=p, output_tokens=o, source="station mix")
    return Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=Empirical(values=tuple(int(x) for x in p)),
                    output_tokens=Empirical(values=tuple(int(x) for x in o)), trace=tr)


def station_load_bases(network, stations=None) -> dict:
    """``{station: {"load", "rate_per_s", "load_basis", "load_basis_requests_per_s", "load_basis_tokens_per_s",
    "load_basis_reason"}}``: each station's load at the mix of hops it serves on the load basis of ``fluidq check``
    (:func:`fluidq.dtmc.load_basis.load_basis` of the station's engine under its scheduler's budgets and the mix's
    lengths): its visit rate over lambda*.  ``stations`` names the stations to read (default: those
    :func:`fluidq.capacity.network.mix_loads` reads, whose batch time reads the KV cache or which have one).  A
    station whose mix the basis cannot read (a prompt-only hop, no request that fits its cache) gets ``"load":
    None`` and the reason under ``"load_basis_reason"``; stations behind a pooled JSQ router are left out."""
    from ..capacity.network import _station_mix, mix_loads
    from ..engine.budgets import effective_engine
    from .load_basis import load_basis

    mix = _station_mix(network)
    names = list(mix_loads(network)) if stations is None else list(stations)
    by_name = {st.name: st for st in network.stations}
    out = {}
    for name in names:
        if name not in mix:
            continue
        st = by_name[name]
        rate = float(sum(r for r, _ in mix[name]))
        none = {"load": None, "rate_per_s": rate, "load_basis": None, "load_basis_requests_per_s": None,
                "load_basis_tokens_per_s": None}
        if any(h.output_tokens.mean == 0 for _, h in mix[name]):  # (a Workload's outputs are >= 1 token)
            out[name] = {**none, "load_basis_reason": "a prompt-only hop (no output tokens) in its mix, which no "
                                                      "load basis of one engine reads (its requests decode)"}
            continue
        try:
            lb = load_basis(effective_engine(st.engine, st.policy), mix_workload(mix[name]))
        except FluidqError as exc:
            out[name] = {**none, "load_basis_reason": f"the load basis cannot read this mix: {exc}"}
            continue
        load = rate / lb.requests_per_s if lb.requests_per_s > 0 else float("inf")
        out[name] = {"load": load, "rate_per_s": rate, **lb.to_dict()}
    return out
