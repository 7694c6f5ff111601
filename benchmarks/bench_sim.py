"""Simulator speed: fluidq against pyserq (serQ's Python binding) on the same workloads.

Run:  /work/venv/bin/python benchmarks/bench_sim.py [--quick] [--no-pyserq] [--pyserq-timeout S]

Workloads (reference §7 of the design notes; paper constants t_b = 11.28 + 35.47 ceil(b/128) ms):

W1  Theorem-2 setup: Sarathi, b_max = 512, deterministic (100, 100), Poisson at 0.9 lambda*, 200k requests
W2  the same at 1.2 lambda* (unstable: the queue grows to tens of thousands)
W3  FasterTransformer at vertex C: k_max = 100, b_max = 128, one (290, 990) request every 0.4675 s, 500 s
    (fluidq lets FT chunk prompts longer than b_max, otherwise nothing is ever served)

Each measurement runs in a fresh child process; the figures are simulated requests (arrivals) per
CPU-second of that process and its peak resident memory.  pyserq is installed into its own virtual
environment under /tmp (``pip install pyserq``); when that fails the pyserq columns say why.  pyserq
runs are given a CPU-time limit (``--pyserq-timeout``) and a shorter horizon where its cost grows
super-linearly; the table says which horizon each side ran.

``--against SRC`` measures fluidq against another source tree of fluidq instead (e.g. the commit
before a change, extracted with ``git archive``): every workload, plus ``W1-paged`` (vLLM's block
KV cache, new trees only) and ``W1-generic-kv`` / ``W1-generic-paged`` (the token and block KV caches on
the generic ``select()`` path, ``method="generic"``), runs in fresh child processes alternating between the two trees
(``--repeats`` times each, the smallest CPU time kept) and the table prints both costs and their
ratio side by side.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

C, A, B0 = 0.01128, 0.03547, 128
LAM_STAR_100 = (512 / (C + A * 4)) / 200.0  # requests/s for (100, 100), b_max = 512
VENV = Path(tempfile.gettempdir()) / "fluidq-bench-pyserq-venv"

# ---------------------------------------------------------------- fluidq side


def fluidq_child(name: str, n: int) -> dict:
    from fluidq import Engine, Periodic, Poisson, Staircase, Workload
    from fluidq.policies import FasterTransformer
    from fluidq.sim import simulate

    bt = Staircase(c=C, a=A, b0=B0)
    kw = {}
    if name in ("W1", "W2", "W1-generic", "W1-kv", "W1-paged", "W1-generic-kv", "W1-generic-paged"):
        load = 1.2 if name == "W2" else 0.9
        kv = name in ("W1-kv", "W1-paged", "W1-generic-kv", "W1-generic-paged")
        e = Engine(batch_time=bt, b_max=512, kv_capacity_tokens=60_000 if kv else None)
        if name in ("W1-paged", "W1-generic-paged"):
            from fluidq.engine import VLLM

            e = e.with_(memory=VLLM.with_(prefix_caching=True))
        w = Workload(arrival=Poisson(rate_per_s=load * LAM_STAR_100), prompt_tokens=100, output_tokens=100)
        pol = "sarathi"
        horizon = n / w.arrival_rate_per_s
        if name.startswith("W1-generic"):
            kw["method"] = "generic"
    elif name == "W3":
        e = Engine(batch_time=bt, b_max=128, k_max=100)
        w = Workload(arrival=Periodic(rate_per_s=1 / 0.4675), prompt_tokens=290, output_tokens=990)
        pol = FasterTransformer(chunk_long_prompts=True)
        horizon = float(n)
    else:
        raise SystemExit(f"unknown workload {name}")
    from fluidq.kernel import ensure_compiled
    k0 = time.process_time()
    ensure_compiled()  # numba's cached machine code (or a first compile): a one-off, reported apart
    t0 = time.process_time()
    w0 = time.perf_counter()
    r = simulate(e, w, pol, horizon_s=horizon, rng=1, **kw)
    cpu = time.process_time() - t0
    return {"cpu_s": cpu, "kernel_load_s": t0 - k0, "wall_s": time.perf_counter() - w0, "requests": r.n_requests, "finished": r.n_finished,
            "final_in_system": int(r.backlog["requests"][-1]), "iterations": r.n_iterations, "horizon_s": horizon,
            "method": r.method, "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}


# ---------------------------------------------------------------- pyserq side
# serQ programs (time in units of 10 us, so that every constant is an integer), written for this benchmark

SARATHI_SQ = """
let bmax = 512;
let c = 1128;
let a = 3547;
let b0 = 128;
let vp = 100;
let vd = 100;

fn main() {
  device gpu { compute (t) = a * ceil(t / b0); }
  engine sarathi on gpu {
    tokens cap bmax;
    scheduler {
      advance running admission;
      admit waiting while (running.preempted == 0);
    }
    worker { forward (c + compute(batch.tokens)); }
  }
  server {
    set t0 = now;
    sarathi (vp, vd);
    observe response = now - t0;
  }
}
"""
POISSON_SQ = """
use "std/args";

