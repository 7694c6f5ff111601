"""Every ``examples/*.py`` runs with ``--quick --out DIR`` and writes non-trivial PNGs.

Each example runs as a user would run it (a subprocess), so an example that no longer matches the
API fails here. A PNG counts as non-trivial when it decodes, is at least 300 x 200 pixels and is not
a flat image (the pixel values vary: axes, text and curves). The PNGs written are exactly those the
figure gallery's job for the example lists (docs/gallery/build.py), so the gallery stays complete.
"""
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = sorted(p for p in (ROOT / "examples").glob("*.py") if not p.name.startswith("_"))
# sweep_dask_resume starts two Dask clusters (its claim is also tested fast in tests/sweep);
# latency_orderings --quick still takes ~25 s and pars_headline_sweep --quick ~40 s (their orderings are tested
# in tests/latency)
SLOW = {"sweep_dask_resume.py", "latency_orderings.py", "pars_headline_sweep.py"}
NEEDS = {"sweep_dask_resume.py": "distributed"}


def _gallery_figures():
    """{example stem: [PNG names it writes]} from the gallery's build script."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("gallery_build", ROOT / "docs" / "gallery" / "build.py")
    mod = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, mod)  # dataclasses look the module up
    spec.loader.exec_module(mod)
    return {j.example: list(j.figures) for j in mod.JOBS if j.example}


def _params():
    for p in EXAMPLES:
        marks = [pytest.mark.slow] if p.name in SLOW else []
        yield pytest.param(p, marks=marks, id=p.stem)


def test_there_are_examples():
    names = {p.name for p in EXAMPLES}
    assert {"theorem2_boundary.py", "scheduler_comparison.py", "vertex_c.py", "rybko_stolyar.py"} <= names


@pytest.mark.parametrize("script", list(_params()))
def test_example_runs_quick_and_writes_pngs(script, tmp_path):
    if script.name in NEEDS:
        pytest.importorskip(NEEDS[script.name], reason=f"{script.name} needs the dask extra")
    import matplotlib.image as mpimg

    out = tmp_path / "out"
    run = subprocess.run([sys.executable, str(script), "--quick", "--out", str(out)], cwd=tmp_path,
                         capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    pngs = sorted(out.glob("*.png"))
    assert pngs, f"{script.name} wrote no PNG to --out"
    listed = _gallery_figures().get(script.stem)
    assert listed is not None, f"{script.name} has no job in docs/gallery/build.py"
    assert {p.name for p in pngs} == set(listed), (
        f"{script.name} --quick wrote {sorted(p.name for p in pngs)}, the gallery lists {sorted(listed)}: "
        "update JOBS in docs/gallery/build.py and rerun it")
    for png in pngs:
        px = mpimg.imread(png)
        assert px.shape[0] >= 200 and px.shape[1] >= 300, (png.name, px.shape)
        gray = px[..., :3].mean(axis=2) if px.ndim == 3 else px
        assert gray.std() > 0.03, f"{png.name} looks blank"
        assert (gray < 0.6).mean() > 0.002, f"{png.name} has no dark ink (no text or curves)"


SWEEP_CASES = sorted((ROOT / "examples" / "sweeps").glob("*.toml"))


@pytest.mark.parametrize("case", SWEEP_CASES, ids=lambda p: p.stem)
def test_sweep_case_files_load_and_their_points_are_valid(case):
    from fluidq.sweep.analyses import resolve_analysis
    from fluidq.sweep.case import load_case

    c = load_case(case)
    assert len(c.grid) >= 10 and c.store and c.store.endswith(".jsonl")
    fn = resolve_analysis(c.analysis)
    if c.analysis == "simulate":  # keep it short: check the first point runs with a 2 s horizon
        point = {**c.grid[0], "horizon_s": 2.0}
    else:
        point = c.grid[len(c.grid) // 2]
    import numpy as np

    out = fn(point, np.random.default_rng(0))
    assert out and all(isinstance(v, (str, int, float, bool, list)) or v is None for v in out.values())
