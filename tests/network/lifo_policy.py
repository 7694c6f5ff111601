"""A user policy, last in first out, written once: tests/network/test_network_select_kernel.py checks the compiled
network loop's run of it against the Python clock's, and benchmarks/bench_network_select.py times it (the bench puts
this folder on sys.path, as benchmarks/bench_route_size.py does for long_route.py).  A helper imported by name, not
a test module."""
from __future__ import annotations

from fluidq.policies import Batch


class LIFO:
    """Decoders first (in view order, within the budget and k_max), then the latest arrivals' prompts, chunked."""

    name = "lifo"

    def select(self, v):
        b = v.b_max
        k = v.k_max if v.k_max is not None else 1 << 30
        dec = [r.rid for r in v.requests if not r.in_prefill and r.decode_left > 0][:min(b, k)]
        b -= len(dec)
        k -= len(dec)
        pre = []
        for r in reversed(v.requests):
            if r.in_prefill and b > 0 and k > 0:
                m = min(b, r.prefill_left)
                pre.append((r.rid, m))
                b -= m
                k -= 1
        return Batch(prefill=tuple(pre), decode=tuple(dec))
