"""The 95 % intervals ``fluidq validate --run`` prints, checked for coverage on seeded replications (issue 16, the
second reading of the runzoo merge), and the smaller findings of that reading.

A coverage check: R seeded replications, the share whose interval holds the truth, and the binomial 95 %
interval of that share must contain 0.95.  Where a method cannot reach it, the report prints no interval and the
miss is a strict xfail stating the measured coverage -- never a wider accepted band.
"""
import gzip

import numpy as np
import pytest
from scipy.signal import lfilter
from scipy.stats import binomtest

import run_variants as rv
from fluidq.errors import DataError
from fluidq.testing.cli import run_cli
from fluidq.validate.cases import case_for_run, run_layout
from fluidq.validate.runs import (batch_means, check_kv_column, latency_metrics, latency_metrics_ci, queue_growth,
                                  read_run)


def _covers_95(hits: int, n: int) -> bool:
    ci = binomtest(int(hits), int(n)).proportion_ci(0.95)
    return ci.low <= 0.95 <= ci.high


def _ar1(rho: float, n: int, rng) -> np.ndarray:
    """A stationary AR(1) series of mean 0 (unit innovations), started from its stationary law."""
    e = rng.normal(size=n + 200)
    return lfilter([1.0], [1.0, -rho], e)[200:]


def _coverage(draw, truth, R, seed):
    rng = np.random.default_rng(seed)
    hits = given = 0
    for _ in range(R):
        r = batch_means(draw(rng))
        if np.all(np.isfinite(r["ci"])):
            given += 1
            hits += r["ci"][0] <= truth <= r["ci"][1]
    return hits, given


# ------------------------------------------------------------- 3. N and the steady capacity: a mean of ticks
def test_batch_means_cover_the_mean_of_a_moderately_correlated_series():
    # AR(1) rho 0.5 over 165 ticks (the steady window's size): the old batch means of 5 ticks covered less
    hits, given = _coverage(lambda rng: _ar1(0.5, 165, rng), 0.0, 600, seed=11)
    assert given >= 0.85 * 600, given  # measured 528 of 600 given an interval
    assert _covers_95(hits, given), (hits, given)  # measured 0.941 (497 of 528)


def test_the_old_fixed_batches_of_five_did_not_cover_a_strongly_correlated_series():
    # what the second reading measured (0.62 at rho 0.88, n 165): the fixed 5-tick batch means, kept here as the
    # reason for the change (measured here 0.64, 257 of 400); the data-chosen batch size withholds the interval
    rng = np.random.default_rng(12)
    hits = 0
    for _ in range(400):
        x = _ar1(0.88, 165, rng)
        bm = x[:165].reshape(33, 5).mean(axis=1)
        half = 1.96 * bm.std(ddof=1) / np.sqrt(33)
        hits += abs(x.mean()) <= half
    assert not _covers_95(hits, 400), hits


def test_a_strongly_correlated_series_mostly_gets_no_interval():
    # AR(1) rho 0.9 over 165 ticks: no batch size leaves 5 nearly uncorrelated batch means in most replications,
    # and the report then prints none (measured: 397 of 600 withheld)
    hits, given = _coverage(lambda rng: _ar1(0.9, 165, rng), 0.0, 600, seed=13)
    assert given <= 0.5 * 600, given


@pytest.mark.xfail(strict=True, reason="AR(1) rho 0.9, 165 ticks: where batch means with a data-chosen batch size do "
                                       "give an interval, it covers 0.82 (167 of the 203 of 600 seeded "
                                       "replications given one), not 0.95; no method tried reached 0.95 at this "
                                       "length (fixed 5 / 8 / 10 batches: 0.91 / 0.88 / 0.85)")
def test_batch_means_cover_a_strongly_correlated_series_when_they_give_an_interval():
    hits, given = _coverage(lambda rng: _ar1(0.9, 165, rng), 0.0, 600, seed=13)
    assert given > 0 and _covers_95(hits, given), (hits, given)


