"""Start-up cost of the CLI: CPU seconds of fresh processes, side by side with ``import numpy``.

Run:  /work/venv/bin/python benchmarks/bench_startup.py [--reps 5] [--base COMMIT]

Each command runs ``--reps`` times in a fresh Python process (this tree on ``PYTHONPATH``); the
figure is the least user + system CPU time of the child (``os.wait4``), which is what start-up
costs when the machine is not busy.  ``--base COMMIT`` runs the same commands on that commit's
``fluidq`` (extracted with ``git archive``), interleaved with this tree's runs, for a before/after.
The target (issue 15): ``fluidq check --load 0.9`` within 3x of ``python -c "import numpy"`` (aimed at 2.2x, a
margin for a busy machine).  Nothing is asserted; what the commands import (not how long it takes) is
held by ``tests/cli/test_startup_imports.py``.
"""
from __future__ import annotations

import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COMMANDS = {
    "import numpy": ["-c", "import numpy"],
    "import fluidq": ["-c", "import fluidq"],
    "fluidq --help": ["-m", "fluidq", "--help"],
    "fluidq capacity": ["-m", "fluidq", "capacity"],
    "fluidq check --load 0.9": ["-m", "fluidq", "check", "--load", "0.9"],
    "import fluidq.dtmc.threshold": ["-c", "import fluidq.dtmc.threshold"],
    "check --load 0.9 --policy sarathi": ["-m", "fluidq", "check", "--load", "0.9", "--policy", "sarathi"],
}

#: issue 15: ``fluidq check --load 0.9``'s start-up at most this many times ``python -c "import numpy"``'s
TARGET, AIM = 3.0, 2.2


def cpu_s(args: list[str], src: str, cwd: str) -> float:
    """User + system CPU seconds of one fresh ``python args`` with ``src`` first on the path.

    ``cwd`` is an empty folder: ``-c`` and ``-m`` put the working folder before ``PYTHONPATH``.
    """
    env = {**os.environ, "PYTHONPATH": src}
    proc = subprocess.Popen([sys.executable, *args], env=env, cwd=cwd, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE)
    _pid, status, ru = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    err = proc.stderr.read().decode()
    proc.stderr.close()
    if proc.returncode:
        raise SystemExit(f"{args}: exit {proc.returncode}\n{err}")
    return ru.ru_utime + ru.ru_stime


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--reps", type=int, default=5, help="fresh processes per command (the least is kept)")
    ap.add_argument("--base", help="also run the commands on this commit's fluidq (before/after)")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp, tempfile.TemporaryDirectory() as empty:
        srcs = {"this tree": str(ROOT)}
        if a.base:
            arch = subprocess.run(["git", "archive", a.base, "fluidq"], cwd=ROOT, capture_output=True,
                                  check=True).stdout
            subprocess.run(["tar", "-x", "-C", tmp], input=arch, check=True)
            srcs = {a.base[:7]: tmp, **srcs}
        for src in srcs.values():  # write the bytecode caches first: not part of start-up
            for args in COMMANDS.values():
                cpu_s(args, src, empty)
        best = {(name, key): float("inf") for name in srcs for key in COMMANDS}
        for _ in range(a.reps):
            for key, args in COMMANDS.items():
                for name, src in srcs.items():
                    best[name, key] = min(best[name, key], cpu_s(args, src, empty))
    print(f"# CLI start-up  {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}  "
          f"{platform.processor() or platform.machine()}  python {platform.python_version()}  "
          f"load average {os.getloadavg()[0]:.1f}  "
          f"(least of {a.reps} fresh processes, user + system CPU-s)")
    cols = list(srcs)
    print(f"{'command':<36}" + "".join(f"{c:>12}{'/numpy':>8}" for c in cols)
          + (f"{'new/base':>10}" if a.base else ""))
    for key in COMMANDS:
        row = f"{key:<36}"
        for name in cols:
            row += f"{best[name, key]:>12.3f}{best[name, key] / best[name, 'import numpy']:>7.1f}x"
        if a.base:
            row += f"{best[cols[1], key] / best[cols[0], key]:>10.2f}"
        print(row)
    for name in cols:
        r = best[name, "fluidq check --load 0.9"] / best[name, "import numpy"]
        print(f"# {name}: `fluidq check --load 0.9` {r:.2f}x `import numpy`; target <= {TARGET:g}x (aim {AIM:g}x): "
              f"{'met' if r <= TARGET else 'NOT met'}{'' if r <= AIM else ' (aim not reached)'}")


if __name__ == "__main__":
    main()
