"""``--profile-dir`` with ``--tensor-parallel-size 2`` and no link model: the error names the flags
(independent review, finding 4).  Before, the command line printed the library's Python names:
``link_bandwidth_gbps=None: expected a communication model...`` and, with only ``--link-latency-us 5``,
``link_bandwidth_gbps=None: expected both link_bandwidth_gbps and link_latency_us``."""
import shutil

import pytest

from cli_err import cli_error


@pytest.fixture
def folder(tmp_path):
    """The synthetic profile folder with a TP2 copy of its tables and no peer_sim_config.json (no link, no GPU
    memory)."""
    from flow_profile import META, write_profile  # tests/stability/flow_profile.py (on sys.path: tests/conftest.py)

    if not META.is_dir():
        pytest.skip(f"{META} is not shipped here")
    f = write_profile(tmp_path / "profile")
    (f / "peer_sim_config.json").unlink()
    for p in list(f.glob("profile_tp1_*")):
        shutil.copy(p, f / p.name.replace("tp1", "tp2"))
    return f


ARGS = ["--prompt", "300", "--output", "100"]


@pytest.mark.parametrize("cmd", [["check", "--load", "0.5", "--method", "analytic"], ["capacity"],
                                 ["simulate", "--load", "0.5", "--horizon", "5"]])
def test_no_link_model_names_the_flags(folder, capsys, cmd):
    base = [cmd[0], "--profile-dir", str(folder), "--kv-capacity", "200000", "--tensor-parallel-size", "2",
            *ARGS, *cmd[1:]]
    err = cli_error(base, capsys)
    assert "--link-bandwidth-gbps not given: expected a communication model: --link-bandwidth-gbps and " \
           "--link-latency-us, or --all-reduce-csv" in err, err
    assert "link_bandwidth_gbps" not in err and "link_latency_us" not in err and "=None" not in err, err
    err = cli_error(base + ["--link-latency-us", "5"], capsys)
    assert "--link-bandwidth-gbps not given: expected both --link-bandwidth-gbps and --link-latency-us" in err, err
    err = cli_error(base + ["--link-bandwidth-gbps", "50"], capsys)
    assert "--link-latency-us not given: expected both --link-bandwidth-gbps and --link-latency-us" in err, err


def test_no_gpu_memory_names_the_flags(folder, capsys):
    err = cli_error(["capacity", "--profile-dir", str(folder), *ARGS], capsys)
    assert "--gpu-memory-gib not given: expected one GPU's memory in GiB (or --kv-capacity)" in err, err
    assert "gpu_memory_gib" not in err and "on the command line" not in err, err


def test_a_given_value_keeps_its_flag_and_value(folder, capsys):
    err = cli_error(["capacity", "--profile-dir", str(folder), "--kv-capacity", "200000", "--tensor-parallel-size",
                     "2", "--link-bandwidth-gbps", "-1", "--link-latency-us", "5", *ARGS], capsys)
    assert "--link-bandwidth-gbps=-1" in err and "link_bandwidth_gbps" not in err, err
