"""A simulated threshold never exceeds the proven capacity (found by the independent probe: FasterTransformer with
``k_max=8`` on an engine not shipped gave ``stability_threshold`` 6.32 req/s, bracket up to 6.78, where
``max_throughput`` gives the k_max region's 6.167 req/s and ``check_stability`` says "unstable" for every
scheduler above it).  The search now starts its bracket at that capacity instead of cutting it afterwards: no
rate at or above it is simulated, and the search runs no more replication sets than the one without the bound."""
import pytest

import fluidq as fq
import fluidq.stability.simulation as ss

E = fq.Engine(batch_time=fq.Affine(c=0.016180301027332998, a=5.044089546586541e-05), b_max=200, k_max=8)
W = fq.Workload(arrival=fq.Poisson(rate_per_s=1.0), prompt_tokens=10, output_tokens=77)


def _counting(monkeypatch):
    rates = []
    real = ss.replicate

    def counted(engine, workload, *a, **kw):
        rates.append(workload.arrival_rate_per_s)
        return real(engine, workload, *a, **kw)

    monkeypatch.setattr(ss, "replicate", counted)
    return rates


@pytest.mark.parametrize("seed", [1, 2])
def test_simulated_threshold_starts_at_the_region_rate(monkeypatch, seed):
    bound = fq.max_throughput(E, W).requests_per_s
    rates = _counting(monkeypatch)
    th = fq.stability_threshold(E, W, "fastertransformer", rng=seed)
    assert th.method == "simulation"
    assert th.lower_per_s <= th.arrival_rate_per_s <= th.upper_per_s <= bound * (1 + 1e-12)
    assert th.upper_per_s == pytest.approx(bound) or max(rates) < th.upper_per_s < bound
    assert th.details["upper_bound_per_s"] == pytest.approx(bound)
    assert rates and max(rates) < bound  # nothing simulated at or above the proven end
    assert fq.check_stability(E, W.with_rate(bound * 1.05), "fastertransformer").status == fq.Status.UNSTABLE


class _Verdict:
    """What find_threshold reads of a replication set: a verdict known from the rate (a threshold ``thr``,
    inconclusive within ``band`` of it), so that two searches differ only in their brackets."""

    def __init__(self, verdict):
        self.verdict, self.slope_tokens_per_s, self.slope_ci, self.inputs = verdict, 0.0, (0.0, 0.0), {}


def _oracle(monkeypatch, thr, band):
    rates = []

    def oracle(engine, workload, *a, **kw):
        r = workload.arrival_rate_per_s
        rates.append(r)
        return _Verdict("growing" if r > thr * (1 + band) else "bounded" if r < thr * (1 - band) else "inconclusive")

    monkeypatch.setattr(ss, "replicate", oracle)
    return rates


@pytest.mark.parametrize("frac", [0.31, 0.57, 0.81, 0.91, 0.97, 0.995, 0.9999])  # no bisection point of either search
def test_starting_at_the_bound_runs_no_more_sets_and_never_passes_it(monkeypatch, frac):
    # verdicts that follow the rate exactly: the two searches differ only in where their brackets start, and
    # the one starting at the bound runs no more sets (it skips the top end and bisects a narrower bracket)
    bound = fq.max_throughput(E, W).requests_per_s
    thr = frac * bound
    rates = _oracle(monkeypatch, thr, 0.0)
    free = fq.find_threshold(E, W, "fastertransformer", rng=1)
    n_free = len(rates)
    rates.clear()
    th = fq.stability_threshold(E, W, "fastertransformer", rng=1)
    assert th.method == "simulation"
    assert len(rates) <= n_free, (len(rates), n_free)
    assert max(rates) < bound and th.upper_per_s <= bound
    for r in (free, th):
        assert r.lower_per_s <= thr <= r.upper_per_s
        assert r.upper_per_s - r.lower_per_s <= 0.02 * 0.5 * (r.lower_per_s + r.upper_per_s)


@pytest.mark.parametrize("frac", [0.55, 0.8, 0.97, 0.9999])
def test_an_inconclusive_band_keeps_the_bracket_below_the_bound(monkeypatch, frac):
    # with an inconclusive band the search stops where it meets it (which can take more or fewer sets than a
    # search from a wider bracket); its bracket still holds the band and never passes the bound
    bound = fq.max_throughput(E, W).requests_per_s
    thr, band = frac * bound, 0.004
    rates = _oracle(monkeypatch, thr, band)
    th = fq.stability_threshold(E, W, "fastertransformer", rng=1)
    assert max(rates) < bound and th.upper_per_s <= bound
    assert th.lower_per_s <= thr * (1 + band) and th.upper_per_s >= min(thr * (1 - band), bound)


def test_find_threshold_takes_the_proven_end_as_growing_without_simulating_it(monkeypatch):
    bound = fq.max_throughput(E, W).requests_per_s
    rates = _counting(monkeypatch)
    r = fq.find_threshold(E, W, "fastertransformer", rng=3, unstable_from_per_s=bound, max_steps=3,
                          high_rate_per_s=2 * bound)
    assert r.upper_per_s == bound and all(x < bound for x in rates) and len(rates) <= 3
    assert "proven, not simulated" in r.reason and r.inputs["unstable_from_per_s"] == bound
    with pytest.raises(fq.errors.ParameterError, match="unstable_from_per_s"):
        fq.find_threshold(E, W, "fastertransformer", rng=3, unstable_from_per_s=-1.0)
    with pytest.raises(fq.errors.ParameterError, match="low_rate_per_s"):
        fq.find_threshold(E, W, "fastertransformer", rng=3, unstable_from_per_s=bound, low_rate_per_s=bound)
