"""Workloads: trace readers on synthetic files, length and arrival distributions against their means."""
import gzip
import json
import math

import numpy as np
import pytest

from fluidq import (
    Empirical,
    Fixed,
    Gamma,
    Geometric,
    LogNormal,
    Periodic,
    Poisson,
    PoissonLength,
    Workload,
)
from fluidq.errors import DataError, FluidqError
from fluidq.workload import load_trace

AZURE = ("TIMESTAMP,ContextTokens,GeneratedTokens\n"
         "2023-11-16 18:15:46.6805900,374,44\n"
         "2023-11-16 18:15:50.9951690,396,109\n"
         "2023-11-16 18:15:48.1000000,879,45\n"
         "2023-11-16 18:15:56.6805900,100,2\n")


def mooncake(n=5):
    return "".join(json.dumps({"timestamp": 1000 * i + 7, "input_length": 10 + i, "output_length": 3 + i,
                               "hash_ids": [i]}) + "\n" for i in range(n))


def test_azure_csv(tmp_path):
    p = tmp_path / "azure.csv"
    p.write_text(AZURE)
    tr = load_trace(p)
    assert len(tr) == 4
    assert tr.arrival_s[0] == 0.0 and np.all(np.diff(tr.arrival_s) >= 0)  # sorted by time
    assert tr.reordered == 2  # the 18:15:50.99 and 18:15:48.10 records swapped places, and it says so
    n1, n0, gap = tr.out_of_order  # file line 4 (18:15:48.10) comes 2.895169 s before line 3 (18:15:50.995169)
    assert (n1, n0) == (4, 3) and gap == pytest.approx(2.895169, abs=1e-6)
    assert tr.prompt_tokens.tolist() == [374, 879, 396, 100]
    assert tr.arrival_s[-1] == pytest.approx(10.0, abs=1e-5)
    assert tr.rate_per_s == pytest.approx(3 / 10.0, rel=1e-5)
    w = Workload.from_trace(p)
    assert w.mean_prompt_tokens == pytest.approx(np.mean([374, 396, 879, 100]))
    assert w.mean_output_tokens == pytest.approx(np.mean([44, 109, 45, 2]))
    assert w.arrival_rate_per_s == pytest.approx(0.3, rel=1e-5)
    w2 = Workload.from_trace(p, rate_per_s=3.0)  # time-scaled replay
    t, lp, ld = w2.sample(np.random.default_rng(0), n=4)
    assert t[-1] == pytest.approx(1.0, rel=1e-5) and lp.tolist() == [374, 879, 396, 100]


def test_mooncake_jsonl_and_gzip(tmp_path):
    p = tmp_path / "mc.jsonl"
    p.write_text(mooncake())
    tr = load_trace(p)
    assert len(tr) == 5 and tr.arrival_s.tolist() == pytest.approx([0, 1, 2, 3, 4])  # ms -> s
    assert tr.output_tokens.tolist() == [3, 4, 5, 6, 7]
    g = tmp_path / "mc.jsonl.gz"
    g.write_bytes(gzip.compress(mooncake().encode()))
    assert load_trace(g).prompt_tokens.tolist() == tr.prompt_tokens.tolist()
    ga = tmp_path / "azure.csv.gz"
    ga.write_bytes(gzip.compress(AZURE.encode()))
    assert len(load_trace(ga)) == 4


def test_embedded_trace():
    w = Workload.from_trace("azure-conv")
    assert w.mean_prompt_tokens > 100 and w.mean_output_tokens > 1 and w.arrival_rate_per_s > 0


@pytest.mark.parametrize("content", [
    "",                                                            # empty
    "TIMESTAMP,ContextTokens,GeneratedTokens\n",                   # header only
    "time,prompt,output\n1,2,3\n",                                 # wrong header
    "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,12\n",  # missing column
    "TIMESTAMP,ContextTokens,GeneratedTokens\nyesterday,12,3\n",   # bad timestamp
    "TIMESTAMP,ContextTokens,GeneratedTokens\n2023-11-16 18:15:46,0,3\n",  # zero-length prompt
    '{"timestamp": 1, "input_length": 3}\n',                       # Mooncake record missing a field
    '{"timestamp": 1, "input_length": 3, "output_length": 2}\n{not json\n',
])
def test_bad_traces(tmp_path, content):
    p = tmp_path / "bad.csv"
    p.write_text(content)
    with pytest.raises(DataError):
        Workload.from_trace(p)


