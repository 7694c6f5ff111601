"""Regenerate the figure gallery: ``docs/gallery/img/*.png``, ``manifest.json`` and ``docs/gallery.md``.

    python docs/gallery/build.py            # every job (a few minutes on two cores)
    python docs/gallery/build.py --only vertex_c report
    python docs/gallery/build.py --page     # rewrite docs/gallery.md from the manifest only

Every figure in the gallery is made by a command a user can type: each example with ``--quick``,
``fluidq report --quick``, and one CLI command per analysis with ``--plot``.  Each job runs in a
temporary folder against this checkout (``PYTHONPATH`` is set to it), must write exactly the PNGs
listed for it (a new or missing figure is an error, so the list stays complete), and its PNGs are
re-encoded with a 256-colour palette to keep the committed images small.

The images are committed, not built by ``mkdocs``: the docs build stays fast and needs no
simulation, and the pictures a reader sees are the ones a reviewer saw.  ``tests/docs/test_gallery.py``
checks that the page, the manifest and the images agree (names, pixel sizes, valid PNGs, total
size), and ``tests/examples/test_examples.py`` checks that each example still writes exactly the
figures listed here.  Pixel comparison is deliberately not tested (fonts and library versions move
pixels); rerun this script after changing an example, a plot or a default, and commit the result.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
IMG = HERE / "img"
MANIFEST = HERE / "manifest.json"
PAGE = ROOT / "docs" / "gallery.md"


@dataclass
class Job:
    """One command and the figures it writes.

    ``argv`` is what a user types, with ``{out}`` for the output folder (relative to the job's
    working folder); ``figures`` maps the file it writes to (gallery name, caption).
    """
    name: str
    section: str
    argv: list
    figures: dict
    intro: str = ""
    setup: str = ""  # Python run in the working folder first (e.g. to write a CSV)
    example: str | None = None  # examples/<example>.py, when the job is an example

    def command(self) -> str:
        return " ".join(self.argv).replace("{out}", "out")


def _ex(name, section, figures, intro="", extra=()):
    return Job(name=name, section=section, argv=[f"python examples/{name}.py", "--quick", "--out", "{out}", *extra],
               figures=figures, intro=intro, example=name)


FIT_CSV = """import numpy as np
rng = np.random.default_rng(1)
tokens = np.arange(32, 1025, 32)
seconds = (0.01128 + 0.03547 * np.ceil(tokens / 128)) * rng.normal(1.0, 0.02, tokens.size)
with open("measured.csv", "w") as fh:
    fh.write("tokens,seconds\\n")
    fh.writelines(f"{b},{s:.6f}\\n" for b, s in zip(tokens, seconds))