# --------------------------------------------------- 2. backlog and waiting growth: a random walk with drift
@pytest.mark.parametrize("n", [30, 60])
def test_the_growth_of_a_random_walk_is_covered_from_its_increments(n):
    # y = cumsum(100 + N(0, 500)): the refitted-line bootstrap covered 0.40 (n 30) and 0.26 (n 60)
    hits, given = _coverage(lambda rng: np.diff(np.cumsum(100 + rng.normal(0, 500, n + 1))), 100.0, 600, seed=n)
    assert given >= 0.9 * 600
    assert _covers_95(hits, given), (hits, given)  # measured 539 of 561 (n 30), 564 of 594 (n 60)


def test_the_growth_of_a_walk_with_correlated_increments_is_covered():
    """A known miss (an xfail stating it; one that now covers 0.95 fails, so the record gets updated): increments
    AR(1) rho 0.5, 120 ticks: batch means with a data-chosen batch size cover 0.917 (432 of the 471 of 600 seeded
    walks given an interval, seed 21, measured 2026-12-07), not 0.95; tripling instead of doubling the chosen batch,
    or a stricter lag-1 rule, gave 0.92-0.93 (a short, correlated series: the batch means' own variance is noisy).
    The miss must stay the recorded one: each measured share inside the binomial 95 % interval of the recorded share
    at its count (a move past 600 walks' sampling noise is a changed method: re-measure).  (Before, `given >= 0.7 x
    600` sat inside a strict xfail, where its failure passed as the expected one.)"""
    # increments AR(1) rho 0.5 around a drift of 100
    hits, given = _coverage(lambda rng: 100 + 500 * _ar1(0.5, 120, rng), 100.0, 600, seed=21)
    g = binomtest(471, 600).proportion_ci(0.95)
    assert g.low <= given / 600 <= g.high, (given, g)
    h = binomtest(432, 471).proportion_ci(0.95)
    assert h.low <= hits / given <= h.high, (hits, given, h)
    if _covers_95(hits, given):
        pytest.fail(f"known miss now covers 0.95: {hits} of {given}; update this test and validation/RESULTS.md")
    pytest.xfail(f"batch means on a walk with AR(1) rho 0.5 increments, 120 ticks: cover {hits / given:.3f} ({hits} "
                 f"of the {given} of 600 seeded walks given an interval), not 0.95 (recorded 432 of 471)")


def test_queue_growth_reads_the_mean_increment_over_a_window_opened_one_tick_early(tmp_path):
    # the tick-2s run: the window opens one *tick* (2 s) before the first tick with requests waiting, and the
    # growth is the mean increment of `waiting` per second over the window's ticks
    run = read_run(rv.make("tick-2s", tmp_path / "t2"))
    assert run.tick_s == 2.0
    qg = queue_growth(run)
    t, w = run.timeseries["t"], np.asarray(run.timeseries["waiting"], dtype=float)
    first = t[np.flatnonzero(w > 0)[0]]
    assert qg["window_s"][0] == pytest.approx(first - 2.0)
    sel = (t >= first - 2.0) & (t <= run.arrival_s[-1] + 2.0)
    assert qg["waiting_per_s"] == pytest.approx(np.mean(np.diff(w[sel]) / np.diff(t[sel])), rel=1e-12)


# ------------------------------------------------------------------------- 1. latency metrics of one run
def _sim_latencies(rate, seeds):
    from fluidq import Engine, Workload, simulate
    from fluidq.batchtime import Affine
    from fluidq.workload import Geometric, Poisson

    eng = Engine(batch_time=Affine(c=0.02, a=1e-4), b_max=2048, k_max=32)
    w = Workload(arrival=Poisson(rate_per_s=rate), prompt_tokens=Geometric(mean_tokens=200),
                 output_tokens=Geometric(mean_tokens=100))
    for s in seeds:
        r = simulate(eng, w, "sarathi", n_requests=300, rng=s)
        lat, o = r.latencies(), np.argsort(r.requests["arrival_s"])
        yield lat["ttft_s"][o], lat["ttlt_s"][o], lat["tpot_s"][o]


