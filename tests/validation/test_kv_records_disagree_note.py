"""Two records of a run's KV cache that give two sizes (``kv_cache.num_kv_tokens`` vs ``num_gpu_blocks x
block_size``) are said on stderr, naming both and the one used (review revbad2 M6: the first was used silently).
Not refused: a hybrid model's cache (sliding-window layers) can count its tokens otherwise than blocks x block
size; the note says so and which record wins (``num_kv_tokens``, vLLM's own count)."""
import run_variants as rv
from fluidq.validate.runs import read_run


def _run(tmp_path, name, num_kv_tokens):
    d = rv.copy_run(rv.LLAMA_4090, tmp_path / name)  # records num_gpu_blocks 2588 x 16 = 41,408 tokens
    m = rv.meta(d)
    m["kv_cache"]["num_kv_tokens"] = num_kv_tokens
    rv.set_meta(d, m)
    return read_run(d)


def test_two_kv_sizes_are_named_with_the_one_used(tmp_path, capsys):
    run = _run(tmp_path, "disagree", 50_000)
    capsys.readouterr()
    assert run.kv_capacity_tokens == 50_000  # the precedence is unchanged
    err = capsys.readouterr().err
    assert "records the KV cache twice" in err and "kv_cache.num_kv_tokens = 50000" in err
    assert "kv_cache.num_gpu_blocks = 2588 x block_size 16 (41,408 tokens)" in err and "using 50,000 tokens" in err
    assert run.kv_capacity_tokens == 50_000 and capsys.readouterr().err == ""  # once


def test_agreeing_kv_records_say_nothing(tmp_path, capsys):
    run = _run(tmp_path, "agree", 41_408)
    capsys.readouterr()
    assert run.kv_capacity_tokens == 41_408 and capsys.readouterr().err == ""
