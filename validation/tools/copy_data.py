"""Copy (and trim) the measured data the validation cases need into ``validation/data/``.

Run from the repository root: ``python validation/tools/copy_data.py /path/to/shared/data``.
Every copied file gets a provenance line in ``validation/data/PROVENANCE.md`` (source repository,
commit, upstream path, license, what was changed).  Large tables are reduced to the columns and rows
the cases read (median times and keys) and gzipped; nothing else is altered.
"""
from __future__ import annotations

import csv
import gzip
import io
import shutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "data"

SOURCES = {
    "llmservingsim": ("casys-kaist/LLMServingSim", "MIT", "measured/llmservingsim"),
    "vidur": ("microsoft/vidur", "MIT", "measured/vidur"),
    "sarathi-serve": ("microsoft/sarathi-serve (branch osdi-sarathi-serve)", "Apache-2.0", "measured/sarathi-serve"),
    "splitwise": ("Mutinifni/splitwise-sim", "MIT", "measured/splitwise"),
}

LSS_RUNS = ["RTX4090_Llama-3.1-8B", "RTXPRO6000_Llama-3.1-8B", "RTXPRO6000_Qwen3-30B-A3B-Instruct-2507"]
LSS_FULL = ["vllm_requests.jsonl", "vllm_timeseries.csv", "vllm_meta.json", "peer_sim_vs_vllm_summary.txt",
            "peer_sim_config.json",
            "profile_meta.yaml", "profile_tp1_dense.csv", "profile_tp1_per_sequence.csv"]
LSS_GZ = ["profile_tp1_attention.csv"]
# every run is predicted from its own profiles; a MoE run's experts are in profile_tp1_moe.csv
LSS_MEASURED_ONLY: set = set()
LSS_MOE = {"RTXPRO6000_Qwen3-30B-A3B-Instruct-2507": ["profile_tp1_moe.csv"]}
LSS_MEASURED = ["vllm_requests.jsonl", "vllm_timeseries.csv", "vllm_meta.json", "peer_sim_vs_vllm_summary.txt"]

VIDUR_MLP = ["a100/meta-llama/Llama-2-7b-hf/mlp.csv", "a100/meta-llama/Llama-2-70b-hf/mlp.csv",
             "a40/meta-llama/Llama-2-7b-hf/mlp.csv", "h100/meta-llama/Llama-2-70b-hf/mlp.csv"]
VIDUR_ATTN = ["a100/meta-llama/Llama-2-7b-hf/attention_subset.csv", "legacy_e2d00e9_a100/attention.csv"]
VIDUR_NET = "a100/network/all_reduce_pairwise_nvlink.csv"


def _median_columns(src: Path, dst: Path, keep_rows=None) -> None:
    """Keep key columns and ``*.median`` timing columns; gzip."""
    with src.open() as f:
        rows = list(csv.DictReader(f))
    cols = [c for c in rows[0] if c and (not c.startswith("time_stats") or c.endswith(".median"))]
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols, extrasaction="ignore", lineterminator="\n")
    w.writeheader()
    for r in rows:
        if keep_rows is None or keep_rows(r):
            w.writerow(r)
    with gzip.open(dst, "wt", compresslevel=9) as g:
        g.write(buf.getvalue())


def _gzip(src: Path, dst: Path) -> None:
    with src.open("rb") as f, gzip.open(dst, "wb", compresslevel=9) as g:
        shutil.copyfileobj(f, g)


def main(shared: str) -> None:
    shared = Path(shared)
    notes = ["# Provenance of `validation/data/`", "",
             "Copied from the project's shared measurement folder; each upstream folder's LICENSE is kept "
             "beside the files (`LICENSE`) and its commit in `SOURCE_COMMIT`. Regenerate with "
             "`python validation/tools/copy_data.py <shared/data>`.", "",
             "| file | source repository | commit (date) | upstream path | license | changes |",
             "|---|---|---|---|---|---|"]

    def note(rel, key, up, change):
        repo, lic, base = SOURCES[key]
        commit = (shared / base / "SOURCE_COMMIT").read_text().strip()
        notes.append(f"| `{rel}` | {repo} | `{commit}` | `{up}` | {lic} | {change} |")

    for key, (_, _, base) in SOURCES.items():
        d = ROOT / key
        d.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(shared / base / "LICENSE", d / "LICENSE")
        shutil.copyfile(shared / base / "SOURCE_COMMIT", d / "SOURCE_COMMIT")

    for run in LSS_RUNS:
        src, dst = shared / "measured/llmservingsim" / run, ROOT / "llmservingsim" / run
        dst.mkdir(parents=True, exist_ok=True)
        for name in (LSS_MEASURED if run in LSS_MEASURED_ONLY else LSS_FULL + LSS_MOE.get(run, [])):
            if (src / name).exists():
                shutil.copyfile(src / name, dst / name)
                note(f"llmservingsim/{run}/{name}", "llmservingsim", f"{run}/{name}", "none")
        for name in ([] if run in LSS_MEASURED_ONLY else LSS_GZ):
            if (src / name).exists():
                _gzip(src / name, dst / (name + ".gz"))
                note(f"llmservingsim/{run}/{name}.gz", "llmservingsim", f"{run}/{name}", "gzipped")

    for rel in VIDUR_MLP + VIDUR_ATTN:
        dst = ROOT / "vidur" / (rel + ".gz")
        dst.parent.mkdir(parents=True, exist_ok=True)
        _median_columns(shared / "measured/vidur" / rel, dst)
        note(f"vidur/{rel}.gz", "vidur", rel, "median timing columns and keys only; gzipped")
    dst = ROOT / "vidur" / (VIDUR_NET + ".gz")
    dst.parent.mkdir(parents=True, exist_ok=True)
    _median_columns(shared / "measured/vidur" / VIDUR_NET, dst, keep_rows=lambda r: r["num_workers"] == "2")
    note(f"vidur/{VIDUR_NET}.gz", "vidur", VIDUR_NET, "rows with num_workers = 2, median columns; gzipped")

    for name in ["table-2_results.csv", "figure-2_decode.csv", "figure-2_prefill.csv", "figure-9_chunking-overhead.csv"]:
        shutil.copyfile(shared / "measured/sarathi-serve" / name, ROOT / "sarathi-serve" / name)
        note(f"sarathi-serve/{name}", "sarathi-serve", name, "none")
    shutil.copyfile(shared / "measured/splitwise/perf_model.csv", ROOT / "splitwise" / "perf_model.csv")
    note("splitwise/perf_model.csv", "splitwise", "perf_model.csv", "none")
    notes += ["", "The Azure conversation trace used by the Vidur peer-agreement cases is the one embedded in "
              "the package (`fluidq/data/azure2023_conv.csv.gz`, see `fluidq/data/PROVENANCE.md`)."]
    notes += ["", "`lengths/` is maintained separately (its own `PROVENANCE.md`)."]
    (ROOT / "PROVENANCE.md").write_text("\n".join(notes) + "\n")


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "/work/shared/data")
