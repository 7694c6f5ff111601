"""The fast subset of the validation suite (one case per data source): targets that hold are
asserted; known misses are marked xfail with the measured error, and must be reported as misses."""
import json

import pytest

from fluidq.cli import main

# the known misses, one table shared with test_parallel_capacity.py (a helper module, tests/validation/known_misses.py)
from known_misses import SUITE, check_known_miss, known_for, row_key as _key


def _rows(res, case, quantity_prefix):
    rows = [r for r in res.rows if r.case == case and r.quantity.startswith(quantity_prefix)]
    assert rows, f"no row {case}: {quantity_prefix}"
    return rows


def _value(row):
    return row.error_pct if row.error_pct is not None else row.predicted


def _check_known_miss(row):
    """A passing row must not be a known miss of the suite (update the table); a missing one must be, within its
    band: then it is an xfail stating the measured and the recorded miss."""
    assert row.status in ("pass", "miss"), row
    check_known_miss(_key(row), _value(row), SUITE, met=row.status == "pass")


def _assert_or_known_miss(row, limit):
    """The row's verdict must be consistent with its error; a miss must be a known one, within its band."""
    value = abs(row.error_pct) if row.error_pct is not None else row.predicted
    assert (row.status == "pass") == (value <= limit + 1e-9), row
    _check_known_miss(row)


def test_every_miss_is_a_known_one(fast_validation):
    missed = [_key(r) for r in fast_validation.rows if r.status == "miss"]
    assert set(missed) <= known_for(SUITE), sorted(set(missed) - known_for(SUITE))
    assert len(missed) == fast_validation.missed


@pytest.mark.parametrize("key", sorted(known_for(SUITE)), ids=lambda k: f"{k[0]}|{k[2]}")
def test_known_miss_is_still_measured_within_its_band(fast_validation, key):
    rows = [r for r in fast_validation.rows if _key(r) == key]
    assert len(rows) == 1, f"known miss {key}: {len(rows)} rows"  # a row that disappeared fails
    _check_known_miss(rows[0])


def test_capacity_of_the_rtx4090_run_within_10_percent(fast_validation):
    (b,) = _rows(fast_validation, "rtx4090-llama3.1-8b", "binding limit")
    assert b.predicted == "kv_cache" == b.measured
    (row,) = _rows(fast_validation, "rtx4090-llama3.1-8b", "capacity (served tokens/s, steady state)")
    # +0.3 % since the formula counts vLLM's recompute preemptions and admission slack (2026-12-06, h-pre16; +11.1 %
    # before, a miss of the 10 % line); fluidq.simulate of the benchmark is -1.5 %
    assert abs(row.error_pct) <= 10.0 and row.status == "pass", row


def test_vidur_peer_agreement_llama2_7b(fast_validation):
    (row,) = _rows(fast_validation, "vidur-llama2-7b-a100-sarathi512", "saturation rate vs Vidur (context-aware)")
    assert abs(row.error_pct) <= 10.0 and row.status == "pass"
    # the simulated overload (paging, admission, preemption) agrees too
    (sim,) = _rows(fast_validation, "vidur-llama2-7b-a100-sarathi512", "saturation rate vs Vidur (replayed")
    assert abs(sim.error_pct) <= 10.0 and sim.status == "pass"
    # the linear-op staircase alone over-predicts (reference section 8); the context-aware model fixes it
    (lin,) = _rows(fast_validation, "vidur-llama2-7b-a100-sarathi512", "linear-op staircase")
    assert lin.predicted > 1.5 * lin.measured


def test_sarathi_hybrid_batch_costs_the_same_as_equal_total_prefill(fast_validation):
    (row,) = _rows(fast_validation, "sarathi-hybrid-batch", "hybrid (1021")
    assert abs(row.error_pct) <= 5.0 and row.status == "pass"


# the Sarathi-Serve figure gives prefill batch times only: no attention rows, no context-aware fit
_NO_FIT = {("Sarathi-Serve 2xA100 / Yi-34B (TP2), figure 2", "context-aware")}


@pytest.mark.parametrize("source", ["LLMServingSim RTX 4090 / Llama-3.1-8B", "Vidur A100 / Llama-2-7B (TP1)",
                                    "Splitwise DGX-A100 / Llama-2-70B (TP8)",
                                    "Sarathi-Serve 2xA100 / Yi-34B (TP2), figure 2"])
@pytest.mark.parametrize("form", ["best form in b", "context-aware"])
def test_batch_time_fit_target(fast_validation, source, form):
    rows = [r for r in fast_validation.rows if r.case == "batch-time-fits" and r.source == source
            and form in r.quantity]
    if (source, form) in _NO_FIT:  # stated absent, and absent: a row appearing fails (add it to the targets)
        assert not rows, rows
        return
    (row,) = rows  # a missing fit row fails
    _assert_or_known_miss(row, 5.0)


@pytest.mark.parametrize("metric", ["TTFT Mean", "TPOT Mean", "Latency Mean", "Latency P90"])
def test_latency_of_replayed_arrivals_vs_peer(fast_validation, metric):
    (row,) = _rows(fast_validation, "rtx4090-llama3.1-8b", metric)
    assert abs(row.error_pct) < 15.0  # a regression bound on our own error
    peer = float(row.target.split("peer's ±")[1].rstrip(" %"))
    _assert_or_known_miss(row, peer)


def test_cli_runs_one_case_as_json(tmp_path, capsys):
    rc = main(["validate", "--case", "sarathi-hybrid-batch", "--out", str(tmp_path), "--json"])
    assert rc == 0
    out = json.loads(capsys.readouterr().out)
    assert out["rows"][0]["case"] == "sarathi-hybrid-batch" and out["passed"] >= 1
    assert (tmp_path / "validation.md").exists()


def test_cli_unknown_case_exits_2(tmp_path, capsys):
    assert main(["validate", "--case", "no-such-case", "--out", str(tmp_path)]) == 2
    assert "unknown validation case" in capsys.readouterr().err
