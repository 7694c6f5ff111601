"""Huge, tiny and overflowing numbers on every sub-command (issue 13, "Hangs: sizes" and "Tracebacks: huge
or tiny numbers"): each is one line on stderr naming the option, exit code 2, no traceback and no
'internal error', before any work; the largest (or smallest) value allowed still runs.

The CLI runs in-process (``fluidq.cli.main``), like tests/cli/test_cli_options_checked.py.
"""
from __future__ import annotations

import re

import pytest

from fluidq.testing.cli import run_cli

BIG = "99999999999999999999"  # > 2**64


run = run_cli


@pytest.fixture
def case(tmp_path):
    """A sweep case file with a one-point grid, and a store path next to it."""
    p = tmp_path / "case.toml"
    p.write_text('[sweep]\nanalysis = "check"\n[grid]\nload = [0.5]\n')
    return str(p), str(tmp_path / "store.jsonl")


def _argv(line, case):
    path, store = case
    argv = line.split()
    return [path if a == "CASE" else store if a == "STORE" else a for a in argv]


# (command line, the option the one-line message must name)
REFUSED = [
    # ---- region --simulate: sizes refused before any simulation, with the size they would have
    ("region --simulate --policies sarathi --rays 16777216", "--rays"),
    (f"region --simulate --policies sarathi --rays {BIG}", "--rays"),
    ("region --simulate --policies sarathi --rays 1e26", "--rays"),
    ("region --simulate --policies sarathi --rays 33", "--rays"),
    ("region --simulate --policies sarathi,orca --rays 17", "--rays"),
    ("region --simulate --policies sarathi --rays 0", "--rays"),
    (f"region --simulate --policies sarathi --seed {BIG} --b-max {BIG}", "--b-max"),
    # ---- region: huge or tiny batch times, points and rates
    ("region --c-ms 1e308", "--c-ms"),
    ("region --c-ms 0 --a-ms 1e-300", "--a-ms"),
    ("region --point 1e308,1e308", "--point"),
    ("region --point 1e-300,1e-300", "--point"),
    ("region --rate 1e308", "--rate"),
    ("region --rate 1e-300", "--rate"),
    (f"region --b-max {BIG}", "--b-max"),
    (f"region --k-max {BIG}", "--k-max"),
    # ---- network --simulate: replications and horizons (OverflowError in SeedSequence.spawn, LinAlgError
    # fitting the slope of a 1e-300 s window)
    (f"network lu_kumar --simulate --replications {BIG}", "--replications"),
    ("network lu_kumar --simulate --replications 1e26", "--replications"),
    ("network lu_kumar --simulate --replications 100001", "--replications"),
    ("network lu_kumar --simulate --replications 100000", "--replications"),  # 2e8 requests in all
    ("network lu_kumar --simulate --horizon 1e7 --replications 20", "--replications"),
    ("network lu_kumar --simulate --horizon 1e308", "--horizon"),
    ("network lu_kumar --simulate --horizon 1e300", "--horizon"),
    ("network lu_kumar --simulate --horizon 1e26", "--horizon"),
    ("network lu_kumar --simulate --horizon 1e-300", "--horizon"),
    ("network lu_kumar --simulate --horizon 1e-320", "--horizon"),
    ("network lu_kumar --simulate --horizon 1e-7", "--horizon"),
    ("network lu_kumar --load 1e308", "--load"),
    ("network lu_kumar --load 1e-300", "--load"),
    # ---- dtmc: a boundary mass below what the chain resolves grew the caps without end (hung)
    ("dtmc --rate 1 --tolerance 1e-320", "--tolerance"),
    ("dtmc --rate 1 --tolerance 1e-13", "--tolerance"),
    ("dtmc --rate 1e308", "--rate"),
    ("dtmc --rate 1e-300", "--rate"),
    ("dtmc --rate 1 --prompt 1e308", "--prompt"),
    ("dtmc --rate 1 --b-max 1e14", "--b-max"),
    ("dtmc --rate 1 --b-max 1e26", "--b-max"),
    ("dtmc --rate 1 --k-max 1e26", "--k-max"),
    (f"dtmc --rate 1 --b-max {BIG}", "--b-max"),
    (f"dtmc --rate 1 --k-max {BIG}", "--k-max"),
    (f"dtmc --rate 1 --max-states {BIG}", "--max-states"),
    (f"dtmc --rate 1 --max-prefill {BIG}", "--max-prefill"),
    (f"dtmc --rate 1 --max-decode {BIG}", "--max-decode"),
    ("dtmc --rate 1 --c-ms 0 --a-ms 1e-300", "--a-ms"),
    # ---- capacity / check: the list and integers beyond int64
    ("capacity --b-max 1e26", "--b-max"),
    ("capacity --k-max 1e26", "--k-max"),
    ("capacity --engines 1e26", "--engines"),
    (f"capacity --b-max {BIG}", "--b-max"),
    (f"capacity --k-max {BIG}", "--k-max"),
    (f"capacity --engines {BIG}", "--engines"),
    ("capacity --prompt 1e308", "--prompt"),
    ("capacity --output 1e308", "--output"),
    ("capacity --prompt 1e-300", "--prompt"),
    ("capacity --rate 1e308", "--rate"),
    ("capacity --rate 1e-320", "--rate"),
    ("capacity --c-ms 0 --a-ms 1e-300", "--a-ms"),
    ("capacity --c-ms 1e308", "--c-ms"),
    ("capacity --a-ms 1e308", "--a-ms"),
    ("capacity --model affine --c-ms 1e-300 --a-ms 1e-300", "--c-ms"),
    ("capacity --model affine --b0 1e308", "--b0"),
    # a binding k_max with fixed prompts enumerates every total 1..b_max: 2**24 took minutes
    ("capacity --b-max 16777216 --k-max 100000", "b_max"),
    # a scheduler's region probes up to b_max + 2 queued requests (2**24 took minutes per policy)
    ("region --b-max 16777216 --policies sarathi,orca,vllm,fastertransformer,vllm-chunked", "--b-max"),
    ("region --b-max 262144 --policies sarathi,orca,vllm", "--b-max"),
    (f"check --rate 1 --engines {BIG}", "--engines"),
    (f"check --rate 1 --b-max {BIG}", "--b-max"),
    (f"check --rate 1 --k-max {BIG}", "--k-max"),
    ("check --rate 1e308", "--rate"),
    ("check --rate 1e-320", "--rate"),
    ("check --load 1e308", "--load"),
    ("check --load 1e-320", "--load"),
    ("check --rate 1 --prompt 1e308", "--prompt"),
    ("check --rate 1 --c-ms 0 --a-ms 1e-300", "--a-ms"),
    ("check --rate 1 --tolerance 1e308", "--tolerance"),
    # ---- simulate / latency
    ("simulate --horizon 1e308", "--horizon"),
    ("simulate --horizon 1e26", "--horizon"),
    ("simulate --horizon 1e-320", "--horizon"),
    ("simulate --requests 1e26", "--requests"),
    (f"simulate --requests {BIG}", "--requests"),
    ("simulate --replications 1e26", "--replications"),
    (f"simulate --replications {BIG}", "--replications"),
    (f"simulate --kv-capacity {BIG}", "--kv-capacity"),  # named kv_capacity_tokens before
    ("simulate --kv-capacity 1e12", "--kv-capacity"),
    (f"simulate --b-max {BIG}", "--b-max"),
    (f"simulate --k-max {BIG}", "--k-max"),
    ("simulate --rate 1e308", "--rate"),
    ("simulate --load 1e308", "--load"),      # named rate_per_s=inf before
    ("simulate --load 1e-320", "--load"),     # named rate_per_s before
    ("simulate --arrival gamma --cv 1e-320", "--cv"),
    ("simulate --arrival gamma --cv 1e308", "--cv"),
    ("simulate --arrival gamma --cv 1e26", "--cv"),
    ("simulate --warmup 1e308", "warmup"),
    ("simulate --c-ms 0 --a-ms 1e-300", "--a-ms"),
    ("simulate --preemption swap --kv-capacity 10000 --swap-us-per-token 1e308", "--swap-us-per-token"),  # warned
    ("latency --horizon 1e308", "--horizon"),
    ("latency --horizon 1e-320", "--horizon"),
    ("latency --loads 1e308", "--loads"),
    ("latency --loads 1e-320", "--loads"),    # named rate_per_s before
    ("latency --replications 1e26", "--replications"),
    (f"latency --replications {BIG}", "--replications"),
    (f"latency --kv-capacity {BIG}", "--kv-capacity"),
    (f"latency --b-max {BIG}", "--b-max"),
    (f"latency --k-max {BIG}", "--k-max"),
    ("latency --tau 1e308 --orderings pars", "--tau"),
    ("latency --preemption swap --kv-capacity 10000 --swap-ms-per-token 1e308", "--swap-ms-per-token"),  # warned
    # ---- sweep: worker counts and the Dask address (unknown scheme, port beyond a C long: internal errors)
    ("sweep CASE --store STORE --dask nan://x:1", "--dask"),
    (f"sweep CASE --store STORE --dask tcp://x:{BIG}", "--dask"),
    ("sweep CASE --store STORE --dask tcp://x:70000", "--dask"),
    ("sweep CASE --store STORE --dask ucx://x:1", "--dask"),
    ("sweep CASE --store STORE --dask inproc://x", "--dask"),
    ("sweep CASE --store STORE --workers 1e26", "--workers"),
    (f"sweep CASE --store STORE --workers {BIG}", "--workers"),
    ("sweep CASE --store STORE --local-cluster 1e26", "--local-cluster"),
    (f"sweep CASE --store STORE --local-cluster {BIG}", "--local-cluster"),
]

