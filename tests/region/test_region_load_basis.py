"""``fluidq region``'s point verdict reads the load basis where the vertices leave the KV cache out (h-user6b).

The vertices are batch shapes with no KV-cache limit, so a point inside them may be overloaded where the cache
binds: on a roofline Gemma-2-9B / A10G at 100 + 100 tokens ``region --point 500,500`` said "inside, load 0.2378"
where ``fluidq check`` reads 5.230 req/s under the cache's rules (load 0.956) and seeded simulations saturate at
4.53 req/s.  The engine here is a roofline Mistral-7B-v0.1 on an A10G at 3000 + 200 tokens (KV-bound: 0.863 req/s
under the cache's rules, the batch shapes' lambda* 3.8 times that; not a shipped case); the verdict must follow
``fluidq check``'s rule on that basis (no verdict between 0.8 and 1.25 of it)."""
import json

import pytest

from fluidq import Poisson, Workload
from fluidq.dtmc.load_basis import load_basis
from fluidq.region.verdict import INSIDE_BY_ESTIMATE
from fluidq.testing.cli import run_cli

FLAGS = ["--gpu", "A10G", "--model", "Mistral-7B-v0.1", "--prompt", "3000", "--output", "200"]


def _basis():
    from fluidq.engine.roofline import roofline_engine

    e = roofline_engine("Mistral-7B-v0.1", "A10G")
    lb = load_basis(e, Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=3000, output_tokens=200))
    assert lb.basis == "kv_rules"
    return lb


def _region(extra, capsys):
    rc, out, err = run_cli(["region", *FLAGS, *extra, "--json"], capsys)
    assert rc in (0, None), err
    return json.loads(out)


@pytest.mark.parametrize("frac, verdict", [(0.95, "too close to call"), (1.3, "OUTSIDE"), (0.5, INSIDE_BY_ESTIMATE)])
def test_the_point_verdict_reads_the_load_basis(frac, verdict, capsys):
    """Fails before: every one of these points was "inside" the batch shapes, with no load basis in the answer.  The
    point's load is check's arithmetic on the same basis (rel 1e-12), by --rate and by --point alike."""
    lb = _basis()
    rate = frac * lb.requests_per_s
    for extra in (["--rate", repr(rate)], ["--point", f"{rate * 3000!r},{rate * 200!r}"]):
        d = _region(extra, capsys)
        pt = d["point"]
        assert pt["margin"]["inside"]  # the batch shapes alone hold every one of these points
        assert pt["load_basis"]["load_basis"] == "kv_rules"
        assert pt["load_basis"]["load"] == pytest.approx(frac, rel=1e-12)
        assert pt["load_basis"]["load_basis_requests_per_s"] == pytest.approx(lb.requests_per_s, rel=1e-12)
        assert pt["verdict"] == verdict
        assert d["workload"]["load_basis_requests_per_s"] == pytest.approx(lb.requests_per_s, rel=1e-12)


def test_the_line_says_which_basis_binds(capsys):
    lb = _basis()
    rc, out, _ = run_cli(["region", *FLAGS, "--rate", repr(0.95 * lb.requests_per_s)], capsys)
    line = next(ln for ln in out.splitlines() if ln.startswith("point "))
    assert "too close to call on the load basis of `fluidq check`, load 0.9500" in line
    assert ("of the load basis (the capacity under the KV cache's rules, whole-prompt admission and recompute "
            "preemptions), which binds") in line and "the batch shapes alone: inside" in line


def test_a_point_without_a_workload_says_the_shapes_leave_the_cache_out(capsys):
    rc, out, _ = run_cli(["region", "--gpu", "A10G", "--model", "Mistral-7B-v0.1", "--point", "1000,300"], capsys)
    line = next(ln for ln in out.splitlines() if ln.startswith("point "))
    assert "inside (of the batch shapes, which leave out the KV cache" in line


def test_the_sweeps_region_analysis_gives_the_same_verdict():
    """The sweep's ``region`` rows: ``load_basis_load`` and ``verdict`` on check's basis (a roofline point whose
    KV cache binds: Mistral-7B-v0.1 on an A10G at 3000 + 200 tokens, not a shipped case)."""
    from fluidq.sweep.analyses import point_load_basis, region

    pt = {"gpu": "A10G", "model": "Mistral-7B-v0.1", "prompt_tokens": 3000, "output_tokens": 200}
    lb = point_load_basis(pt)
    assert lb.basis == "kv_rules"
    row = region({**pt, "load": 0.95})
    assert row["inside"] and row["verdict"] == "too close to call"
    assert row["load_basis_load"] == pytest.approx(0.95, rel=1e-12)
    row = region({**pt, "rate_per_s": 1.3 * lb.requests_per_s})
    assert row["inside"] and row["verdict"] == "OUTSIDE"
    assert row["load_basis_load"] == pytest.approx(1.3, rel=1e-12)


def test_below_the_band_where_the_cache_binds_is_an_estimate_not_inside():
    """h-fixa: below 0.8 of the KV-rules basis ``fluidq check`` gives no verdict (it never says stable where the
    cache binds; seeded simulations saturate down to 0.78 of that basis), so the sweep's row says so."""
    from fluidq.sweep.analyses import region

    row = region({"gpu": "A10G", "model": "Mistral-7B-v0.1", "prompt_tokens": 3000, "output_tokens": 200,
                  "load": 0.5})
    assert row["inside"] and row["verdict"] == INSIDE_BY_ESTIMATE and row["verdict"] != "inside"
    assert "not proven" in row["verdict"] and "no verdict" in row["verdict"]
