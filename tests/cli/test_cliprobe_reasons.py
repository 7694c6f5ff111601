"""A new user's probe of the CLI (2026-12-06): the words of an answer agree with its numbers."""
import json

from fluidq.testing.cli import run_cli


def test_engines_with_k_max_do_not_call_the_sum_b_max_over_t(capsys):
    """``capacity --engines 3 --k-max 20`` said "the sum of their b_max/t(b_max), 2,541 tokens/s" although
    3 x b_max/t(b_max) is 10,029 tokens/s (2,541 is 3 x the k_max-bound 847.1), and printed the per-engine
    lambda* = 4.236 req/s beside the total 12.71 req/s without saying it was per engine."""
    rc, out, err = run_cli(["capacity", "--engines", "3", "--k-max", "20", "--json"], capsys)
    assert rc == 0, err
    d = json.loads(out)
    assert abs(d["tokens_per_s"] - 3 * 847.1) < 1
    assert "b_max/t(b_max)" not in d["reason"].split("Theorem-2 number")[-1]
    assert "each engine: k_max=20 binds" in d["reason"]


def test_engines_with_a_kv_cache_do_not_call_the_sum_b_max_over_t(capsys):
    rc, out, err = run_cli(["capacity", "--engines", "3", "--kv-capacity", "5000", "--json"], capsys)
    assert rc == 0, err
    d = json.loads(out)
    assert d["tokens_per_s"] < 5000  # 3 x 1,412: the cache binds
    assert "b_max/t(b_max)" not in d["reason"] and "KV cache" in d["reason"]


def test_engines_without_limits_keep_b_max_over_t(capsys):
    rc, out, err = run_cli(["capacity", "--engines", "3", "--json"], capsys)
    assert rc == 0, err
    d = json.loads(out)
    assert abs(d["tokens_per_s"] - 3 * 512 / 0.15316) < 1e-6 * d["tokens_per_s"]
    assert "sum of their b_max/t(b_max), 10,029 tokens/s" in d["reason"]
