"""A load at a band edge is at it, not past it (independent review, finding 3).

``fluidq check --profile-dir ... --load 0.95`` reads the load back from the rate it set; on some lengths that is
0.9499999999999998, and the verdict was "stable: the load 0.9500 is below 0.95 times the capacity" (float noise
deciding a verdict at the edge of the flow balance's 0.95-1.05 band).  Now a load within float noise of an edge
is at it, where the estimate decides nothing (too close to call), on every length; a load clearly below is
decided, and the message names the edge the rule reads."""
import json

import pytest

from fluidq.testing.cli import run_cli


def _verdict(folder, capsys, prompt, load):
    rc, out, err = run_cli(["check", "--profile-dir", str(folder), "--kv-capacity", "2000000", "--prompt", str(prompt),
                            "--output", "100", "--load", str(load), "--policy", "sarathi", "--method", "analytic",
                            "--json"], capsys)
    assert rc == 0, err
    return json.loads(out)


def test_load_at_the_band_edge_is_too_close_to_call_on_every_length(tmp_path, capsys):
    from flow_profile import META, write_profile  # tests/stability/flow_profile.py (on sys.path: tests/conftest.py)

    if not META.is_dir():
        pytest.skip(f"{META} is not shipped here")
    folder = write_profile(tmp_path / "profile")
    noisy = 0
    for prompt in (100, 300, 700, 1000, 1500, 2000, 3000):
        v = _verdict(folder, capsys, prompt, 0.95)
        noisy += v["load"] < 0.95  # float noise below the edge (the old verdict's trigger)
        assert v["load"] == pytest.approx(0.95, rel=1e-12)
        assert v["status"] == "unknown" and "too close to call" in v["reason"], (prompt, v["load"], v["reason"][:200])
    assert noisy, "no length here reads the load back below 0.95: the test would not see the old rule"
    v = _verdict(folder, capsys, 1500, 0.9)
    assert v["status"] == "stable" and "the load 0.9000 is below 0.95 times the capacity, beyond" in v["reason"]
