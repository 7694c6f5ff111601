"""Simulator speed: fluidq against pyserq (serQ's Python binding) on the same workloads.

Run:  /work/venv/bin/python benchmarks/bench_sim.py [--quick] [--no-pyserq] [--no-cold] [--pyserq-timeout S]
      /work/venv/bin/python benchmarks/bench_sim.py --overload [--quick]    # the overload section alone

Workloads (reference §7 of the design notes; paper constants t_b = 11.28 + 35.47 ceil(b/128) ms):

W1  Theorem-2 setup: Sarathi, b_max = 512, deterministic (100, 100), Poisson at 0.9 lambda*, 200k requests
W2  the same at 1.2 lambda* (unstable: the queue grows to tens of thousands)
W3  FasterTransformer at vertex C: k_max = 100, b_max = 128, one (290, 990) request every 0.4675 s, 500 s
    (fluidq lets FT chunk prompts longer than b_max, otherwise nothing is ever served)

Each measurement runs in a fresh child process; the figures are simulated requests (arrivals) per
CPU-second of that process and its peak resident memory.  Each child first makes a short call of the same
workload (5 simulated seconds: numba's kernel compiled into an empty cache, or loaded from it), printed apart as
the one-off; the timed call follows (W3: best and median of 21 calls, issue 15's "warm").  pyserq runs in this
interpreter when it imports, else it is installed into its own virtual environment under /tmp (``pip install
pyserq``); when that fails the pyserq columns say why and the W1 verdict is taken against pyserq's figure as
``benchmarks/README.md`` records it (``PYSERQ_RECORDED``), saying that it is not side by side.  pyserq runs are
given a CPU-time limit (``--pyserq-timeout``) and a shorter horizon where its cost grows super-linearly; the table
says which horizon each side ran.

Issue 15's lines, each with met / NOT met: W1 >= 300x pyserq per CPU-second (aim 500x); the overload section
(fresh children, best of 3 calls each, 3 alternating rounds, least CPU time; before h-linear15 a fresh process's
first call also paid the first touch of its per-request arrays' transparent huge pages, 1.5-1.8x from 100k to 1.6M
requests; since h-linear15 (2026-12-07: huge pages off around the kernel run) a single fresh call is linear too,
0.88-0.89x, so best of 3 now only damps this VM's noise) at 0.9, 1.1 and 1.2
lambda* over 100k, 400k and 1.6M
requests (``--quick``: 25k, 100k, 400k): per-request cost at 1.1-1.2 lambda* within 1.2x of the stable run's at
the same n, and linear in the horizon (per-request cost at the longest horizon within 1.2x of the shortest's),
each with ``record="full"`` (every request's arrays kept) and ``record="summary"`` (bounded memory);
W3 warm <= 2 ms.  Then the generic path and the compiled KV kernel (token rules; vLLM's blocks with prefix
caching) warm, and (unless ``--no-cold``) each kernel's first call in a child with an empty ``NUMBA_CACHE_DIR``
(cold: the compile) and in the next child on that cache (warm start).

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


def fluidq_child(name: str, n: int, reps: int = 1) -> dict:
    from fluidq import Engine, Periodic, Poisson, Staircase, Workload
    from fluidq.policies import FasterTransformer
    from fluidq.sim import simulate

    bt = Staircase(c=C, a=A, b0=B0)
    kw = {}
    name, _, record = name.partition(":")  # "W2:summary": record="summary" (bounded memory, no per-request arrays)
    if record:
        kw["record"] = record
    if name in ("W1", "W2", "W1.1", "W1-generic", "W1-kv", "W1-paged", "W1-generic-kv", "W1-generic-paged"):
        load = {"W2": 1.2, "W1.1": 1.1}.get(name, 0.9)
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
    # the first call of a process compiles the kernel this run needs (an empty NUMBA_CACHE_DIR: cold) or loads it
    # from numba's cache (warm start): a one-off, timed apart on a short run of the same engine, policy and method
    k0 = time.process_time()
    simulate(e, w, pol, horizon_s=min(horizon, 5.0), rng=1, **kw)
    first = time.process_time() - k0
    times = []
    for _ in range(max(1, reps)):  # warm: the kernel compiled and loaded
        t0 = time.process_time()
        w0 = time.perf_counter()
        r = simulate(e, w, pol, horizon_s=horizon, rng=1, **kw)
        times.append(time.process_time() - t0)
        wall = time.perf_counter() - w0
    return {"cpu_s": min(times), "cpu_median_s": sorted(times)[len(times) // 2], "reps": len(times),
            "first_call_s": first, "wall_s": wall, "requests": r.n_requests, "finished": r.n_finished,
            "final_in_system": int(r.backlog["requests"][-1]) if hasattr(r, "backlog") else r.n_requests - r.n_finished,
            "iterations": getattr(r, "n_iterations", None), "horizon_s": horizon, "record": record or "full",
            "method": getattr(r, "method", "?"), "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
            "numba_cache_dir": os.environ.get("NUMBA_CACHE_DIR", "")}


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
        return {"error": f"> {timeout:g} s wall clock (stopped; --pyserq-timeout)", "horizon_s": horizon * 1e-5}
    if r.returncode != 0:
        return {"error": (r.stderr.strip().splitlines() or ["failed"])[-1], "horizon_s": horizon * 1e-5}
    d = json.loads(r.stdout)
    d["horizon_s"] = horizon * 1e-5
    return d


# ---------------------------------------------------------------- main


def run_child(args, src=None, check=True, env_extra=None, reps=1) -> dict:
    """One workload in a fresh process; with ``src``, the fluidq package is imported from there; ``env_extra``
    (e.g. an empty ``NUMBA_CACHE_DIR``: a cold start) is added to its environment."""
    env = dict(os.environ, **(env_extra or {}))
    if src is not None:
        env["PYTHONPATH"] = str(Path(src).resolve()) + os.pathsep + env.get("PYTHONPATH", "")
    r = subprocess.run([sys.executable, __file__, "--child", args[0], str(args[1]), "--reps", str(reps)],
                       capture_output=True, text=True, check=False, env=env, cwd=tempfile.gettempdir())
    if r.returncode != 0:
        if not check:
            return {"error": (r.stderr.strip().splitlines() or ["failed"])[-1][:80]}
        raise SystemExit(r.stderr)
    return json.loads(r.stdout.strip().splitlines()[-1])


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


#: issue 15's targets
PYSERQ_TARGET, PYSERQ_AIM = 300.0, 500.0  # W1 (0.9 lambda*): fluidq / pyserq requests per CPU-second
OVERLOAD_TARGET = 1.2  # per-request cost at 1.1 and 1.2 lambda* / the stable (0.9 lambda*) run's, same n
LINEAR_TARGET = 1.2  # per-request cost at the longest horizon / at the shortest (cost linear in the horizon)
W3_WARM_TARGET_S = 2e-3  # FasterTransformer at vertex C, k_max 100, 500 s: warm CPU seconds
#: pyserq's figures as benchmarks/README.md records them (requests per CPU-second), used only where pyserq
#: cannot run here: a ratio against them is NOT measured side by side (other hours, other load)
PYSERQ_RECORDED = {
    "W1": (9_630.0, "pyserq 0.1.6 on 19,755 requests, 2026-12-06 17:16 UTC, the same kind of 2-vCPU VM"),
    "W2": (4_340.0, "pyserq 0.1.6 on 19,755 requests, 2026-12-06 02:21 UTC, the same kind of 2-vCPU VM"),
    "W3": (1_069 / 81.3, "pyserq 0.1.6: 1,069 requests in 81.3 CPU-s, 2026-12-06 02:21 UTC, the same kind of VM"),
}


def _met(ok: bool) -> str:
    return "met" if ok else "NOT met"


def pyserq_importable() -> Path | None:
    """This interpreter when it imports pyserq (then no venv is needed)."""
    r = subprocess.run([sys.executable, "-c", "import pyserq"], capture_output=True, check=False)
    return Path(sys.executable) if r.returncode == 0 else None


def overload(ns: tuple[int, ...], rounds: int, records=("full", "summary")) -> None:
    """Issue 15: per-request cost at 1.1 and 1.2 lambda* against the stable run's, over horizons of ``ns``
    requests, with each of ``records`` (``simulate``'s ``record=``); each cell a fresh child, the cells
    alternating ``rounds`` times (least CPU time kept)."""
    loads = {"W1": 0.9, "W1.1": 1.1, "W2": 1.2}
    best: dict = {}
    cells = [(f"{name}:{rec}", n) for rec in records for n in ns for name in loads]
    for rnd in range(rounds):
        for key in cells[rnd % len(cells):] + cells[:rnd % len(cells)]:  # each round starts one cell later
            r = run_child(key, reps=3)
            if key not in best or r["cpu_s"] < best[key]["cpu_s"]:
                best[key] = r
    for rec in records:
        us = {(k.split(":")[0], n): 1e6 * r["cpu_s"] / r["requests"] for (k, n), r in best.items()
              if k.endswith(":" + rec)}
        print(f"# issue 15, overload: simulate's CPU us per request (Theorem-2 workload, Sarathi, record={rec!r}), "
              f"each cell a fresh child (best of 3 calls), least of {rounds} alternating rounds")
        print(f"{'requests':>10} {'0.9 us/req':>11} {'1.1 us/req':>11} {'1.2 us/req':>11} {'1.1/0.9':>8} "
              f"{'1.2/0.9':>8} {'in system at end (1.2)':>23}")
        worst = 0.0
        for n in ns:
            r11, r12 = us["W1.1", n] / us["W1", n], us["W2", n] / us["W1", n]
            worst = max(worst, r11, r12)
            print(f"{n:>10,} {us['W1', n]:>11.3f} {us['W1.1', n]:>11.3f} {us['W2', n]:>11.3f} {r11:>7.2f}x "
                  f"{r12:>7.2f}x {best[f'W2:{rec}', n]['final_in_system']:>23,}")
        lin = {name: us[name, ns[-1]] / us[name, ns[0]] for name in loads}
        print(f"# record={rec!r}: 1.1-1.2 lambda* per-request cost within {OVERLOAD_TARGET:g}x of the stable run's: "
              f"worst {worst:.2f}x: {_met(worst <= OVERLOAD_TARGET)}")
        print(f"# record={rec!r}: linear in the horizon: per-request cost at {ns[-1]:,} / at {ns[0]:,} requests: "
              + ", ".join(f"{lin[k]:.2f}x at {v:g} lambda*" for k, v in loads.items())
              + f"; target <= {LINEAR_TARGET:g}x: {_met(max(lin.values()) <= LINEAR_TARGET)}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="smaller runs (a smoke test, not the recorded figures)")
    ap.add_argument("--no-pyserq", action="store_true")
    ap.add_argument("--no-cold", action="store_true", help="skip the cold (empty numba cache) child processes")
    ap.add_argument("--pyserq-timeout", type=float, default=300.0)
    ap.add_argument("--overload", action="store_true", help="only the overload section (1.1-1.2 lambda*, horizons)")
    ap.add_argument("--child", nargs=2, help=argparse.SUPPRESS)
    ap.add_argument("--reps", type=int, default=1, help=argparse.SUPPRESS)
    ap.add_argument("--against", metavar="SRC", help="compare with the fluidq package of this source tree")
    ap.add_argument("--repeats", type=int, default=3, help="alternating runs per tree with --against")
    a = ap.parse_args()
    if a.child:
        print(json.dumps(fluidq_child(a.child[0], int(a.child[1]), a.reps)))
        return
    if a.against:
        compare(a.against, a.quick, max(1, a.repeats))
        return
    q = a.quick
    n1 = 20_000 if q else 200_000
    ns = (25_000, 100_000, 400_000) if q else (100_000, 400_000, 1_600_000)
    if a.overload:
        print(f"# fluidq simulator benchmark, overload section, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, "
              f"{platform.machine()}, {os.cpu_count()} CPUs, Python {platform.python_version()}, load average "
              f"{os.getloadavg()[0]:.1f}")
        overload(ns, 1 if q else 3)
        return
    plan = [("W1", n1, n1 // 10), ("W2", n1, n1 // 10 if not q else 2_000), ("W3", 500, 500 if not q else 100)]
    print(f"# fluidq simulator benchmark, {time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}")
    print(f"# machine: {platform.machine()}, {os.cpu_count()} CPUs, {platform.processor() or platform.platform()}, "
          f"Python {platform.python_version()}, load average {os.getloadavg()[0]:.1f}")
    if a.no_pyserq:
        py, why = None, "skipped (--no-pyserq)"
    else:
        py = pyserq_importable()
        py, why = (py, "ok") if py else ensure_pyserq()
    workdir = Path(tempfile.mkdtemp(prefix="fluidq-bench-sq-"))
    for fn, txt in (("sarathi.sq", SARATHI_SQ), ("poisson.sq", POISSON_SQ), ("ft.sq", FT_SQ),
                    ("periodic.sq", PERIODIC_SQ)):
        (workdir / fn).write_text(txt)
    if py is None:
        print(f"# pyserq: {why}")
    rows = []
    for name, n_f, n_s in plan:
        f = run_child((name, n_f), reps=21 if name == "W3" else 3)
        s = pyserq_run(py, workdir, name, n_s, a.pyserq_timeout) if py is not None else {"error": why}
        rows.append((name, f, s))
    hdr = (f"{'workload':<10} {'fluidq req':>10} {'cpu s':>7} {'req/cpu-s':>11} {'MB':>6} | {'pyserq req':>10} "
           f"{'cpu s':>8} {'req/cpu-s':>10} {'MB':>6} | {'ratio':>7}")
    print(hdr)
    measured = {}
    for name, f, s in rows:
        fr = f["requests"] / f["cpu_s"]
        if "error" in s:
            ps = f"{'-':>10} {'-':>8} {'-':>10} {'-':>6} | {'-':>7}  pyserq: {s['error']}"
        else:
            sr = s["requests"] / max(s["cpu_s"], 1e-9)
            measured[name] = fr / sr
            ps = (f"{s['requests']:>10,} {s['cpu_s']:>8.2f} {sr:>10,.0f} {s['maxrss_mb']:>6.0f} | {fr / sr:>6.1f}x"
                  f"  (horizon fluidq {f['horizon_s']:,.0f} s, pyserq {s['horizon_s']:,.0f} s)")
        print(f"{name:<10} {f['requests']:>10,} {f['cpu_s']:>7.3f} {fr:>11,.0f} {f['maxrss_mb']:>6.0f} | {ps}")
    f1 = next(f for n, f, s in rows if n == "W1")
    if "W1" in measured:
        r = measured["W1"]
        print(f"# W1 (0.9 lambda*) fluidq / pyserq per CPU-second, side by side in this run: {r:,.0f}x; target >= "
              f"{PYSERQ_TARGET:g}x (aim {PYSERQ_AIM:g}x): {_met(r >= PYSERQ_TARGET)}"
              f"{'' if r >= PYSERQ_AIM else ' (aim not reached)'}")
    else:
        rec, where = PYSERQ_RECORDED["W1"]
        r = f1["requests"] / f1["cpu_s"] / rec
        print(f"# W1 (0.9 lambda*) against pyserq: pyserq not run here ({why}); against its figure recorded in "
              f"benchmarks/README.md ({rec:,.0f} req/CPU-s, {where}) -- NOT side by side: {r:,.0f}x; target >= "
              f"{PYSERQ_TARGET:g}x (aim {PYSERQ_AIM:g}x): {_met(r >= PYSERQ_TARGET)} against the recorded figure")
    w3 = next(f for n, f, s in rows if n == "W3")
    print(f"# W3 (FasterTransformer at vertex C, k_max 100, {w3['horizon_s']:g} s, method {w3['method']}), warm: "
          f"best {1e3 * w3['cpu_s']:.2f} ms, median {1e3 * w3['cpu_median_s']:.2f} ms of {w3['reps']} calls in one "
          f"process; target <= {1e3 * W3_WARM_TARGET_S:g} ms: {_met(w3['cpu_s'] <= W3_WARM_TARGET_S)} (median: "
          f"{_met(w3['cpu_median_s'] <= W3_WARM_TARGET_S)}); FT ends with {w3['final_in_system']} requests in system")
    if "W3" not in measured:
        rec, where = PYSERQ_RECORDED["W3"]
        print(f"#   pyserq on W3 as recorded ({where}): {w3['requests'] / rec:.1f} CPU-s for the same arrivals "
              f"(issue: ~70 s), {w3['requests'] / w3['cpu_s'] / rec:,.0f}x -- not side by side")
    print("# first call in each child (a short run of the same workload; numba's cache "
          f"{os.environ.get('NUMBA_CACHE_DIR') or 'default'}: a load from it, or a compile when empty), "
          "not in the figures above: " + ", ".join(f"{n} {f['first_call_s']:.2f}" for n, f, _ in rows) + " CPU-s")
    overload(ns, 1 if q else 3)
    # the other kernels, for honesty: the generic select()-per-iteration path and the compiled kernel with memory
    ng = 5_000 if q else 20_000
    g = run_child(("W1-generic", ng))
    k = run_child(("W1-kv", n1), reps=3)
    p = run_child(("W1-paged", n1), reps=3)
    print(f"# W1, method='generic' (policy.select each iteration, Python): {g['requests'] / g['cpu_s']:,.0f} req/CPU-s "
          f"({ng:,} requests, method {g['method']})")
    for label, r in (("a 60k-token KV cache (token rules)", k), ("vLLM's blocks + prefix caching, 60k tokens", p)):
        print(f"# W1 with {label}, method {r['method']} (the compiled KV kernel): {r['requests'] / r['cpu_s']:,.0f} "
              f"req/CPU-s warm ({r['requests']:,} requests, best of {r['reps']} in one process), "
              f"{(r['requests'] / r['cpu_s']) / (f1['requests'] / f1['cpu_s']):.2f}x W1's speed without memory; "
              f"first call (cache load or compile) {r['first_call_s']:.2f} CPU-s")
    if a.no_cold:
        return
    print("# cold and warm starts: the first call of a fresh child with an empty NUMBA_CACHE_DIR (compile) and "
          "then of another child on that cache (load); CPU-s")
    for name, n in (("W1", 1_000), ("W1-kv", 1_000), ("W1-paged", 1_000), ("W3", 100)):
        with tempfile.TemporaryDirectory(prefix="fluidq-bench-cold-") as cache:
            cold = run_child((name, n), env_extra={"NUMBA_CACHE_DIR": cache})
            warm = run_child((name, n), env_extra={"NUMBA_CACHE_DIR": cache})
        print(f"#   {name:<9} ({cold['method']}): cold {cold['first_call_s']:.2f}, warm start {warm['first_call_s']:.2f}")


if __name__ == "__main__":
    main()
