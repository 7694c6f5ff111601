"""numba is a core dependency only where numba publishes wheels (issue 15); ``fluidq[jit]`` asks for it anywhere.

Before, ``"numba>=0.60"`` was unconditional: on a platform or Python with no numba wheel pip built numba and llvmlite
from source and the install failed, instead of installing fluidq with its plain-Python kernel
(:mod:`fluidq.kernel._jit`).  The wheel platforms and Pythons below were read from the registry with pip on
2026-12-07 (numba 0.68.1; Intel macOS: 0.62.1, its last wheels).  What runs where the markers leave numba out (the
kernel uncompiled, one :class:`~fluidq.kernel.KernelNotCompiledWarning`) is held by tests/sim/test_sim_nokv_kernel.py
(``no_numba``) and tests/sim/test_kernel.py (a process that cannot import numba)."""
import platform
import sys
import tomllib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]



def _numba_lines():
    pytest.importorskip("packaging.requirements", reason="packaging is not installed: the markers are not evaluated "
                        "(test_numba_is_listed_and_the_jit_extra_asks_for_it still runs)")
    from packaging.requirements import Requirement

    reqs = [Requirement(r) for r in PROJECT["dependencies"]]
    return [r for r in reqs if r.name == "numba"]


def _env(machine, system, version):
    """A marker environment: ``platform_machine``, ``sys_platform`` and ``python_version`` ``version``."""
    return {"platform_machine": machine, "sys_platform": system, "python_version": version,
            "python_full_version": version + ".0", "implementation_name": "cpython",
            "platform_python_implementation": "CPython", "os_name": "nt" if system == "win32" else "posix",
            "platform_system": {"linux": "Linux", "darwin": "Darwin", "win32": "Windows"}.get(system, system),
            "extra": ""}


def _asked(env):
    """The numba requirements pip would install in ``env`` (their specifiers as strings)."""
    return [str(r.specifier) for r in _numba_lines() if r.marker is None or r.marker.evaluate(env)]


def test_every_numba_line_carries_a_marker():
    lines = _numba_lines()
    assert lines, "numba is no longer a dependency"
    assert all(r.marker is not None for r in lines), [str(r) for r in lines]


def test_this_machine_gets_numba():
    """CI here (Linux x86_64, Python 3.11) must keep installing numba: the compiled kernel is what the suite tests."""
    lines = _numba_lines()  # (skips without packaging)
    from packaging.markers import default_environment

    env = default_environment()
    assert lines
    if sys.platform == "linux" and platform.machine() == "x86_64":
        assert _asked(env) == [">=0.60"], _asked(env)
    # wherever these tests run with numba installed from a wheel, the markers must have asked for it
    try:
        import numba  # noqa: F401
    except ImportError:
        return
    assert _asked(env), f"numba is installed here but the markers leave it out: {env}"


@pytest.mark.parametrize("machine, system, version", [
    ("x86_64", "linux", "3.11"), ("x86_64", "linux", "3.15"), ("aarch64", "linux", "3.12"),
    ("arm64", "darwin", "3.13"), ("AMD64", "win32", "3.11"), ("AMD64", "win32", "3.14"),
    ("ARM64", "win32", "3.12"), ("ARM64", "win32", "3.14"),
])
def test_wheel_platforms_get_numba(machine, system, version):
    assert _asked(_env(machine, system, version)) == [">=0.60"]


@pytest.mark.parametrize("version", ["3.11", "3.12", "3.13"])
def test_intel_mac_gets_the_last_numba_with_a_wheel(version):
    asked = _asked(_env("x86_64", "darwin", version))
    assert len(asked) == 1 and "<0.63" in asked[0], asked


@pytest.mark.parametrize("machine, system, version", [
    ("riscv64", "linux", "3.11"), ("ppc64le", "linux", "3.12"), ("s390x", "linux", "3.12"),
    ("i686", "linux", "3.11"), ("armv7l", "linux", "3.11"),
    ("x86_64", "linux", "3.16"), ("aarch64", "linux", "3.17"),  # a Python beyond numba's wheels
    ("arm64", "darwin", "3.16"), ("x86_64", "darwin", "3.14"),  # Intel macOS: no wheel for 3.14
    ("x86", "win32", "3.11"), ("ARM64", "win32", "3.11"), ("ARM64", "win32", "3.15"),
    ("amd64", "freebsd14", "3.11"), ("x86_64", "cygwin", "3.11"),
])
def test_platforms_without_a_wheel_do_not_ask_for_numba(machine, system, version):
    """No numba there: fluidq installs and its kernel runs as plain Python with a one-line warning."""
    assert _asked(_env(machine, system, version)) == []


def test_numba_is_listed_and_the_jit_extra_asks_for_it():
    """Without ``packaging``: numba is among the core dependencies, each line with a marker, and the ``jit`` extra
    asks for it with none."""
    core = [r for r in PROJECT["dependencies"] if r.replace(" ", "").startswith("numba")]
    assert core and all(";" in r for r in core), PROJECT["dependencies"]
    extra = PROJECT["optional-dependencies"]["jit"]
    assert any(r.replace(" ", "").startswith("numba>=") and ";" not in r for r in extra), extra

