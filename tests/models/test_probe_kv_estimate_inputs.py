"""``kv_capacity_estimate`` checks ``max_num_batched_tokens`` and ``max_num_seqs`` even when a given
``activation_reserve_gib`` leaves them unused (found by the independent probe: ``max_num_seqs=-5`` was accepted
and recorded in the estimate's ``inputs``)."""
import pytest

from fluidq.errors import ParameterError
from fluidq.models import kv_capacity_estimate, load_model


@pytest.mark.parametrize("kw", [{"max_num_batched_tokens": 0}, {"max_num_seqs": -5}, {"max_num_seqs": 1.5}])
@pytest.mark.parametrize("reserve", [None, 1.0])
def test_budgets_checked_with_or_without_a_given_reserve(kw, reserve):
    with pytest.raises(ParameterError, match=next(iter(kw))):
        kv_capacity_estimate(load_model("Llama-3.1-8B"), gpu_memory_gib=80, activation_reserve_gib=reserve, **kw)


def test_given_reserve_estimate_unchanged():
    m = load_model("Llama-3.1-8B")
    est = kv_capacity_estimate(m, gpu_memory_gib=80, activation_reserve_gib=1.0)
    assert est.tokens == kv_capacity_estimate(m, gpu_memory_gib=80, activation_reserve_gib=1.0,
                                              max_num_batched_tokens=8192, max_num_seqs=1024).tokens