let lam = args.number("lam", 0.00015);

workload {
  arrive poisson(lam);
}
"""
FT_SQ = """
let bmax = 128;
let c = 1128;
let a = 3547;
let b0 = 128;
let vp = 290;
let vd = 990;

fn main() {
  device gpu { compute (t) = a * ceil(t / b0); }
  engine ft on gpu {
    reqs cap 100;
    tokens cap bmax;
    scheduler {
      advance running only (running.decoding > 0 ? decoding : !decoding);
      admit waiting only (running.decoding > 0 ? decoding : !decoding) while (running.preempted == 0);
    }
    worker { forward (c + compute(batch.tokens)); }
  }
  pool reqs on ft { queue fifo; }
  server {
    set t0 = now;
    ft (vp, vd);
    observe response = now - t0;
  }
}
"""
PERIODIC_SQ = """
let gap = 46750;

workload {
  arrive renewal(gap);
}
"""

PYSERQ_CHILD = r"""
import json, resource, sys, time
import pyserq
prog, wl, lam, horizon = sys.argv[1], sys.argv[2], float(sys.argv[3]), int(sys.argv[4])
sets = {"lam": lam} if lam > 0 else {}
p = pyserq.compile(prog, workload=wl, sets=sets, seed=1, horizon=horizon, warmup=0)
t0 = time.process_time()
r = pyserq.run(p)
cpu = time.process_time() - t0
d = json.loads(r.json())
print(json.dumps({"cpu_s": cpu, "requests": d["arrivals"], "finished": d["ended"], "mean_live": d["mean_live"],
                  "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "version": pyserq.__version__}))
"""


def ensure_pyserq() -> tuple[Path | None, str]:
    py = VENV / "bin" / "python"
    if py.exists() and subprocess.run([py, "-c", "import pyserq"], capture_output=True, check=False).returncode == 0:
        return py, "ok"
    try:
        subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True, capture_output=True)
        r = subprocess.run([py, "-m", "pip", "install", "-q", "pyserq"], capture_output=True, text=True, timeout=600, check=False)
    except Exception as exc:  # noqa: BLE001
        return None, f"could not create a venv for pyserq ({exc})"
    if r.returncode != 0:
        return None, "pip install pyserq failed: " + (r.stderr.strip().splitlines() or ["?"])[-1]
    return py, "ok"


def pyserq_run(py: Path, workdir: Path, name: str, n: int, timeout: float) -> dict:
    if name == "W3":
        prog, wl, lam, horizon = workdir / "ft.sq", workdir / "periodic.sq", 0.0, int(n * 1e5)
    else:
        load = 1.2 if name == "W2" else 0.9
        lam = load * LAM_STAR_100 * 1e-5  # per 10 us
        prog, wl, horizon = workdir / "sarathi.sq", workdir / "poisson.sq", int(n / lam)
    try:
        r = subprocess.run([py, "-c", PYSERQ_CHILD, str(prog), str(wl), repr(lam), str(horizon)], capture_output=True, check=False,
                           text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": f"> {timeout:g} s (stopped)", "horizon_s": horizon * 1e-5}
    if r.returncode != 0:
        return {"error": (r.stderr.strip().splitlines() or ["failed"])[-1], "horizon_s": horizon * 1e-5}
    d = json.loads(r.stdout)
    d["horizon_s"] = horizon * 1e-5
    return d


# ---------------------------------------------------------------- main


def run_child(args, src=None, check=True) -> dict:
    """One workload in a fresh process; with ``src``, the fluidq package is imported from there."""
    env = dict(os.environ)
    if src is not None:
        env["PYTHONPATH"] = str(Path(src).resolve()) + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, __file__, "--child", args[0], str(args[1])], capture_output=True, text=True,
                       check=False, env=env, cwd=tempfile.gettempdir())
    if r.returncode != 0:
        if not check:
            return {"error": (r.stderr.strip().splitlines() or ["failed"])[-1][:80]}
        raise SystemExit(r.stderr)
    return json.loads(r.stdout)


def compare(src: str, quick: bool, repeats: int) -> None:
    """This tree against the fluidq under ``src``: CPU seconds of each workload, alternating runs."""
    here = Path(__file__).resolve().parents[1]
    n1 = 20_000 if quick else 200_000
    ng = 5_000 if quick else 20_000
    plan = [("W1", n1), ("W2", n1), ("W3", 500), ("W1-generic", ng), ("W1-kv", ng), ("W1-paged", ng),
            ("W1-generic-kv", ng), ("W1-generic-paged", ng)]
    print(f"# this tree ({here}) against {src}: min CPU s over {repeats} alternating runs each")
    print(f"{'workload':<11} {'requests':>9} {'this cpu s':>11} {'other cpu s':>12} {'this/other':>11}")
    for name, n in plan:
        new, old = [], []
        for _ in range(repeats):
            new.append(run_child((name, n), here))
            old.append(run_child((name, n), src, check=False))
        best_new = min(r["cpu_s"] for r in new)
        if any("error" in r for r in old):
            print(f"{name:<11} {new[0]['requests']:>9,} {best_new:>11.3f} {'n/a':>12} {'-':>11}  other: "
                  f"{next(r['error'] for r in old if 'error' in r)}")
            continue
        best_old = min(r["cpu_s"] for r in old)
        same = "" if new[0]["iterations"] == old[0]["iterations"] else \
            f"  (iterations differ: {new[0]['iterations']} vs {old[0]['iterations']})"
        print(f"{name:<11} {new[0]['requests']:>9,} {best_new:>11.3f} {best_old:>12.3f} {best_new / best_old:>10.3f}x{same}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller runs (a smoke test, not the recorded figures)")
    ap.add_argument("--no-pyserq", action="store_true")
    ap.add_argument("--pyserq-timeout", type=float, default=300.0)
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--against", metavar="SRC", help="compare with the fluidq package of this source tree")
    ap.add_argument("--repeats", type=int, default=3, help="alternating runs per tree with --against")
    a = ap.parse_args()
    if a.child:
        print(json.dumps(fluidq_child(a.child[0], int(a.child[1]))))
        return
    if a.against:
        compare(a.against, a.quick, max(1, a.repeats))
        return
    q = a.quick
    n1 = 20_000 if q else 200_000
    plan = [("W1", n1, n1 // 10), ("W2", n1, n1 // 10 if not q else 2_000), ("W3", 500, 500 if not q else 100)]
    print(f"# fluidq simulator benchmark, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"# machine: {platform.machine()}, {os.cpu_count()} CPUs, {platform.processor() or platform.platform()}, "
          f"Python {platform.python_version()}")
    py, why = (None, "skipped (--no-pyserq)") if a.no_pyserq else ensure_pyserq()
    workdir = Path(tempfile.mkdtemp(prefix="fluidq-bench-sq-"))
    for fn, txt in (("sarathi.sq", SARATHI_SQ), ("poisson.sq", POISSON_SQ), ("ft.sq", FT_SQ),
                    ("periodic.sq", PERIODIC_SQ)):
        (workdir / fn).write_text(txt)
    if py is None:
        print(f"# pyserq: {why}")
    rows = []
    for name, n_f, n_s in plan:
        f = run_child((name, n_f))
        s = pyserq_run(py, workdir, name, n_s, a.pyserq_timeout) if py is not None else {"error": why}
        rows.append((name, f, s))
    hdr = (f"{'workload':<10} {'fluidq req':>10} {'cpu s':>7} {'req/cpu-s':>11} {'MB':>6} | {'pyserq req':>10} "
           f"{'cpu s':>8} {'req/cpu-s':>10} {'MB':>6} | {'ratio':>7}")
    print(hdr)
    rate = {}
    for name, f, s in rows:
        fr = f["requests"] / f["cpu_s"]
        rate[name] = fr
        if "error" in s:
            ps = f"{'-':>10} {'-':>8} {'-':>10} {'-':>6} | {'-':>7}  pyserq: {s['error']}"
        else:
            sr = s["requests"] / max(s["cpu_s"], 1e-9)
            ps = (f"{s['requests']:>10,} {s['cpu_s']:>8.2f} {sr:>10,.0f} {s['maxrss_mb']:>6.0f} | {fr / sr:>6.1f}x"
                  f"  (horizon fluidq {f['horizon_s']:,.0f} s, pyserq {s['horizon_s']:,.0f} s)")
        print(f"{name:<10} {f['requests']:>10,} {f['cpu_s']:>7.2f} {fr:>11,.0f} {f['maxrss_mb']:>6.0f} | {ps}")
    print(f"W2 per-request cost / W1 per-request cost (fluidq): {rate['W1'] / rate['W2']:.2f}  (target <= 2)")
    w3 = next(f for n, f, s in rows if n == "W3")
    print(f"W3 fluidq CPU time: {w3['cpu_s']:.3f} s for {w3['horizon_s']:g} simulated s  (target < 2 s); "
          f"FT ends with {w3['final_in_system']} requests in system")
    print(f"one-off per process, not in the figures above: loading the compiled kernel from numba's cache "
          f"{w3.get('kernel_load_s', 0.0):.2f} CPU-s")
    # the other kernel, for honesty: the generic select()-per-iteration path and the KV-cache model
    ng = 5_000 if q else 20_000
    g = run_child(("W1-generic", ng))
    k = run_child(("W1-kv", ng))
    print(f"W1 on the generic path (policy.select each iteration): {g['requests'] / g['cpu_s']:,.0f} req/cpu-s; "
          f"with a 60k-token KV cache: {k['requests'] / k['cpu_s']:,.0f} req/cpu-s  ({ng:,} requests)")


if __name__ == "__main__":
    main()
