"""Shared checks of the network-simulator tests."""
from __future__ import annotations

import numpy as np
import pytest


def _same_runs(a, b, *, exact=False):
    """Two runs of one network and seed agree: completions, mean sojourns (bit for bit when ``exact``,
    else to 1e-12), requests in system and every recorded token series."""
    assert a.completed == b.completed
    for k in a.completed:
        if exact:
            assert b.mean_sojourn_s[k] == a.mean_sojourn_s[k], k
        else:
            assert b.mean_sojourn_s[k] == pytest.approx(a.mean_sojourn_s[k], rel=1e-12), k
    assert np.array_equal(a.total_in_system, b.total_in_system)
    assert a.buffer_tokens.keys() == b.buffer_tokens.keys()
    for lab in a.buffer_tokens:
        assert np.array_equal(a.buffer_tokens[lab], b.buffer_tokens[lab]), lab
    for st in a.station_tokens:
        assert np.array_equal(a.station_tokens[st], b.station_tokens[st]), st


@pytest.fixture
def same_runs():
    """``same_runs(a, b, exact=False)``: assert that two simulated runs agree (see ``_same_runs``)."""
    return _same_runs
