"""A non-editable install is complete (issue 17): the build copies the validation suite's cases and
data and the PARS length tables into the package, and the commands that name them work from any
folder with no checkout around.  The build is setuptools' ``build_py`` (what a wheel holds, offline)."""
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    if not (ROOT / "setup.py").is_file():  # pragma: no cover - run from an sdist without it
        pytest.skip("no setup.py in this tree")
    out = tmp_path_factory.mktemp("build")
    work = tmp_path_factory.mktemp("work")
    shutil.copytree(ROOT, work / "src", ignore=shutil.ignore_patterns(".git", ".ci-venv", "build", "*.egg-info",
                                                                       "__pycache__", "site", "fluidq-report*"))
    p = subprocess.run([sys.executable, "setup.py", "-q", "build_py", "--build-lib", str(out)], cwd=work / "src",
                       capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    return out


def _run(built, code, cwd):
    env = {**os.environ, "PYTHONPATH": str(built)}
    env.pop("FLUIDQ_VALIDATION_DIR", None)
    return subprocess.run([sys.executable, "-c", code], cwd=cwd, env=env, capture_output=True, text=True, timeout=300)


def test_the_build_carries_the_validation_suite_and_length_tables(built):
    v = built / "fluidq" / "_validation"
    assert sorted(p.name for p in (v / "cases").glob("*.toml")) == sorted(p.name for p in
                                                                         (ROOT / "validation" / "cases").glob("*.toml"))
    assert (v / "data" / "lengths" / "alpaca_eval_lengths.jsonl.gz").is_file()
    assert (v / "data" / "PROVENANCE.md").is_file()
    assert (built / "fluidq" / "data" / "azure2023_conv.csv.gz").is_file()


def test_validate_and_pars_data_work_from_any_folder(built, tmp_path):
    code = ("import fluidq, fluidq.validate as v\n"
            "from fluidq.predict.data import load_lengths\n"
            "assert fluidq.__file__.startswith(%r), fluidq.__file__\n"
            "print(v.validation_dir())\n"
            "print(len(load_lengths('alpaca_eval')))\n"
            "r = v.validate(%r, case='batch-time-fits')\n"
            "print(len(r.rows))\n") % (str(built), str(tmp_path / "out"))
    p = _run(built, code, tmp_path)
    assert p.returncode == 0, p.stderr[-2000:]
    where, n, rows = p.stdout.split()
    assert Path(where) == built / "fluidq" / "_validation"
    assert int(n) == 805 and int(rows) > 0