@pytest.mark.xfail(strict=True, reason="the moving-block bootstrap over one run's requests (blocks of 10) covers the "
                                       "mean TTFT over replications in 0.28 of 120 seeded runs at 12 req/s (0.84 at "
                                       "5, 0.98 at 30; TTFT P99 0.68 / 0.15 / 0.42; every TPOT metric 0): one run of serially dependent requests holds "
                                       "no estimate of the between-run variation, so `fluidq validate --run` prints "
                                       "no latency interval")
def test_a_block_bootstrap_over_one_runs_requests_covers_another_runs_mean_ttft():
    runs = list(_sim_latencies(12.0, range(120)))
    truth = np.mean([latency_metrics(*x)["TTFT Mean"] for x in runs])
    hits = sum(lo <= truth <= hi for lo, hi in
               (latency_metrics_ci(*x, resamples=200, seed=i)["TTFT Mean"] for i, x in enumerate(runs)))
    assert _covers_95(hits, len(runs)), hits


# ------------------------------------------------------------------------------ 4. a genuine low KV percentage
def _scale_kv(d, top):
    h, rows = rv.read_ts(d)
    j = h.index("kv_cache_pct")
    m = max(float(r[j]) for r in rows)
    rv.write_ts(d, h, [r[:j] + [f"{float(r[j]) * top / m:.6f}"] + r[j + 1:] for r in rows])
    return d


def test_a_kv_use_that_stays_below_one_percent_is_read_as_it_is(tmp_path):
    # a true 0.8 % (a large cache, short requests) was refused as "a fraction", and the hint would have made it 80 %
    run = read_run(_scale_kv(rv.copy_run(rv.LLAMA_4090, tmp_path / "low"), 0.8))
    check_kv_column(run)  # not refused
    run = read_run(_scale_kv(rv.copy_run(rv.LLAMA_4090, tmp_path / "frac"), 0.97))
    with pytest.raises(DataError, match="drop the column"):
        check_kv_column(run)


# ------------------------------------------------------------ 5. a bad profile cell named as the user's file
def test_a_bad_cell_in_a_gzipped_profile_is_named_as_the_users_file(tmp_path, capsys):
    d = rv.copy_run(rv.LLAMA_PRO, tmp_path / "gz", gunzip=False)
    p = d / "profile_tp1_attention.csv.gz"
    lines = gzip.decompress(p.read_bytes()).decode().splitlines()
    lines[3] = ",".join(lines[3].split(",")[:-1] + ["slow"])
    p.write_bytes(gzip.compress(("\n".join(lines) + "\n").encode()))
    rc, out, err = run_cli(["validate", "--run", str(d), "--out", str(tmp_path / "v")], capsys)
    assert rc == 2, (out, err)
    assert str(p) in err and "fluidq-validate-" not in err, err


# ------------------------------------------------------------------- 6. one layout for the check and the model
def test_a_single_gpu_run_with_expert_parallel_on_needs_no_link(tmp_path):
    d = rv.make("qwen-dp2-ep", tmp_path / "q")
    m = rv.meta(d)
    for doc in (m.get("engine_kwargs") or {}, ((m.get("resolved_config") or {}).get("parallel_config") or {})):
        if "data_parallel_size" in doc:
            doc["data_parallel_size"] = 1
        if "enable_expert_parallel" in doc:
            doc["enable_expert_parallel"] = True
    m.setdefault("engine_kwargs", {})["enable_expert_parallel"] = True
    m.setdefault("hardware", {})["device_total_memory_bytes"] = 96 * 2**30  # the link table also gave the memory
    rv.set_meta(d, m)
    (d / "peer_sim_config.json").unlink(missing_ok=True)
    run = read_run(d)
    lay = run_layout(run)
    assert run.expert_parallel and lay["ep"] == 1 and not lay["parallel"], lay
    case_for_run(d)  # not refused for a missing link: one GPU communicates nothing


