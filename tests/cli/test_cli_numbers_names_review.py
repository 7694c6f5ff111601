"""What a new user reads (second review of the human output): numbers at 4 significant digits with
thousands separators, never scientific notation or float noise; no Python names (``None``, dicts,
``chunk_long_prompts=False``) where the CLI has words and flags."""
import re

from fluidq.testing.cli import assert_one_line, run_cli


def _line(out, head):
    return next(x for x in out.splitlines() if x.startswith(head))


def test_capacity_of_three_engines_says_10029_not_scientific(capsys):
    rc, out, err = run_cli(["capacity", "--engines", "3"], capsys)
    assert rc == 0, err
    why = _line(out, "why")
    assert "e+0" not in why and "b_max/t(b_max), 10,029 tokens/s" in why, why


def test_capacity_deployment_limits_in_words_at_four_digits(capsys):
    rc, out, err = run_cli(["capacity", "--gpu", "A100-SXM4-80GB", "--model", "Llama-2-7B"], capsys)
    assert rc == 0, err
    binding, why = _line(out, "binding"), _line(out, "why")
    # k_max: the 256 running requests less the 2.6 prefilling (decoding residents, as the other two limits); the KV
    # cache less the free room below the waiting head's prompt, in whole blocks since h-fix16 (753.3 before
    # 2026-12-06, h-pre16; 753.0 in tokens plus half a block)
    assert "residents allowed: the token budget 1,019, k_max 253.4, the KV cache 752.6)" in binding, binding
    assert "token_budget" not in why and "kv_cache" not in why and "1018.9" not in why, why
    assert "(the token budget allows 1,019, the KV cache allows 752.6)" in why, why


def test_profiles_show_prints_words_not_python(capsys):
    rc, out, err = run_cli(["profiles", "show", "paper-codellama34b-a100"], capsys)
    assert rc == 0, err
    assert "None" not in out and "{" not in out, out
    assert re.search(r"^k_max \(--k-max\) +none$", out, re.M) and re.search(r"^KV cache \(--kv-capacity\) +none$", out, re.M), out
    assert re.search(r"^fit +R\^2 > 0\.97 \(reported\)$", out, re.M), out
    rc, out, err = run_cli(["profiles", "show", "vidur-llama2-7b-a100"], capsys)
    assert rc == 0 and "{" not in out and "MAPE 4.11% (held out)" in _line(out, "fit"), out


def test_profile_dir_that_is_not_a_folder_names_the_flag(capsys, tmp_path):
    err = assert_one_line(["capacity", "--profile-dir", "/nonexist"], capsys,
                          "--profile-dir /nonexist: expected a folder of operator profiles", "no such folder")
    assert "profile_dir" not in err, err
    f = tmp_path / "a.txt"
    f.write_text("x")
    err = assert_one_line(["capacity", "--profile-dir", str(f)], capsys, "--profile-dir ", "that is a file")
    assert "profile_dir=" not in err, err
    for cmd in ("check", "simulate"):  # the engine-building commands share capacity's check of the folder
        assert_one_line([cmd, "--profile-dir", "/nonexist"], capsys,
                        "--profile-dir /nonexist: expected a folder of operator profiles", "no such folder")
        assert_one_line([cmd, "--profile-dir", str(f)], capsys, "--profile-dir ", "that is a file")


def test_latency_swap_without_its_cost_says_it_is_required(capsys):
    err = assert_one_line(["latency", "--preemption", "swap", "--kv-capacity", "20000"], capsys,
                          "--swap-ms-per-token is required with --preemption swap (")
    assert "None" not in err and "=" not in err, err


def test_latency_loads_are_quoted_like_the_other_messages(capsys):
    err = assert_one_line(["latency", "--loads", "0"], capsys, "--loads 0: expected comma-separated fractions")
    assert "'" not in err and "--loads=" not in err, err
    assert_one_line(["latency", "--loads", "0.5,0.5"], capsys, "--loads 0.5,0.5: expected distinct loads")
    assert_one_line(["latency", "--loads", "0.5,x"], capsys, "--loads 0.5,x: expected comma-separated numbers")


def test_check_without_chunking_names_the_flag_and_reads_right(capsys):
    rc, out, err = run_cli(["check", "--no-chunk-long-prompts", "--prompt", "800", "--rate", "1"], capsys)
    assert rc == 0, err
    assert "chunk_long_prompts=False)" not in out and "a fraction 1 of" not in out, out
    vllm = _line(out, "  vllm ")
    assert "every prompt is longer than the budget b=512" in vllm and "`--no-chunk-long-prompts`" in vllm, vllm
    assert "fastertransformer and vllm never schedule a prompt longer than b_max=512" in _line(out, "long prompts"), out
    rc, out, err = run_cli(["check", "--no-chunk-long-prompts", "--prompt", "800", "--rate", "1", "--policy", "vllm"],
                           capsys)
    assert rc == 0 and "(vllm never schedules a prompt longer than b_max=512" in _line(out, "long prompts"), out
    rc, out, err = run_cli(["check", "--prompt", "800", "--rate", "1", "--policy", "vllm"], capsys)
    assert rc == 0 and "(vllm splits a prompt longer than b_max=512 into chunks" in _line(out, "long prompts"), out
