"""The compiled kernel (fluidq.kernel) equals the same function run as Python, and its plumbing works.

The compiled/uncompiled check runs this file as a script in a subprocess with ``NUMBA_DISABLE_JIT=1``
(numba's switch, read at import) and compares every output array with the compiled run here.
"""
import math
import os
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

from fluidq import ContextAware, Engine, Geometric, Poisson, Staircase, Workload, simulate
from fluidq.engine import VLLM, Memory
from fluidq.policies import POLICY_NAMES, Scheduler

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve()


def _cases():
    """(label, engine, policy): the built-in schedulers, k_max, a context-aware time, long prompts."""
    base = Staircase(c=0.01, a=0.02, b0=16)
    eng = Engine(batch_time=base, b_max=64, k_max=6)
    ctx = Engine(batch_time=ContextAware(base=base, kv_s_per_token=3e-6), b_max=48)
    out = [(f"{name}-k", eng, name) for name in POLICY_NAMES]
    out += [(f"{name}-ctx", ctx, name) for name in ("sarathi", "orca", "vllm")]
    out.append(("chunk-long", Engine(batch_time=base, b_max=32),
                Scheduler(name="s", priority="prefill", mixed=True, chunked=False, chunk_long_prompts=True, k_max=5)))
    out.append(("decode-separate-long", Engine(batch_time=base, b_max=32),
                Scheduler(name="s", priority="decode", mixed=False, chunked=False, chunk_long_prompts=True)))
    # the kernel with KV memory (fluidq.kernel.kv): vLLM's paged rules, the default token rules, incremental
    # reservation with last-in-order victims, a first token with the prefill and context-aware times
    out.append(("kv-vllm", Engine(batch_time=base, b_max=64, kv_capacity_tokens=300, memory=VLLM,
                                  prefill_emits_token=True), "vllm-chunked"))
    out.append(("kv-tokens-ctx", Engine(batch_time=ContextAware(base=base, kv_s_per_token=3e-6), b_max=48,
                                        kv_capacity_tokens=250), "orca"))
    out.append(("kv-blocks-inc", Engine(batch_time=base, b_max=64, k_max=6, kv_capacity_tokens=400,
                                        memory=Memory(kind="blocks", block_size=8, reservation="incremental")), "vllm"))
    out.append(("kv-swap", Engine(batch_time=base, b_max=64, kv_capacity_tokens=300,
                                  memory=VLLM.with_(preemption="swap", victim="last_in_order")), "sarathi"))
    out.append(("kv-prefix", Engine(batch_time=base, b_max=64, kv_capacity_tokens=200,
                                    memory=VLLM.with_(prefix_caching=True, block_size=4)), "orca"))
    return out


def _arrays() -> dict:
    """Every output of every case, flattened to named arrays."""
    w = Workload(arrival=Poisson(rate_per_s=6.0), prompt_tokens=Geometric(mean_tokens=30),
                 output_tokens=Geometric(mean_tokens=25))
    res = {}
    for label, eng, pol in _cases():
        kw = {"swap_s_per_token": 1e-4} if eng.memory.preemption == "swap" else {}
        r = simulate(eng, w, pol, horizon_s=20, rng=11, record_iterations=True, method="fast", **kw)
        for k, v in r.requests.items():
            res[f"{label}/req/{k}"] = np.asarray(v)
        for k, v in r.backlog.items():
            res[f"{label}/backlog/{k}"] = np.asarray(v)
        for k, v in r.iterations.items():
            res[f"{label}/it/{k}"] = np.asarray(v)
        res[f"{label}/n"] = np.array([r.n_iterations, r.tokens_served, r.blocked, r.preemptions, r.wasted_tokens,
                                      r.rejected, r.peak_kv_tokens, r.examined, r.swap_tokens])
        res[f"{label}/f"] = np.array([r.busy_fraction, r.mixed_batch_fraction, r.end_s])
    return res


def _python_env(**extra):
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH")) if p)}
    env.update(extra)
    return env


def test_compiled_and_uncompiled_kernel_agree(uncompiled_agrees):
    jit = _arrays()
    uncompiled_agrees(HERE, jit)
    assert any(v.size > 100 for k, v in jit.items() if k.endswith("/it/t_s"))  # the runs did something


