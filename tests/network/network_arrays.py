"""Every output of seeded network runs as named arrays, written once: the compiled-against-uncompiled checks of the
network loop (tests/network/test_network_select_kernel.py, test_network_select_kv.py,
tests/kernel/test_network_kernel_compiled.py) compute them in the test's process and again in a child process with
``NUMBA_DISABLE_JIT=1`` (the test file run as a script), and compare them array for array.  A helper imported by
name (each file puts tests/network on sys.path), not a test module."""
from __future__ import annotations

import numpy as np

from fluidq.network import simulate_network


def run_arrays(cases, *, kv_counts: bool = False) -> dict:
    """``cases``: ``(label, network, horizon, keyword arguments)``; each is simulated with ``method="kernel"`` and
    ``rng=7``.  ``{label}/counts`` holds the batches, events, completions per class and blocked requests (and with
    ``kv_counts`` the preemptions and rejections per station after them); then the mean sojourns, the recorded
    series and the hop records."""
    res = {}
    for label, net, horizon, kw in cases:
        r = simulate_network(net, horizon_s=horizon, rng=7, method="kernel", **kw)
        counts = [r.batches, r.events, *r.completed.values(), len(r.blocked)]
        if kv_counts:
            counts += [*r.preemptions.values(), *r.rejected.values()]
        res[f"{label}/counts"] = np.array(counts)
        res[f"{label}/sojourn"] = np.array([np.nan if v is None else v for v in r.mean_sojourn_s.values()])
        for field in ("in_system", "buffer_tokens", "station_tokens", "station_requests"):
            for k, v in getattr(r, field).items():
                res[f"{label}/{field}/{k}"] = np.asarray(v)
        for k, v in (r.hops or {}).items():
            res[f"{label}/hops/{k}"] = np.asarray(v)
    return res
