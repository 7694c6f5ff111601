"""The comparison of a compiled run with the generic path's, shared by tests/sim/test_sim_kv_kernel.py and
tests/sim/test_sim_nokv_kernel.py: every request record, backlog row, counter and (when recorded) iteration record."""
import numpy as np

COUNTERS = ("n_iterations", "tokens_served", "busy_fraction", "mixed_batch_fraction", "preemptions", "wasted_tokens",
            "swap_tokens", "rejected", "peak_kv_tokens", "blocked", "end_s", "examined", "n_requests", "n_finished")


def assert_same(a, b, *, record):
    """The compiled run ``a`` equals the generic run ``b``.  ``record=True``: both must hold an iteration record (a
    kernel that ignored ``record_iterations`` fails here), compared column by column; ``record=False``: neither
    may."""
    assert (a.method, b.method) == ("fast", "generic")
    assert sorted(a.requests) == sorted(b.requests)
    for k in a.requests:
        np.testing.assert_array_equal(a.requests[k], b.requests[k], err_msg=k)
    for k in b.backlog:
        np.testing.assert_array_equal(a.backlog[k], b.backlog[k], err_msg=f"backlog {k}")
    if record:
        assert a.iterations is not None and b.iterations is not None
        assert sorted(a.iterations) == sorted(b.iterations)
        for k in b.iterations:
            np.testing.assert_array_equal(a.iterations[k], b.iterations[k], err_msg=f"iterations {k}")
    else:
        assert a.iterations is None and b.iterations is None
    for k in COUNTERS:
        assert getattr(a, k) == getattr(b, k), k