def test_without_numba_the_same_kernel_runs_as_python_with_a_warning(tmp_path):
    # a meta-path entry of None makes `import numba` raise ImportError, as on a platform without a wheel
    code = ("import sys, warnings; sys.modules['numba'] = None\n"
            "import numpy as np, fluidq\n"
            "from fluidq.kernel import compiled\n"
            "assert not compiled()\n"
            "e = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01, a=0.02, b0=16), b_max=64)\n"
            "w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=6.0), prompt_tokens=30, output_tokens=20)\n"
            "with warnings.catch_warnings(record=True) as ws:\n"
            "    warnings.simplefilter('always')\n"
            "    r = fluidq.simulate(e, w, 'orca', horizon_s=10, rng=2)\n"
            "    r2 = fluidq.simulate(e, w, 'orca', horizon_s=10, rng=2)\n"
            "msgs = [str(x.message) for x in ws if 'numba' in str(x.message)]\n"
            "print(len(msgs), msgs[0].count(chr(10)))\n"
            f"np.save({str(tmp_path / 'fin.npy')!r}, r.requests['finish_s'])\n")
    p = subprocess.run([sys.executable, "-c", code], env=_python_env(), capture_output=True, text=True, timeout=300,
                       cwd=ROOT)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["1", "0"]  # one warning, one line, however many runs
    e = Engine(batch_time=Staircase(c=0.01, a=0.02, b0=16), b_max=64)
    w = Workload(arrival=Poisson(rate_per_s=6.0), prompt_tokens=30, output_tokens=20)
    ref = simulate(e, w, "orca", horizon_s=10, rng=2, method="generic")
    np.testing.assert_array_equal(np.load(tmp_path / "fin.npy"), ref.requests["finish_s"])


def test_without_numba_the_suite_s_warning_filters_pass(tmp_path):
    # pytest under the project's own ini options (filterwarnings = error::RuntimeWarning:fluidq.*), numba
    # hidden before the first simulation: the fallback's warning must not become an error
    test = tmp_path / "test_no_numba.py"
    test.write_text(
        "import sys\n"
        "sys.modules['numba'] = None\n"
        "import warnings\n"
        "import fluidq\n"
        "from fluidq.kernel import KernelNotCompiledWarning, compiled\n\n"
        "def test_runs():\n"
        "    assert not compiled()\n"
        "    e = fluidq.Engine(batch_time=fluidq.Staircase(c=0.01, a=0.02, b0=16), b_max=64)\n"
        "    w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=6.0), prompt_tokens=30, output_tokens=20)\n"
        "    with warnings.catch_warnings(record=True) as ws:\n"
        "        r = fluidq.simulate(e, w, 'sarathi', horizon_s=5, rng=3)\n"
        "    assert [x.category for x in ws] == [KernelNotCompiledWarning]\n"
        "    assert r.n_iterations > 0\n")
    p = subprocess.run([sys.executable, "-m", "pytest", "-c", str(ROOT / "pyproject.toml"), "--rootdir", str(ROOT),
                        "-n", "0", "-p", "no:cacheprovider", str(test)], env=_python_env(), capture_output=True,
                       text=True, timeout=300, cwd=tmp_path)
    assert p.returncode == 0, p.stdout + p.stderr
    assert "1 passed" in p.stdout


def test_read_only_install_caches_under_the_user_cache_folder(tmp_path):
    from fluidq.kernel._jit import configure_cache
    env = {"XDG_CACHE_HOME": str(tmp_path)}
    assert configure_cache(env, writable=True) is None and "NUMBA_CACHE_DIR" not in env
    got = configure_cache(env, writable=False)
    if sys.platform.startswith("linux"):
        assert got == str(tmp_path / "fluidq" / "numba")
    assert env["NUMBA_CACHE_DIR"] == got
    user = {"NUMBA_CACHE_DIR": "/somewhere"}
    assert configure_cache(user, writable=False) is None and user["NUMBA_CACHE_DIR"] == "/somewhere"
    # in a fresh process whose install folder is unwritable, numba is pointed at the user's folder
    code = ("import os; real = os.access\n"
            "os.access = lambda p, m, *a, **k: False if 'kernel' in str(p) else real(p, m, *a, **k)\n"
            "import fluidq.kernel._jit as j, numba; j.compiled()\n"
            "print(os.environ['NUMBA_CACHE_DIR'], numba.config.CACHE_DIR)\n")
    env = _python_env(XDG_CACHE_HOME=str(tmp_path))
    env.pop("NUMBA_CACHE_DIR", None)
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120, cwd=ROOT)
    assert p.returncode == 0, p.stderr
    if sys.platform.startswith("linux"):
        assert p.stdout.split() == [str(tmp_path / "fluidq" / "numba")] * 2