def test_missing_trace_and_one_request(tmp_path):
    with pytest.raises(FluidqError, match="no-such"):
        Workload.from_trace(tmp_path / "no-such.csv")
    p = tmp_path / "one.jsonl"
    p.write_text(mooncake(1))
    with pytest.raises(DataError):
        Workload.from_trace(p)
    b = tmp_path / "binary.csv"
    b.write_bytes(b"\xff\xfe\x00\x01")
    with pytest.raises(DataError):
        load_trace(b)


# Sample means against the stated mean: R seeded replications, the true mean within 4 standard
# errors of the mean of the replication means (a chance failure has probability < 1e-4).
LENGTHS = [Fixed(n=37), Geometric(mean_tokens=50.0), PoissonLength(mean_tokens=20.5),
           LogNormal.from_mean(200.0, 1.0), Empirical(values=(1, 10, 100), weights=(0.5, 0.3, 0.2))]


@pytest.mark.parametrize("dist", LENGTHS, ids=lambda d: type(d).__name__)
def test_length_means_match_samples(dist):
    means = []
    for ss in np.random.SeedSequence(2024).spawn(20):
        x = dist.sample(np.random.default_rng(ss), 2000)
        assert x.dtype.kind == "i" and x.min() >= 1
        means.append(x.mean())
    means = np.array(means)
    se = means.std(ddof=1) / math.sqrt(means.size)
    assert abs(means.mean() - dist.mean) <= 4 * se + 1e-12, (means.mean(), dist.mean, se)


def test_length_supports():
    v, p = Empirical(values=(3, 1, 3)).support()
    assert v.tolist() == [1, 3] and p.tolist() == pytest.approx([1 / 3, 2 / 3])
    assert Fixed(n=4).support()[0].tolist() == [4]
    assert Geometric(mean_tokens=4.0).is_memoryless and Geometric(mean_tokens=4.0).p == 0.25


@pytest.mark.parametrize("arrival", [Poisson(rate_per_s=5.0), Periodic(rate_per_s=5.0), Gamma(rate_per_s=5.0, cv=3.0)],
                         ids=lambda a: type(a).__name__)
def test_arrival_rates_match_samples(arrival):
    rates = []
    for ss in np.random.SeedSequence(99).spawn(20):
        t = arrival.times(np.random.default_rng(ss), horizon_s=200.0)
        assert np.all(np.diff(t) >= 0) and t.max() <= 200.0
        rates.append(t.size / 200.0)
    rates = np.array(rates)
    se = rates.std(ddof=1) / math.sqrt(rates.size)
    assert abs(rates.mean() - 5.0) <= 4 * se + 0.03  # + the edge effect of a finite horizon (<= 1 arrival)


def test_gamma_is_burstier_than_poisson():
    rng = np.random.default_rng(1)
    gaps = np.diff(Gamma(rate_per_s=1.0, cv=3.0).times(rng, n=20000))
    assert gaps.std() / gaps.mean() > 2.0


def test_workload_means_and_sampling():
    w = Workload(arrival=Poisson(rate_per_s=4.0), prompt_tokens=Geometric(mean_tokens=129.0),
                 output_tokens=112)
    assert w.mean_tokens == pytest.approx(241.0)
    assert w.token_rate_per_s == pytest.approx(4 * 241.0)
    t, lp, ld = w.sample(np.random.default_rng(0), n=100)
    assert t.size == lp.size == ld.size == 100 and np.all(ld == 112)
    assert w.with_rate(8.0).arrival_rate_per_s == 8.0
    d = w.to_dict()
    assert d["mean_output_tokens"] == 112.0
    with pytest.raises(FluidqError, match="horizon_s"):
        w.sample(np.random.default_rng(0))


def test_empirical_weights_of_any_size_are_normalised_without_overflow():
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")  # 1e308 + 1e308 overflowed with a RuntimeWarning
        e = Empirical(values=[1, 2], weights=[1e308, 1e308])
    assert e.weights == (0.5, 0.5)
    with pytest.raises(FluidqError, match="weights"):
        Empirical(values=[1, 2], weights=[0, 0])
