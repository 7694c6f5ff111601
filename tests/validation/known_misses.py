"""The validation tests' known misses, one table for test_validation_suite.py (the fast suite's own verdicts) and
test_parallel_capacity.py (issue 16's Done-means targets) -- a helper imported by name (pytest puts
tests/validation on sys.path), not a test module.  Before this module each test file had its own table, and the
RTX 4090 latency mean abs. error (2.15 +- 0.5) was recorded in both.

A known miss is an xfail stating the measured and the recorded miss, never a looser assert: a miss not in the
table fails; a known miss outside its band fails (it moved: re-measure, say why, update the table); a known miss
that now meets its target fails too (update the table and validation/RESULTS.md).
"""
from __future__ import annotations

from dataclasses import dataclass

import pytest

#: the fast suite's own row verdicts (``fluidq validate --fast``: each row's status against its row target)
SUITE = "suite"
#: issue 16's Done-means targets (5 % capacity on the real vLLM runs, 2 % latency mean abs. error on the Llama runs),
#: checked by test_parallel_capacity.py on ``run_case(fast=True)``
DONE_MEANS = "issue 16"


@dataclass(frozen=True)
class KnownMiss:
    recorded: float  #: the row's error in % (its predicted % for a MAPE / mean-abs-error row)
    band: float  #: how far the measured value may move from ``recorded`` before the test fails
    why: str
    missed: frozenset  #: the targets it misses: SUITE, DONE_MEANS or both


def _miss(recorded, band, why, *missed):
    return KnownMiss(recorded, band, why, frozenset(missed))


_CAP = "capacity (served tokens/s, steady state)"
_SIM = "capacity (fluidq.simulate of the benchmark, steady state)"
_MAE = "mean abs. error over the 15 latency metrics"
_LSS = "LLMServingSim"

