"""Descriptions compare by value: caches keyed on lengths must tell different supports apart."""
from fluidq import Empirical, Fixed, Geometric, TraceArrivals


def test_empirical_lengths_compare_by_support():
    a, b = Empirical(values=(1, 2)), Empirical(values=(1, 3))
    assert a != b
    assert a == Empirical(values=(2, 1))  # the same support and weights, given in another order
    assert hash(a) == hash(Empirical(values=(2, 1)))
    assert Empirical(values=(1, 2), weights=(1, 3)) != a
    assert Fixed(n=3) != Geometric(mean_tokens=3)
    assert len({a, b, Empirical(values=(2, 1))}) == 2


def test_trace_arrivals_compare_by_times():
    assert TraceArrivals(times_s=(0, 1, 2)) != TraceArrivals(times_s=(0, 2, 4), rate_per_s=1.0)
    assert TraceArrivals(times_s=(0, 1, 2)) == TraceArrivals(times_s=(5, 6, 7))  # shifted to start at 0
