#!/usr/bin/env bash
# One prepared GPU check (< 10 min on one H100/H200-class GPU): measure t_b of a Llama-3.1-8B-shaped
# model with random weights, serve Poisson arrivals at 0.8/0.9/1.1/1.2 of the predicted capacity
# with a work-conserving (Sarathi-like) and a non-work-conserving (vanilla vLLM-like) scheduler,
# then judge the runs with `fluidq validate --case gpu-harness`.
#
#   bash validation/gpu/run_gpu.sh [OUT_DIR]      (default: validation/data/gpu; commit it afterwards)
#
# Needs torch with CUDA; transformers is used when importable, else the same shape is built from
# plain torch.nn layers (--backend torch). Nothing is downloaded.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT="${1:-validation/data/gpu}"
PY="${PYTHON:-python3}"
"$PY" -c "import torch, sys; sys.exit(0 if torch.cuda.is_available() else 3)" || {
  echo "run_gpu.sh: torch with a CUDA device is required" >&2; exit 3; }
BACKEND=transformers
"$PY" -c "import transformers" 2>/dev/null || BACKEND=torch
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
timeout 540 "$PY" validation/gpu/harness.py --mode cuda --backend "$BACKEND" --out "$OUT" "${@:2}"
"$PY" -m fluidq validate --case gpu-harness --harness-dir "$OUT" --out "${OUT}/report" || true
