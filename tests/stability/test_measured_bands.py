"""The bands a verdict quotes for where simulations saturate against its load basis are the measured tables of
validation/RESULTS.md, not a range written once by hand: `check_stability`'s reason said "seeded simulations of
KV-bound engines saturate at 0.96-1.19 times it" while Gemma-2-9B on an A10G (4,272 KV tokens, 100 + 100)
saturates at 0.86 of it (RESULTS.md, "small KV caches against the load basis")."""
from __future__ import annotations

import re

import pytest

from fluidq import Poisson, Workload, check_stability
from fluidq.stability.measured import SATURATION_PER_BASIS
from fluidq.validate import validation_dir


def _table_ratios(column: str) -> list[float]:
    """Every KV-bound row's ``column`` in the RESULTS.md tables that print it (rows where the cache does not bind
    say "(none: does not bind)" and are left out)."""
    out, header = [], None
    for line in (validation_dir() / "RESULTS.md").read_text().splitlines():
        if not line.startswith("|"):
            header = None
            continue
        cells = [c.strip() for c in line.strip("|").split("|")]
        if header is None:
            header = cells if column in cells else []
            continue
        if not header or set(line) <= set("|-: "):
            continue
        row = dict(zip(header, cells))
        if "does not bind" in row.get("KV rules", ""):
            continue
        out.append(float(row[column]))
    return out


@pytest.mark.parametrize("basis", sorted(SATURATION_PER_BASIS))
def test_each_band_is_the_measured_table(basis):
    band = SATURATION_PER_BASIS[basis]
    ratios = _table_ratios(band.column)
    assert len(ratios) == band.engines
    assert band.basis_over_sim == (min(ratios), max(ratios))


def test_the_verdict_quotes_the_band_of_its_basis():
    from fluidq.engine.roofline import roofline_engine

    e = roofline_engine("Qwen2.5-7B", "L4")  # KV rules 2.352 req/s at 1000 + 200 (RESULTS.md)
    w = Workload(arrival=Poisson(rate_per_s=2.352), prompt_tokens=1000, output_tokens=200)
    r = check_stability(e, w, "sarathi")
    assert r.inputs.get("load_basis") == "kv_rules"
    kv, mt = SATURATION_PER_BASIS["kv_rules"], SATURATION_PER_BASIS["max_throughput"]
    assert kv.saturate_words() in r.reason and mt.above_words() in r.reason
    assert re.search(r"saturate at 0\.78-1\.21 times it", r.reason)  # 1 / 1.277 and 1 / 0.828
    assert "0.96-1.19" not in r.reason