# ------------------------------------------------------------------------- 9, 10. what a reader is told
@pytest.mark.parametrize("ver", ["main", "nightly-2026"])
def test_a_version_that_is_not_one_is_said_so(ver, tmp_path):
    d = rv.copy_run(rv.LLAMA_PRO, tmp_path / "v")
    m = rv.meta(d)
    m["vllm_version"] = ver
    ((m.get("resolved_config") or {}).get("cache_config") or {}).pop("enable_prefix_caching", None)
    (m.get("engine_kwargs") or {}).pop("enable_prefix_caching", None)
    (m.get("kv_cache") or {}).pop("enable_prefix_caching", None)
    rv.set_meta(d, m)
    src = read_run(d).prefix_caching_source
    assert f"names vllm_version {ver!r}, not a version" in src and "off" in src, src


def test_a_header_only_timeseries_says_no_rows(tmp_path):
    d = rv.copy_run(rv.LLAMA_PRO, tmp_path / "h")
    h, _ = rv.read_ts(d)
    rv.write_ts(d, h, [])
    with pytest.raises(DataError, match="no rows"):
        read_run(d)


def test_one_token_outputs_are_left_out_of_tpot_as_vllms_benchmark_does(tmp_path):
    d = rv.copy_run(rv.LLAMA_PRO, tmp_path / "o")
    rows = rv.requests(d)
    for r in rows[::3]:
        r["output_toks"] = 1
        r["last_token_ts"] = r["first_token_ts"]
    rv.write_requests(d, rows)
    run = read_run(d)
    keep = run.output_tokens > 1
    assert np.all(np.isnan(run.tpot_s[~keep])) and np.all(np.isfinite(run.tpot_s[keep]))
    want = 1e3 * np.mean((run.last_token_s - run.first_token_s)[keep] / (run.output_tokens[keep] - 1))
    assert latency_metrics(run.ttft_s, run.latency_s, run.tpot_s)["TPOT Mean"] == pytest.approx(want, rel=1e-12)


def test_the_backlog_counts_a_missing_tick_as_the_interval_it_spans(tmp_path):
    # a row of the timeseries lost (a stat logger that skipped a tick): the row after it reports its rates over
    # two ticks, so the tokens served to it are rate x 2 ticks.  Second reading of 2026-12-07: the served total
    # was the rates' running sum x tick_s, one tick's tokens short at every gap
    d = rv.copy_run(rv.LLAMA_4090, tmp_path / "gap")
    h, rows = rv.read_ts(d)
    ti, wi = h.index("t"), h.index("waiting")
    on = [i for i, r in enumerate(rows) if float(r[wi]) > 0]
    gap = on[0] + 5  # a tick inside the growth window
    rv.write_ts(d, h, rows[:gap] + rows[gap + 1:])
    run = read_run(d)
    qg = queue_growth(run)
    ts = run.timeseries
    t = np.asarray(ts["t"], dtype=float)
    rate = np.asarray(ts["prompt_throughput"], dtype=float) + np.asarray(ts["gen_throughput"], dtype=float)
    span = np.diff(t, prepend=t[0] - run.tick_s)
    assert span.max() == pytest.approx(2 * run.tick_s)  # the gap is there
    served = np.cumsum(rate * span)
    tot = run.input_tokens + run.output_tokens
    sel = (t >= qg["window_s"][0] + run.tick_s) & (t <= run.arrival_s[-1] + run.tick_s)
    tt = t[sel]
    backlog = np.array([tot[run.arrival_s <= x].sum() for x in tt], dtype=float) - served[sel]
    assert qg["backlog_tokens_per_s"] == pytest.approx(np.mean(np.diff(backlog) / np.diff(tt)), rel=1e-12)
