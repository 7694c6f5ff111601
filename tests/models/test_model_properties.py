"""Invariants of ModelFacts and the KV estimate over random valid shapes (hypothesis)."""
from hypothesis import given, settings
from hypothesis import strategies as st

from fluidq.errors import ParameterError
from fluidq.models import ModelFacts, kv_capacity_estimate


@st.composite
def models(draw):
    kv = draw(st.sampled_from([1, 2, 4, 8, 16]))
    heads = kv * draw(st.sampled_from([1, 2, 4, 8]))
    head_dim = draw(st.sampled_from([64, 128]))
    kw = dict(name="m", n_layers=draw(st.integers(1, 96)), hidden_size=heads * head_dim, n_heads=heads,
              n_kv_heads=kv, head_dim=head_dim, intermediate_size=draw(st.integers(1, 4096)) * 8,
              vocab_size=draw(st.integers(1000, 200_000)), tie_word_embeddings=draw(st.booleans()),
              attention_bias=draw(st.booleans()), qk_norm=draw(st.booleans()),
              dtype=draw(st.sampled_from(["bfloat16", "float16", "float32"])))
    if draw(st.booleans()):
        e = draw(st.sampled_from([8, 16, 64, 128]))
        kw.update(n_experts=e, experts_per_token=draw(st.integers(1, 8)),
                  moe_intermediate_size=draw(st.integers(1, 512)) * 8)
    return ModelFacts(**kw)


@settings(max_examples=60, deadline=None)
@given(models(), st.sampled_from([1, 2, 4, 8, 16, 32]))
def test_splitting_never_loses_bytes(m, tp):
    if tp not in m.tensor_parallel_sizes(32):  # heads, KV heads and MLP widths must split (vLLM's rule)
        try:
            m.weight_bytes_per_gpu(tp)
        except ParameterError as exc:
            assert exc.name == "tensor_parallel_size"
        else:
            raise AssertionError(f"tp={tp} accepted though it does not split the model")
        return
    assert m.active_param_count <= m.param_count
    assert m.weight_bytes == m.bytes_per_value * m.param_count
    assert m.weight_bytes_per_gpu(tp) * tp >= m.weight_bytes >= m.weight_bytes_per_gpu(tp)
    per_gpu = m.kv_bytes_per_token_per_gpu(tp)
    assert per_gpu * tp >= m.kv_bytes_per_token()
    if tp <= m.n_kv_heads:
        assert per_gpu * tp == m.kv_bytes_per_token()  # split exactly, no replication


@settings(max_examples=40, deadline=None)
@given(models(), st.floats(24, 200), st.floats(0.05, 1.0), st.sampled_from([8, 16, 32]))
def test_estimate_is_whole_blocks_and_monotone(m, gib, util, bs):
    try:
        e = kv_capacity_estimate(m, gpu_memory_gib=gib, gpu_memory_utilization=util, block_size=bs)
    except ParameterError as exc:
        # the weights (and reserve) do not fit; a utilization under vLLM's 0.9 is named when 0.9 would fit
        assert exc.name == "gpu_memory_gib" or (exc.name == "gpu_memory_utilization" and util < 0.9)
        if exc.name == "gpu_memory_utilization":
            kv_capacity_estimate(m, gpu_memory_gib=gib, gpu_memory_utilization=0.9, block_size=bs)  # fits
        return
    assert e.tokens == e.blocks * bs and e.blocks >= 1
    assert e.tokens * e.kv_bytes_per_token_per_gpu <= e.kv_bytes < (e.tokens + bs) * e.kv_bytes_per_token_per_gpu
    more = kv_capacity_estimate(m, gpu_memory_gib=gib * 1.5, gpu_memory_utilization=util, block_size=bs)
    assert more.tokens >= e.tokens
