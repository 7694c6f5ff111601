"""Fingerprints of small chains whose builders call the batch rule (issue 14's one rule), to hold them exact.

    PYTHONPATH=. python tests/dtmc/chain_fingerprints.py            # rewrite chain_fingerprints.json
    PYTHONPATH=. python tests/dtmc/chain_fingerprints.py --check    # compare, print the differences

``chain_fingerprints.json`` was recorded on the tree *before* ``dtmc/finite.py``, ``threshold.py``,
``vllm_queue.py`` and ``llm_rybko.py`` called :mod:`fluidq.policies.batch_rule` (commit 7d32e24, the
builders' own copies of the rule); ``tests/dtmc/test_chain_rule_exact.py`` compares a fresh build against
it.  Re-record only when a change is meant to alter these chains, and say why in that commit.

Each fingerprint is exact in its integers (states, non-zeros, the sparsity pattern's checksums, batch
tokens) and holds floats to 1e-9 relative (as ``tests/golden``; a one-off comparison of the arrays
themselves found them bit for bit equal, see the commit) (transition-matrix moments, sojourns, thresholds).
"""
from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
FILE = HERE / "chain_fingerprints.json"
REL = 1e-9
ABS = 1e-12  # floats that are rounding noise (a chain's lost mass) compare to this absolute floor


def _matrix(P) -> dict:
    P = P.tocsr()
    P.sort_indices()
    n = P.shape[0]
    rows = np.repeat(np.arange(n), np.diff(P.indptr))
    w = np.cos(np.arange(n) * 0.37 + 0.1)
    return {"n": int(n), "nnz": int(P.nnz), "pattern": int((rows * 1_000_003 + P.indices).sum() % (2 ** 61 - 1)),
            "pattern2": int(((rows + 7) * (P.indices + 11)).sum()), "row_w": float(w[rows] @ P.data),
            "col_w": float(w[P.indices] @ P.data), "sq": float(P.data @ P.data)}


def _chain(c) -> dict:
    w = np.cos(np.arange(c.P.shape[0]) * 0.21)
    return {**_matrix(c.P), "sojourn": float(w @ c.sojourn_s), "sojourn2": float(w @ c.sojourn2_s2),
            "batch_tokens": float(w @ c.batch_tokens), "completions": float(w @ c.completions),
            "lost": float(w @ c.lost)}