# Keyed by the row's (case, source, quantity) (the batch-time fits share their quantities across sources).  Values
# measured on this code with the fast runs (`fluidq validate --fast` and run_case(fast=True), 2026-12-07, main
# 3329294).  Bands:
# * the batch-time fits are deterministic on shipped profiles (the same numbers in every RESULTS.md regeneration
#   since 2026-12-05): +-0.5 points;
# * the replayed-arrival latency rows moved by up to ~0.3 points across the engine-model changes recorded in
#   validation/RESULTS.md (h-pre16, h-lat16eng): +-0.5 points; the latency mean abs. errors 2.26 -> 2.15 and
#   4.32 -> 4.22 %: +-0.5;
# * the fitted-profile latency row +-2 points (its profile is refitted with the fit code);
# * the spread of each capacity number across the code changes recorded in validation/RESULTS.md: Qwen3 fluid
#   capacity +18.1 -> +20.5 % (+-2.5), PRO 6000 Llama +6.5 -> +7.3 % (+-1.0), the Qwen3 simulated capacity +5.2
#   (fast, 3 replications) to +5.9 / +6.3 / +6.7 % (full suite, synchronous) (+-1.5).
KNOWN_MISSES = {
    ("batch-time-fits", "LLMServingSim RTX 4090 / Llama-3.1-8B", "held-out MAPE, context-aware t(b, kv)"):
        _miss(9.38, 0.5, "the context-aware form over decode/mixed iterations; 3.1 % for the form in b", SUITE),
    ("batch-time-fits", "Splitwise DGX-A100 / Llama-2-70B (TP8)", "held-out MAPE, best form in b (piecewise-linear)"):
        _miss(21.08, 0.5, "9 prefill sizes only", SUITE),
    ("batch-time-fits", "Splitwise DGX-A100 / Llama-2-70B (TP8)", "held-out MAPE, context-aware t(b, kv)"):
        _miss(7.06, 0.5, "210 iterations", SUITE),
    ("batch-time-fits", "Sarathi-Serve 2xA100 / Yi-34B (TP2), figure 2", "held-out MAPE, best form in b (affine)"):
        _miss(19.64, 0.5, "8 batch sizes read off a figure", SUITE),
    ("rtx4090-llama3.1-8b", _LSS, "TTFT Mean (replayed arrivals)"): _miss(1.78, 0.5, "peer +-0.6 %", SUITE),
    ("rtx4090-llama3.1-8b", _LSS, "TPOT Mean (replayed arrivals)"): _miss(-0.24, 0.5, "peer +-0.2 %", SUITE),
    ("rtx4090-llama3.1-8b", _LSS, "Latency Mean (replayed arrivals)"): _miss(1.28, 0.5, "peer +-0.5 %", SUITE),
    ("rtx4090-llama3.1-8b", _LSS, "Latency P90 (replayed arrivals)"): _miss(1.34, 0.5, "peer +-0.2 %", SUITE),
    # one number, two targets: the suite's row (the peer's 0.46 %) and issue 16's 2 %
    ("rtx4090-llama3.1-8b", _LSS, _MAE):
        _miss(2.15, 0.5, "latency mean abs. error; the peer's 0.46 % (suite row), issue 16's 2 %", SUITE, DONE_MEANS),
    ("rtx4090-llama3.1-8b", _LSS, _MAE + ", fitted profile"): _miss(18.57, 2.0, "the peer's 0.46 %", SUITE),
    # (rtxpro6000-llama3.1-8b, fluid capacity: +7.26 % until 2026-12-07, h-meas16; +2.5 % since the measured steady
    # state starts after the ramp -- the first 128 admitted still decoding, no prompt let in -- 8,097 not 7,741)
    # +27.5 % since h-meas16 (2026-12-07: the measured window starts after the ramp, 12 ticks at 7,386 tokens/s,
    # not the 14 at 7,488); +25.7 % since the lockstep group has every rank's token budget and spreads its chunks
    # (h-dpfix; its stationary simulation 9,334 tokens/s, the formula 9,415); +20.5 % before, +18.1 % before that
    ("rtxpro6000-qwen3-30b-a3b", _LSS, _CAP): _miss(27.5, 2.5, "fluid capacity; target 5 %", DONE_MEANS),
    # (rtxpro6000-qwen3-30b-a3b, simulated benchmark: +5.2 % until h-meas16; +4.7 to +4.9 % since, both its simulated
    # log and the run read by the new estimator -- at the edge of the 5 % target, not clearly inside it)
    ("rtxpro6000-llama3.1-8b", _LSS, _MAE): _miss(4.22, 0.5, "latency mean abs. error; target 2 %", DONE_MEANS),
}


def row_key(row):
    return row.case, row.source, row.quantity


def known_for(target):
    """The keys of the known misses of ``target`` (SUITE or DONE_MEANS)."""
    return {k for k, m in KNOWN_MISSES.items() if target in m.missed}


def check_known_miss(key, value, target, met, why_it_misses=""):
    """``value`` (the row's error or predicted %) against ``target`` (SUITE or DONE_MEANS), which it meets or not
    (``met``).  Met: it must not be a known miss of that target.  Else it must be one, within its band: then an
    xfail stating the measured and the recorded miss."""
    assert target in (SUITE, DONE_MEANS), target
    miss = KNOWN_MISSES.get(key)
    if met:
        if miss is not None and target in miss.missed:
            pytest.fail(f"known miss now meets its {target} target: {key}: {value:+.2f}; update "
                        "tests/validation/known_misses.py and validation/RESULTS.md")
        return
    if miss is None or target not in miss.missed:
        pytest.fail(f"a new miss of the {target} target, not in tests/validation/known_misses.py: {key}: {value:+.2f}")
    if not abs(value - miss.recorded) <= miss.band + 1e-9:
        pytest.fail(f"known miss moved out of its band: {key}: {value:+.2f}, recorded {miss.recorded:+.2f} "
                    f"+- {miss.band:g}")
    pytest.xfail(f"known miss of the {target} target, reported in the table: {key}: {value:+.2f} (recorded "
                 f"{miss.recorded:+.2f} +- {miss.band:g}; {miss.why})" + (f": {why_it_misses}" if why_it_misses else ""))
