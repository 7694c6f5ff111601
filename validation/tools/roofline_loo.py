"""The roofline batch time's leave-one-profile-out table, and the capacity of the shared serving runs.

Run from the repository root: ``python validation/tools/roofline_loo.py``.  For each shipped profile:
the efficiencies fitted on the other seven (:func:`fluidq.validate.roofline.leave_one_out`), the held-out
MAPE against that profile's batch times, and the in-sample MAPE (fitted on all eight) side by side.  Then
each real vLLM run of ``validation/data/llmservingsim`` predicted with efficiencies fitted without the
profile measured beside it, against its measured saturated throughput.  Prints markdown (the tables of
``docs/reference/roofline.md``).
"""
from __future__ import annotations

from pathlib import Path

from fluidq.validate.roofline import RUNS, calibrate, calibration_targets, leave_one_out, run_capacity

DATA = Path(__file__).resolve().parents[1] / "data" / "llmservingsim"


def main() -> int:
    targets = calibration_targets()
    full = calibrate(targets)
    print("efficiencies fitted on all profiles: " + ", ".join(f"{k} {v:.4g}" for k, v in full.items()))
    print()
    print("| profile | GPU | model, TP | points | held-out MAPE | in-sample MAPE | compute / memory / overhead ms / sync us (fit without it) |")
    print("|---|---|---|---|---|---|---|")
    for r in leave_one_out(targets):
        e = r["efficiency"]
        print(f"| `{r['profile']}` | {r['gpu']} | {r['model']}, {r['tp']} | {r['points']} | "
              f"{100 * r['heldout_mape']:.1f} % | {100 * r['insample_mape']:.1f} % | "
              f"{e['compute']:.3f} / {e['memory']:.3f} / {1e3 * e['overhead_s']:.2f} / {e['sync_us']:.0f} |")
    print()
    print("| run | GPU | predicted tokens/s | measured tokens/s (95 % CI) | error | binding |")
    print("|---|---|---|---|---|---|")
    for run, (gpu, model, own) in RUNS.items():
        eff = calibrate([t for t in targets if t.name != own])
        r = run_capacity(DATA / run, eff, gpu=gpu, model=model)
        lo, hi = r["measured_ci"]
        print(f"| {run} | {gpu} | {r['predicted_tokens_per_s']:.0f} | {r['measured_tokens_per_s']:.0f} "
              f"({lo:.0f}-{hi:.0f}) | {100 * r['error']:+.1f} % | {r['binding']} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