def record() -> dict:
    import fluidq
    from fluidq import Empirical, Engine, Fixed, Geometric, Poisson, Staircase, Workload
    from fluidq.dtmc.finite import build_finite_dtmc
    from fluidq.dtmc.llm_rybko import _Engine
    from fluidq.dtmc.threshold import renewal_threshold
    from fluidq.dtmc.vllm_queue import QueueChain, _time_classes, batch_outcomes

    eng = Engine(batch_time=Staircase(c=0.01128, a=0.03547, b0=4), b_max=8)
    out: dict = {"finite": {}, "renewal": {}, "vllm_queue": {}, "rybko": {}}

    def wl(rate, p, o):
        return Workload(arrival=Poisson(rate_per_s=rate), prompt_tokens=p, output_tokens=o)

    finite = {
        "sarathi-fixed3-emp": ("sarathi", wl(3.0, Fixed(n=3), Empirical(values=(1, 3))), {}),
        "vllm-chunked-fixed2-emp": ("vllm-chunked", wl(2.5, Fixed(n=2), Empirical(values=(2, 4), weights=(1, 2))), {}),
        "fastertransformer-fixed2": ("fastertransformer", wl(2.0, Fixed(n=2), Fixed(n=3)), {}),
        "vllm-fixed2": ("vllm", wl(2.0, Fixed(n=2), Empirical(values=(1, 2))), {"max_decode": 6}),
        "orca-empprompt-geo": ("orca", wl(1.0, Empirical(values=(3, 6)), Geometric(mean_tokens=2.0)), {"max_decode": 15}),
        "sarathi-empprompt": ("sarathi", wl(2.0, Empirical(values=(1, 5, 9)), Empirical(values=(1, 2))), {}),
        "vllm-empprompt": ("vllm", wl(1.5, Empirical(values=(2, 5)), Fixed(n=2)), {"max_decode": 6}),
        "fastertransformer-empprompt-geo": ("fastertransformer", wl(1.5, Empirical(values=(2, 3)), Geometric(mean_tokens=3.0)),
                                            {"max_decode": 20}),
        "sarathi-geoprompt": ("sarathi", wl(2.0, Geometric(mean_tokens=3.0), Empirical(values=(1, 2))), {}),
    }
    for key, (pol, w, kw) in finite.items():
        out["finite"][key] = _chain(build_finite_dtmc(eng, w, pol, max_prefill=12, **kw))

    renewal = {
        "fastertransformer-fixed": ("fastertransformer", wl(1.0, Fixed(n=3), Fixed(n=4))),
        "fastertransformer-fixed-emp": ("fastertransformer", wl(1.0, Fixed(n=2), Empirical(values=(2, 6)))),
        "fastertransformer-random": ("fastertransformer", wl(1.0, Empirical(values=(2, 3, 7)), Fixed(n=4))),
        "vllm-fixed": ("vllm", wl(1.0, Fixed(n=3), Fixed(n=4))),
        "vllm-random": ("vllm", wl(1.0, Empirical(values=(2, 5)), Fixed(n=4))),
    }
    for key, (pol, w) in renewal.items():
        lam, lo, hi, _expr, details = renewal_threshold(eng, w, pol)
        out["renewal"][key] = {"lam": float(lam), "lo": float(lo), "hi": float(hi),
                               **{k: v for k, v in details.items() if isinstance(v, (int, float))}}

    lens, pl = np.array([2, 3, 5]), np.array([0.5, 0.3, 0.2])
    tc, tvals = _time_classes(eng.batch_time, 8)
    outcomes, kmax = batch_outcomes(8, lens, pl, tc, tvals.size)
    flat = [x for o in outcomes for a in o for x in a]
    out["vllm_queue"]["outcomes"] = {"kmax": int(kmax), "ints": int(sum(int(x.sum()) for x in flat[0::4])
                                                                     + sum(int(x.sum()) for x in flat[1::4])
                                                                     + sum(int(x.sum()) for x in flat[2::4])),
                                     "w": float(sum(float(np.cos(np.arange(x.size)) @ x) for x in flat[3::4]))}
    P, lost = QueueChain(8, lens, pl, tvals, tc, outcomes, kmax, 12).matrix(0.8)
    out["vllm_queue"]["chain"] = {**_matrix(P), "lost": float(np.cos(np.arange(lost.size)) @ lost)}

    for pr, hi in (("exit", 1), ("reversed", 0)):  # one engine's local chain (states, phases, batch ends)
        e = _Engine(8, (3, 2), (0.5, 0.4), 3, 3, 2, hi, eng.batch_time)
        a = np.array(e.states, dtype=np.int64)
        w = np.cos(np.arange(e.src.size) * 0.13)
        out["rybko"][pr] = {"states": int(len(e.states)), "state_sum": int((a * np.arange(1, 11)).sum()),
                            "src": int(e.src @ np.arange(e.src.size)), "dst": int(e.dst @ np.arange(e.dst.size)),
                            "out": int(e.out.sum()), "rate": float(w @ e.rate), "lost": float(w @ e.lost),
                            "join": int(sum(int(j.sum()) for j in e.join.values()))}
    out["fluidq"] = fluidq.__file__
    return out


def compare(new: dict, old: dict, path: str = "") -> list[str]:
    diffs = []
    if isinstance(old, dict):
        for k in old:
            if k == "fluidq":
                continue
            if k not in new:
                diffs.append(f"{path}/{k}: missing")
            else:
                diffs += compare(new[k], old[k], f"{path}/{k}")
        return diffs
    if isinstance(old, list):
        if len(old) != len(new):
            return [f"{path}: length {len(new)} != {len(old)}"]
        for i, (a, b) in enumerate(zip(new, old)):
            diffs += compare(a, b, f"{path}[{i}]")
        return diffs
    if isinstance(old, bool) or isinstance(old, int) or old is None:
        return [] if new == old else [f"{path}: {new!r} != {old!r}"]
    if isinstance(old, float):
        # plus an absolute floor: a chain's lost mass (1e-17 to 1e-14) is rounding noise, whose last digits follow the
        # CPU's BLAS kernel (7.859e-17 against 7.881e-17 recorded, on an AVX-512 machine); a chain built another way
        # differs by far more than 1e-12 in some probability
        return [] if abs(new - old) <= REL * max(abs(old), 1e-300) + ABS else [f"{path}: {new!r} != {old!r}"]
    return [] if new == old else [f"{path}: {new!r} != {old!r}"]


if __name__ == "__main__":
    fresh = record()
    if "--check" in sys.argv:
        d = compare(fresh, json.loads(FILE.read_text()))
        print("\n".join(d) or f"all equal ({fresh['fluidq']})")
        sys.exit(1 if d else 0)
    FILE.write_text(json.dumps({k: v for k, v in fresh.items() if k != "fluidq"}, indent=1, sort_keys=True) + "\n")
    print(f"recorded from {fresh['fluidq']}")
