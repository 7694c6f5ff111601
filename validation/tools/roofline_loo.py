"""The roofline batch time's leave-one-profile-out table, and the capacity of the shared serving runs.

Run from the repository root: ``python validation/tools/roofline_loo.py``.  For each shipped profile:
the efficiencies fitted on the other nine (:func:`fluidq.validate.roofline.leave_one_out`), the held-out
MAPE against that profile's batch times, and the in-sample MAPE (fitted on all ten) side by side.  Then
each real vLLM run of ``validation/data/llmservingsim`` predicted with efficiencies fitted without the
profile measured beside it, against its measured saturated throughput.  Prints markdown (the tables of
``docs/reference/roofline.md``).
"""
from __future__ import annotations

from pathlib import Path

from fluidq.validate.roofline import (RUNS, SPLITWISE_WORKLOAD, calibrate, calibration_targets, leave_one_out,
                                     allreduce_check, raw_errors, run_capacity, splitwise_phases,
                                     vidur_tensor_parallel)

DATA = Path(__file__).resolve().parents[1] / "data" / "llmservingsim"


def main() -> int:
    targets = calibration_targets()
    full = calibrate(targets)
    print("efficiencies fitted on all profiles: " + ", ".join(f"{k} {v:.4g}" for k, v in full.items()))
    print()
    print("| profile | GPU | model, TP | points | held-out MAPE | in-sample MAPE | compute / memory / sync MB per ring step / "
          "Splitwise attention (fit without it) |")
    print("|---|---|---|---|---|---|---|")
    for r in leave_one_out(targets):
        e = r["efficiency"]
        print(f"| `{r['profile']}` | {r['gpu']} | {r['model']}, {r['tp']} | {r['points']} | "
              f"{100 * r['heldout_mape']:.1f} % | {100 * r['insample_mape']:.1f} % | "
              f"{e['compute']:.3f} / {e['memory']:.3f} / {e['sync_step_mb']:.2f} / {e['splitwise_attention']:.4f} |")
    print()
    print("| profile | measured rows | held-out MAPE on the rows | by phase |")
    print("|---|---|---|---|")
    for r in raw_errors(DATA.parent, targets):
        ph = ", ".join(f"{k} {100 * v:.1f} %" for k, v in r["by_phase"].items())
        print(f"| `{r['profile']}` | {r['rows']} | {100 * r['heldout_mape']:.1f} % | {ph} |")
    print()
    p, o, k = SPLITWISE_WORKLOAD
    print(f"Splitwise's per-phase figures as tandem stages (prompts {p}, outputs {o}, decode batches <= {k}):")
    print()
    print("| profile | prefill rows: roofline / measured tokens/s, median (MAPE) | decode rows: median (MAPE) | "
          "prefill engine, prompts/s: measured / roofline | decode engine, requests/s: measured / roofline | "
          "balanced prefill share n_p/(n_p+n_d): measured / roofline |")
    print("|---|---|---|---|---|---|")
    for r in splitwise_phases(DATA.parent, targets):
        t = r["tandem"]
        print(f"| `{r['profile']}` | {r['prefill']['median_ratio']:.3f} ({100 * r['prefill']['mape']:.1f} %) | "
              f"{r['decode']['median_ratio']:.3f} ({100 * r['decode']['mape']:.1f} %) | "
              f"{t['prefill_requests_per_s']['measured']:.2f} / {t['prefill_requests_per_s']['roofline']:.2f} | "
              f"{t['decode_requests_per_s']['measured']:.2f} / {t['decode_requests_per_s']['roofline']:.2f} | "
              f"{t['prefill_share']['measured']:.3f} / {t['prefill_share']['roofline']:.3f} |")
    print()
    print("Vidur's Llama-2-70B operator profiles (A100: not calibrated on; H100: TP 4 is the calibration profile "
          "vidur-llama2-70b-h100-tp4, the other sizes are not), linear and element-wise operators per GPU by "
          "tensor-parallel size:")
    print()
    print("| GPU | tensor-parallel size | rows | MAPE | median roofline / measured |")
    print("|---|---|---|---|---|")
    for gpu in ("a100", "h100"):
        for r in vidur_tensor_parallel(DATA.parent, targets, gpu=gpu):
            print(f"| {gpu.upper()} | {r['tensor_parallel_size']} | {r['rows']} | {100 * r['mape']:.1f} % | "
                  f"{r['median_ratio']:.3f} |")
    print()
    ar = allreduce_check(DATA.parent, targets)
    print(f"Vidur's measured A100 NVLink all-reduces against the roofline's (ring + 2 (w - 1) x "
          f"{ar['sync_step_us']:.2f} us, the calibrated {full['sync_step_mb']:.3g} MB per step at 300 GB/s), and "
          "against the same latency charged per all-reduce at TP 8's value:")
    print()
    print("| workers | messages (<= 32 MiB) | per ring step: median model / measured (MAPE) | "
          "per all-reduce: median (MAPE) |")
    print("|---|---|---|---|")
    for w, r in ar["workers"].items():
        print(f"| {w} | {r['rows']} | {r['per_step']['median_ratio']:.2f} ({100 * r['per_step']['mape']:.0f} %) | "
              f"{r['per_all_reduce']['median_ratio']:.2f} ({100 * r['per_all_reduce']['mape']:.0f} %) |")
    print()
    print("| run | GPU | predicted tokens/s | measured tokens/s (95 % CI) | error | binding |")
    print("|---|---|---|---|---|---|")
    for run, (gpu, model, own) in RUNS.items():
        eff = calibrate([t for t in targets if t.name != own])
        r = run_capacity(DATA / run, eff, gpu=gpu, model=model)
        lo, hi = r["measured_ci"]
        print(f"| {run} | {gpu} | {r['predicted_tokens_per_s']:.0f} | {r['measured_tokens_per_s']:.0f} "
              f"({lo:.0f}-{hi:.0f}) | {100 * r['error']:+.1f} % | {r['binding']} |")
    # independent: no profile of this model (a MoE) is shipped or calibrated on; vLLM ran it with data
    # parallelism 2 and expert parallelism on two GPUs: approximated as two engines each holding every
    # expert (the all-to-all of expert parallelism is not modelled)
    from fluidq.validate.runs import read_run, saturated_throughput
    from fluidq.validate.roofline import predict_roofline_deployment

    run = read_run(DATA / "RTXPRO6000_Qwen3-30B-A3B-Instruct-2507")
    p = predict_roofline_deployment("Qwen3-30B-A3B-Instruct-2507", "RTX-PRO-6000-Blackwell",
                                    input_tokens=run.input_tokens, output_tokens=run.output_tokens,
                                    max_num_seqs=run.max_num_seqs, max_num_batched_tokens=run.max_num_batched_tokens)
    sat = saturated_throughput(run)
    pred = 2 * p.tokens_per_s
    lo, hi = sat["tokens_per_s_ci"]
    print(f"| RTXPRO6000_Qwen3-30B-A3B (DP2 + EP, as 2 engines; independent) | RTX-PRO-6000-Blackwell | {pred:.0f} | "
          f"{sat['tokens_per_s']:.0f} ({lo:.0f}-{hi:.0f}) | {100 * (pred / sat['tokens_per_s'] - 1):+.1f} % | "
          f"{p.binding} |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
