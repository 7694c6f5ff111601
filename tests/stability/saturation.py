"""Served requests/s of an engine under overload, the measure the KV load-basis tests hold a basis to (as
validation/tools/kv_load_basis.py's ``saturated``): each seeded Sarathi run's second-half arrivals minus its request
backlog's slope there; mean and 95 % t-interval over the runs.  Imported by name (tests/conftest.py puts
tests/stability on sys.path) from tests/cli/test_kv_load_basis.py and tests/engine/test_roofline_memory_choice.py."""
import math

import numpy as np

import fluidq


def overload_served(engine, w, rate, *, seeds, horizon_s):
    """``(served per run, mean, half-width of the 95 % t-interval)`` over ``seeds`` runs (seeds 1000, 1001, ...)."""
    from scipy import stats

    served = []
    for seed in range(seeds):
        r = fluidq.simulate(engine, w.with_rate(rate), "sarathi", horizon_s=horizon_s, rng=1000 + seed)
        served.append(r.offered(0.5)["requests_per_s"] - r.backlog_slope("requests", 0.5))
    m, s = float(np.mean(served)), float(np.std(served, ddof=1))
    return served, m, float(stats.t.ppf(0.975, seeds - 1) * s / math.sqrt(seeds))