"""

JOBS = [
    # ---- one figure per analysis, from the command line ------------------------------------------
    Job("cli-region", "One figure per analysis", ["fluidq region", "--k-max", "100", "--b-max", "128", "--plot", "{out}/region.png"],
        {"region.png": ("cli_region.png",
                        "`fluidq region`: the stability region of the paper's CodeLlama-34B/A100 staircase with at most "
                        "100 requests per batch and a 128-token budget, in the plane of prefill and decode tokens per "
                        "second, with the vertices the batch shapes reach.")},
        intro="Each analysis of fluidq can draw what it computed; these are the figures its commands write "
              "with `--plot`, from the defaults (the paper's CodeLlama-34B/A100 fit, Li, Dai, Peng, arXiv:2504.07347)."),
    Job("cli-simulate", "One figure per analysis",
        ["fluidq simulate", "--policy", "vllm", "--load", "0.9", "--prompt", "129", "--output", "112", "--horizon", "120",
         "--plot", "{out}/simulate.png"],
        {"simulate.png": ("cli_simulate.png",
                          "`fluidq simulate`: requests in the system under vanilla vLLM at 0.9 of the Theorem-2 capacity "
                          "with (129, 112)-token requests. vLLM's own threshold for these lengths is about 0.757 of it "
                          "(`fluidq check`), so the queue climbs for the whole 120 s.")}),
    Job("cli-network", "One figure per analysis",
        ["fluidq network", "llm_rybko_stolyar", "--simulate", "--plot", "{out}/network.png",
         "--plot-network", "{out}/network_graph.png"],
        {"network_graph.png": ("cli_network_graph.png",
                               "`fluidq network --plot-network`: the LLM Rybko–Stolyar case drawn as a graph, two engines "
                               "and two request types, each engine coloured by its load."),
         "network.png": ("cli_network.png",
                         "`fluidq network --simulate --plot`: the verdict of the same case. Left, the fluid model's "
                         "total backlog on a log scale, each cycle's peak higher than the last; right, seeded "
                         "simulations of the same network.")}),
    Job("cli-fit", "One figure per analysis", ["fluidq fit", "measured.csv", "--plot", "{out}/fit.png"],
        {"fit.png": ("cli_fit.png",
                     "`fluidq fit`: a batch-time model fitted to measured iteration times (here the stand-in CSV of "
                     "[Fit your own measurements](how-to/fit-measurements.md): the paper's staircase with 2 % noise).")},
        setup=FIT_CSV),
    Job("cli-dtmc", "One figure per analysis", ["fluidq dtmc", "--rate", "8", "--policy", "sarathi", "--geometric", "--plot", "{out}/dtmc.png"],
        {"dtmc.png": ("cli_dtmc.png",
                      "`fluidq dtmc`: the Markov chain embedded at batch boundaries for Sarathi-Serve at 8 requests/s "
                      "(geometric lengths, means 100 and 100). Left, the stationary probability of each state (requests "
                      "in prefill, requests decoding) on a log scale; right, the one-step drift of the token backlog.")}),
    # ---- the report ---------------------------------------------------------------------------
    Job("report", "The report (`fluidq report`)", ["fluidq report", "--quick", "--out", "{out}"],
        {"batch_time.png": ("report_batch_time.png",
                            "The batch-time model `t(b)` of the report's engine: seconds per iteration against the "
                            "tokens in the batch."),
         "capacity_vs_bmax.png": ("report_capacity_vs_bmax.png",
                                  "Capacity against the token budget `b_max` (Theorem 2 of arXiv:2504.07347), with the "
                                  "configured budget, the offered load of the report's workload on one engine and "
                                  "its share on each of the three engines it needs: the capacity rises in steps at "
                                  "each block of the staircase and flattens out, above the per-engine share."),
         "verdicts.png": ("report_verdicts.png",
                          "The verdict of each scheduler at the report's operating point (one of the three engines the "
                          "workload needs, load 0.7532 of the Theorem-2 capacity) and around it, up to load 1.130 "
                          "(two engines)."),
         "sim_trajectories_0.png": ("report_sim_trajectories_0.png",
                                    "Simulated requests in the system for every scheduler on the same arrivals, at the "
                                    "operating point, load 0.7532 of the reference capacity (quick run: 60 s)."),
         "sim_trajectories_1.png": ("report_sim_trajectories_1.png",
                                    "The same at load 1.130, what each engine would carry with one engine fewer (quick "
                                    "run: 60 s, short for a trend; the report's text compares each window with the "
                                    "fluid prediction)."),
         "stability_region.png": ("report_stability_region.png",
                                  "The stability region with a batch-size limit, the regions of the batches each "
                                  "scheduler forms under backlog; the star is the operating point (one engine of the "
                                  "deployment, inside the region), the cross the load with one engine fewer (outside)."),
         "latency_per_token.png": ("report_latency_per_token.png",
                                   "Mean latency per token of four orderings at the operating point and a busier load, "
                                   "with 95 % intervals (quick run: two replications of 80 s, too few for the "
                                   "intervals to separate, as its text says; the full report's four replications of "
                                   "400 s separate SRPT and SJF from FCFS at the busier load).")},
        intro="`fluidq report --quick` on its defaults (the paper's engine, the embedded Azure conversation "
              "trace). The quick report simulates shorter than the full one; its text says where that leaves "
              "a verdict open."),
    # ---- the examples -------------------------------------------------------------------------
    _ex("theorem2_boundary", "Examples", {
        "theorem2_capacity.png": ("theorem2_capacity.png",
                                  "Capacity of the CodeLlama-34B/A100 staircase against the budget `b_max`, in tokens/s "
                                  "and in requests/s at (100, 100) tokens: a step at each multiple of `b0 = 128`, "
                                  "towards `b0/a ≈ 3,609` tokens/s; the dotted line is the paper's 512."),
        "theorem2_verdicts.png": ("theorem2_verdicts.png",
                                  "`fluidq check` swept over loads for the five schedulers: Sarathi-Serve, Orca and "
                                  "chunked vLLM change from stable to unstable at load 1 (critical on it); vanilla vLLM "
                                  "and FasterTransformer are unstable below it."),
        "theorem2_slope.png": ("theorem2_slope.png",
                               "Simulated token-backlog growth of Sarathi-Serve (8 seeds of 300 s, 95 % intervals) "
                               "against the fluid prediction `max(0, λ(m_p+m_d) − b_max/t(b_max))`: the replication "
                               "test calls loads 0.7 and 0.9 bounded and 1.1 and 1.3 growing.")},
        intro="Every example of [Examples](examples.md), run with `--quick`; each figure's title says it is a quick "
              "run and how long it simulated."),
    _ex("threshold_sweep", "Examples", {
        "threshold_sweep.png": ("threshold_sweep.png",
                                "A `simulate` sweep with common random numbers: backlog growth of four schedulers "
                                "against the load (6 seeds of 120 s). Dotted lines: the thresholds `fluidq check` "
                                "computes (load 1 for Sarathi and Orca, about 0.757 for vLLM, 0.04 for "
                                "FasterTransformer). vLLM is flat at 0.5 and 0.65 and grows from 0.9; Sarathi and Orca "
                                "grow only above load 1.")}),
    _ex("scheduler_comparison", "Examples", {
        "scheduler_comparison.png": ("scheduler_comparison.png",
                                     "The five schedulers at 0.75 of the Theorem-2 capacity, (129, 112) tokens, 45 s: "
                                     "the three work-conserving ones share one bounded path; FasterTransformer "
                                     "climbs linearly and vanilla vLLM, near its own threshold, far above Sarathi."),
        "scheduler_comparison_tokens.png": ("scheduler_comparison_tokens.png",
                                            "The same runs counted in remaining tokens.")}),
    _ex("vertex_c", "Examples", {
        "vertex_c_region.png": ("vertex_c_region.png",
                                "Stability regions with `k_max = 100` for `b_max = 128` and 1024, and the vertex "
                                "C = (29, 99) tokens per 46.75 ms (arXiv:2504.07347, §6)."),
        "vertex_c_backlog.png": ("vertex_c_backlog.png",
                                 "The deterministic experiment at C: one (290, 990)-token request every 467.5 ms. "
                                 "Only Sarathi-Serve with `b_max = 128` levels off; Sarathi with 1024 and Orca keep "
                                 "climbing (120 s).")}),
    _ex("rybko_stolyar", "Examples", {
        "rybko_stolyar.png": ("rybko_stolyar.png",
                              "The LLM Rybko–Stolyar network, both engines 90 % loaded (600 s): with each engine "
                              "serving the class that leaves through it first, the backlog's peaks grow every cycle; "
                              "with the priorities reversed it stays bounded."),
        "rybko_stolyar_stations.png": ("rybko_stolyar_stations.png",
                                       "The same unstable run, tokens at each engine.")}),
    _ex("latency_orderings", "Examples", {
        f"azure-conv_{m}.png": (f"latency_orderings_{m}.png", text) for m, text in (
            ("latency_per_token_mean_s", "Mean latency per token of FCFS, PARS, SRPT and UNIBOOST on the Azure "
                                         "conversation trace."),
            ("ttlt_p99_s", "P99 time to last token, same runs."),
            ("ttft_mean_s", "Mean time to first token, same runs."),
            ("preemptions_per_request", "Preemptions per request, same runs."))},
        intro=""),
    _ex("pars_headline_sweep", "Examples", {
        "pars_headline_sweep.png": ("pars_headline_sweep.png",
                                    "FCFS / PARS and FCFS / oracle-SJF ratios of mean latency per token around the PARS "
                                    "paper's setting, one parameter at a time (burst: tau, aging, output sigma, KV size, "
                                    "burst size; Poisson: load, arrival window, KV size, aging, sigma), against the "
                                    "paper's 7.7x / 15.7x (dashed) and the factor-2 band (grey). The quick run's two "
                                    "seeds and small bursts rank nothing; the full run's table is in "
                                    "[Latency experiments](latency.md).")}),
    _ex("memguard_ada_sweep", "Examples", {
        "memguard_ada_sweep.png": ("memguard_ada_sweep.png",
                                   "UNIBOOST's P99 TTLT and preemptions per request against MEMGUARD's first level k "
                                   "and gamma-Ada's cadence (fluidq's choices 32 and 50, grey lines), with MEMGUARD off "
                                   "(dotted) and oracle SRPT (dashed); Azure conversation lengths, KV 30,000 tokens. "
                                   "The quick run (two seeds, 60 s) is inconclusive; the full run's table is in "
                                   "[Latency experiments](latency.md).")}),
    _ex("sweep_dask_resume", "Examples", {
        "sweep_dask_resume.png": ("sweep_dask_resume.png",
                                  "A 2,000-point M/M/1 sweep on a Dask local cluster, killed after a few chunks and "
                                  "resumed from its store: mean waiting time against the arrival rate with the M/M/1 "
                                  "formula. The resumed table equals an uninterrupted run's.")}),
]

LATENCY_NOTE = ("The quick latency run is one 60 s replication at two loads, too short to rank the orderings: "
                "its titles say *inconclusive*. The full run's figures and tables are in "
                "[Latency experiments](latency.md).")


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env.setdefault("MPLBACKEND", "Agg")
    return env


def _argv(job: Job, out: str) -> list:
    words = " ".join(job.argv).replace("{out}", out).split()
    if words[0] == "python":
        return [sys.executable, str(ROOT / words[1]), *words[2:]]
    assert words[0] == "fluidq", job.name
    return [sys.executable, "-m", "fluidq", *words[1:]]


def _compact(src: Path, dst: Path) -> None:
    """Re-encode a PNG with an adaptive 256-colour palette (plots have few colours)."""
    from PIL import Image

    with Image.open(src) as im:
        im.convert("RGB").quantize(colors=256, method=Image.Quantize.MEDIANCUT).save(dst, optimize=True)


def run_job(job: Job) -> dict:
    with tempfile.TemporaryDirectory(prefix=f"gallery-{job.name}-") as tmp:
        tmp = Path(tmp)
        out = tmp / "out"
        out.mkdir()
        if job.setup:
            subprocess.run([sys.executable, "-c", job.setup], cwd=tmp, check=True, env=_env())
        t0 = time.monotonic()
        run = subprocess.run(_argv(job, "out"), cwd=tmp, env=_env(), capture_output=True, text=True)
        if run.returncode != 0:
            raise SystemExit(f"{job.name}: `{job.command()}` failed (rc {run.returncode}):\n"
                             f"{run.stdout[-2000:]}\n{run.stderr[-3000:]}")
        written = {p.name for p in out.glob("*.png")}
        if written != set(job.figures):
            raise SystemExit(f"{job.name}: wrote {sorted(written)}, the gallery lists {sorted(job.figures)}; "
                             "update JOBS in docs/gallery/build.py")
        entries = {}
        for src, (name, _caption) in job.figures.items():
            _compact(out / src, IMG / name)
            entries[name] = {"job": job.name, **png_info(IMG / name)}
        print(f"  {job.name}: {len(entries)} figure(s) in {time.monotonic() - t0:.0f} s", flush=True)
        return entries


def png_info(path: Path) -> dict:
    """Width, height and bytes of a PNG, read from its header (no decoder needed)."""
    data = Path(path).read_bytes()
    if data[:8] != b"\x89PNG\r\n\x1a\n" or data[12:16] != b"IHDR":
        raise ValueError(f"{path} is not a PNG file")
    return {"width": int.from_bytes(data[16:20], "big"), "height": int.from_bytes(data[20:24], "big"),
            "bytes": len(data)}


def render_page(jobs=JOBS) -> str:
    """The text of docs/gallery.md (a pure function of JOBS: the test compares it with the file)."""
    lines = ["# Figure gallery", "",
             "Every figure below was made by the command shown under it, from this checkout, by "
             "`python docs/gallery/build.py` (which reruns them all and rewrites this page). Quick runs "
             "say so in their titles; their full versions run longer and are described in "
             "[Examples](examples.md). The commands write their figures into a folder `out/`, which must exist "
             "(`mkdir -p out` first: fluidq does not create the folder of a `--plot` path, it exits with code 2 "
             "naming it).", ""]
    section = None
    for job in jobs:
        if job.section != section:
            section = job.section
            lines += [f"## {section}", ""]
        if job.intro:
            lines += [job.intro, ""]
        if job.example:
            lines += [f"### `{job.example}.py`", ""]
        if job.example == "latency_orderings":
            lines += [LATENCY_NOTE, ""]
        for _src, (name, caption) in job.figures.items():
            alt = Path(name).stem.replace("_", " ")
            lines += [f"![{alt}](gallery/img/{name})", "", caption, ""]
        setup = " (after writing `measured.csv` as in the how-to)" if job.setup else ""
        lines += [f"Made by{setup}:", "", "```console", f"$ {job.command()}", "```", ""]
    return "\n".join(lines).rstrip() + "\n"


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--only", nargs="*", default=None, help="job names (default: all)")
    ap.add_argument("--page", action="store_true", help="only rewrite docs/gallery.md")
    args = ap.parse_args(argv)
    names = {j.name for j in JOBS}
    if args.only and set(args.only) - names:
        raise SystemExit(f"unknown job(s) {sorted(set(args.only) - names)}; jobs: {sorted(names)}")
    if not args.page:
        IMG.mkdir(parents=True, exist_ok=True)
        manifest = json.loads(MANIFEST.read_text()) if MANIFEST.exists() else {}
        todo = [j for j in JOBS if not args.only or j.name in args.only]
        for job in todo:
            manifest = {k: v for k, v in manifest.items() if v["job"] != job.name}
            manifest.update(run_job(job))
        listed = {name for j in JOBS for name, _ in j.figures.values()}
        manifest = {k: manifest[k] for k in sorted(manifest) if k in listed}
        for stale in IMG.glob("*.png"):
            if stale.name not in listed:
                stale.unlink()
        MANIFEST.write_text(json.dumps(manifest, indent=1) + "\n")
        total = sum(v["bytes"] for v in manifest.values())
        print(f"{len(manifest)} figures, {total / 1e6:.2f} MB in {IMG.relative_to(ROOT)}")
    PAGE.write_text(render_page())
    print(f"wrote {PAGE.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
