"""A max_model_len the KV cache cannot hold one request of is refused in one wording (fluidq.models.context.
check_fits_cache), whether the cache is vLLM's planned one (kv_capacity_estimate) or a given one (roofline_engine):
the two refusals were written apart ("is estimated to hold" / "holds", hints "give more memory" / "a larger
cache")."""
import re

import pytest

from fluidq.engine import roofline_engine
from fluidq.errors import ParameterError
from fluidq.models import kv_capacity_estimate, load_gpu, load_model
from fluidq.models.context import check_fits_cache


def _refusal(fn):
    with pytest.raises(ParameterError) as exc:
        fn()
    return exc.value


def test_the_planned_and_the_given_cache_refuse_in_one_wording():
    m, gpu = load_model("Llama-3.1-8B"), load_gpu("RTX-4090")
    est = kv_capacity_estimate(m, gpu_memory_gib=gpu.memory_gib)
    planned = _refusal(lambda: kv_capacity_estimate(m, gpu_memory_gib=gpu.memory_gib,
                                                    max_model_len=est.longest_request() + 1))
    given = _refusal(lambda: roofline_engine(m, gpu, kv_capacity_tokens=10_000, max_model_len=10_001))
    shape = (r"^max_model_len=\d+: expected at most [\d,]+ tokens, the longest request the (.+) holds "
             r"\(vLLM refuses to start when one request of max_model_len tokens does not fit; lower it, or give (.+)\)$")
    p, g = re.match(shape, str(planned)), re.match(shape, str(given))
    assert p and g, (str(planned), str(given))
    assert p.group(1) == f"estimated KV cache ({est.tokens:,} tokens, vLLM's memory planner)" and p.group(2) == "more memory"
    assert g.group(1) == "given KV cache (10,000 tokens, blocks of 16)" and g.group(2) == "a larger cache"
    assert f"at most {est.longest_request():,} tokens" in str(planned) and "at most 10,000 tokens" in str(given)


def test_a_cache_that_holds_the_length_or_any_length_is_not_refused():
    check_fits_cache(4096, 4096, "the cache", "more")
    check_fits_cache(10**9, None, "the cache", "more")  # every layer windowed: no length is too long
    assert str(_refusal(lambda: check_fits_cache(4097, 4096, "the cache", "more"))).startswith(
        "max_model_len=4097: expected at most 4,096 tokens, the longest request the cache holds")