ACCEPTED = [
    # the largest ray count, on the cheapest simulation (one policy)
    "region --simulate --policies sarathi --rays 1",
    "region --simulate --policies sarathi,fastertransformer --rays 2",
    "region --point 1e18,1e18",
    "region --point 1e-12,1e-12",
    "region --point 0,0",
    "capacity --b-max 16777216 --k-max 16777216",  # a k_max that cannot bind (took 146 s)
    "capacity --engines 1000000",
    "check --b-max 16777216 --policy fastertransformer --rate 1",  # hung in the renewal decode cycle
    "capacity --rate 1e9",
    "capacity --rate 1e-9",
    "capacity --prompt 1073741824 --output 1",
    f"simulate --horizon 5 --seed {BIG}",
    "simulate --horizon 5 --kv-capacity 1000000000000",
    "simulate --horizon 5 --preemption swap --kv-capacity 10000 --swap-us-per-token 1e12",
    "latency --loads 0.5 --horizon 5 --preemption swap --kv-capacity 10000 --swap-ms-per-token 1e9",
    "dtmc --rate 1e9",  # an overloaded engine: 'unstable', with no NaN
    "dtmc --rate 1 --tolerance 1e-12 --max-prefill 4 --max-decode 12",
    "network lu_kumar --simulate --horizon 0.05",  # the shortest run allowed: one batch of the slowest engine
    f"network lu_kumar --simulate --horizon 5 --seed {BIG}",
]


@pytest.mark.parametrize("line, option", REFUSED, ids=[r[0] for r in REFUSED])
def test_refused_in_one_line_naming_the_option(line, option, capsys, case):
    rc, out, err = run(_argv(line, case), capsys)
    assert rc == 2, (line, rc, out, err)
    assert err.count("\n") == 1, err
    assert "internal error" not in err and "Traceback" not in err, err
    assert option in err, (option, err)


@pytest.mark.parametrize("line", ACCEPTED)
def test_edge_values_are_accepted(line, capsys, case):
    rc, out, err = run(_argv(line, case), capsys)
    assert rc == 0, (line, err)
    assert "internal error" not in err and "Warning" not in err, err
    assert not re.search(r"\b(nan|inf)\b", out), out