def test_lazy_batch_time_table_is_filled_on_demand():
    """A table that computes entries on first use (b_max > 2^18) gives the same run as a full one."""
    from fluidq.kernel import run_fcfs
    rng = np.random.default_rng(5)
    n = 300
    arr = np.sort(rng.uniform(0, 30, n))
    P = rng.integers(1, 60, n)
    D = rng.integers(1, 40, n)
    b = 96
    full = [math.nan] + [0.01 + 0.0002 * k for k in range(1, b + 1)]

    class Lazy(dict):
        calls = 0

        def __missing__(self, k):
            Lazy.calls += 1
            self[k] = full[k]
            return full[k]

    kw = {"b_max": b, "k_cap": 1 << 62, "mixed": True, "chunked": True, "chunk_long": False,
          "prefill_first": False, "ks": 0.0, "horizon": math.inf, "record": True}
    a = run_fcfs(arr, P, D, tau_b=full, **kw)
    lazy = Lazy()
    c = run_fcfs(arr, P, D, tau_b=lazy, **kw)
    assert 0 < Lazy.calls <= b and Lazy.calls == len(set(c["records"]["prefill_tokens"]
                                                         + c["records"]["decode_tokens"]))
    for k in ("first_scheduled_s", "prefill_done_s", "first_token_s", "finish_s"):
        np.testing.assert_array_equal(a[k], c[k], err_msg=k)
    for k in a["records"]:
        np.testing.assert_array_equal(a["records"][k], c["records"][k], err_msg=k)


def test_progress_is_reported_without_changing_the_run():
    e = Engine(batch_time=Staircase(c=0.01, a=0.02, b0=16), b_max=64)
    w = Workload(arrival=Poisson(rate_per_s=6.0), prompt_tokens=Geometric(mean_tokens=30), output_tokens=20)
    seen = []
    a = simulate(e, w, "sarathi", horizon_s=30, rng=4, progress=lambda t, k: seen.append((t, k)))
    b = simulate(e, w, "sarathi", horizon_s=30, rng=4)
    assert a.method == b.method == "fast"
    np.testing.assert_array_equal(a.requests["finish_s"], b.requests["finish_s"])
    np.testing.assert_array_equal(a.backlog["t_s"], b.backlog["t_s"])
    ts = [t for t, _ in seen]
    assert len(ts) >= 10 and ts == sorted(ts) and ts[-1] <= 30
    assert all(t1 >= t0 + 1.0 + 0.02 * t0 for t0, t1 in zip(ts, ts[1:]))
    assert [k for _, k in seen] == sorted(k for _, k in seen) and seen[-1][1] <= a.requests["arrival_s"].size


def test_a_slow_first_compile_says_so_once_on_stderr(monkeypatch, capsys):
    import time

    from fluidq.kernel import run as kr
    if not kr.compiled():
        pytest.skip("nothing is compiled without numba")
    real = kr._run

    def slow(*a, **k):
        time.sleep(0.3)  # stands for numba compiling the kernel
        return real(*a, **k)

    monkeypatch.setattr(kr, "_run", slow)
    monkeypatch.setattr(kr, "_ready", False)
    # a real first compile earlier in this process (a cold numba cache) may have noted the kernel already
    monkeypatch.setattr(kr, "_noted", set())
    monkeypatch.setattr(kr, "NOTE_AFTER_S", 10.0)
    kr.ensure_compiled()
    assert capsys.readouterr().err == ""  # fast enough: silent
    monkeypatch.setattr(kr, "_ready", False)
    monkeypatch.setattr(kr, "NOTE_AFTER_S", 0.05)
    kr.ensure_compiled()
    kr.ensure_compiled()  # once per process
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "compiling the simulation kernel" in err


if __name__ == "__main__":  # the subprocess of test_compiled_and_uncompiled_kernel_agree
    from fluidq.kernel import compiled
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        np.savez(sys.argv[1], **_arrays())
    print(f"compiled={compiled()}")
