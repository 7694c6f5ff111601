"""Re-running validate into an earlier report's folder leaves one report (review revbad2 L6): the earlier run's
figures that the new one does not write (``run-base.png`` of another run folder) were left beside the new report.
Now the files the earlier ``validation.json`` lists and the new report does not write are removed; a file it does
not list (the user's) is never touched."""
import json
from pathlib import Path

import run_variants as rv
from fluidq.validate import validate


def test_an_earlier_reports_own_files_go_and_the_users_stay(tmp_path):
    run = rv.copy_run(rv.LLAMA_PRO, tmp_path / "other")
    out = tmp_path / "out"
    out.mkdir()
    # an earlier report of a run folder named "base": its JSON lists its figure
    (out / "run-base.png").write_bytes(b"\x89PNG old figure")
    (out / "validation.json").write_text(json.dumps({"rows": [], "files": {
        "markdown": str(out / "validation.md"), "json": str(out / "validation.json"),
        "figures": [str(out / "validation_summary.png"), str(out / "run-base.png")]}}))
    (out / "notes.txt").write_text("mine")
    (out / "mine.png").write_bytes(b"mine")  # a PNG the earlier report does not list: the user's
    res = validate(run=run, out_dir=out)
    names = sorted(p.name for p in out.iterdir())
    assert "run-base.png" not in names, names
    assert (out / "notes.txt").read_text() == "mine" and (out / "mine.png").read_bytes() == b"mine"
    assert "run-other.png" in names and "validation.md" in names
    listed = json.loads((out / "validation.json").read_text())["files"]["figures"]
    assert all((out / Path(f).name).is_file() for f in listed)
    assert res.files["markdown"].endswith("validation.md")
