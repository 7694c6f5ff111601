"""`fluidq report --out DIR` never writes through a link (issue 13, data loss item 4).

The report is run twice in this module (a module-scoped fixture): once to make a folder, then again on
that folder after symlinks to a user's files were planted at the names the report writes.  The files the
links point to must keep every byte; the links must be replaced by the report's own regular files.
"""
import contextlib
import io
import json
import os
import re

import pytest

from fluidq.cli import main


@pytest.fixture(scope="module")
def rewritten(tmp_path_factory):
    root = tmp_path_factory.mktemp("planted")
    out = root / "rep"
    assert main(["report", "--quick", "--out", str(out), "--json"]) == 0
    victims = {}
    for name in ("report.md", "report.html", "batch_time.png", "verdicts.png"):
        assert (out / name).is_file() and not (out / name).is_symlink()
        victim = root / f"victim-{name}.txt"
        victim.write_bytes(b"the user's own bytes: " + name.encode() + b"\n\x00\xff")
        (out / name).unlink()
        os.symlink(victim, out / name)
        victims[name] = (victim, victim.read_bytes())
    # a hard link is another name of the user's file: replacing the folder's entry leaves the file whole
    victim = root / "victim-hardlink.png"
    victim.write_bytes(b"\x89PNG\r\n\x1a\n the user's own picture")
    (out / "capacity_vs_bmax.png").unlink()
    os.link(victim, out / "capacity_vs_bmax.png")
    victims["capacity_vs_bmax.png"] = (victim, victim.read_bytes())
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = main(["report", "--quick", "--out", str(out), "--json"])
    return rc, out, victims, buf.getvalue()


def test_the_files_links_point_to_keep_their_bytes(rewritten):
    rc, out, victims, _ = rewritten
    assert rc == 0
    for name, (victim, before) in victims.items():
        assert victim.read_bytes() == before, name


def test_the_links_are_replaced_by_the_reports_own_files(rewritten):
    rc, out, victims, _ = rewritten
    for name in victims:
        p = out / name
        assert not p.is_symlink() and p.is_file() and p.stat().st_nlink == 1, name
    assert (out / "report.md").read_text().startswith("# fluidq report")
    assert (out / "batch_time.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert (out / ".fluidq-report").is_file() and not (out / ".fluidq-report").is_symlink()
    assert not [p.name for p in out.iterdir() if p.name.endswith(".tmp")]  # no temporary file left


# ----------------------------------------------------------------------- the folder itself (no report run)

@pytest.fixture
def no_report(monkeypatch):
    import fluidq.report as report  # noqa: PLR0402 -- the module (fluidq.report is also a lazy name)

    def boom(*a, **k):
        raise AssertionError("the report started before --out was checked")

    monkeypatch.setattr(report, "build_report", boom)


def one_line(argv, capsys, *words):
    rc = main(argv)
    out, err = capsys.readouterr()
    assert rc == 2, (rc, out, err)
    assert err.count("\n") == 1 and "Traceback" not in err, err
    for w in words:
        assert w in err, (w, err)
    return err


@pytest.mark.parametrize("kind", ["folder", "folder/", "dangling", "loop"])
def test_out_that_is_a_symlink_is_refused(kind, tmp_path, capsys, no_report):
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    target = {"folder": real, "folder/": real, "dangling": tmp_path / "nothing", "loop": link}[kind]
    os.symlink(target, link)
    arg = str(link) + ("/" if kind.endswith("/") else "")
    err = one_line(["report", "--out", arg], capsys, "--out", "symlink")
    assert "File exists" not in err
    assert list(real.iterdir()) == [] and not (tmp_path / "nothing").exists()
    assert os.path.islink(link)


def test_a_marker_that_is_a_symlink_does_not_make_a_folder_fluidqs(tmp_path, capsys, no_report):
    d = tmp_path / "d"
    d.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"keep me")
    os.symlink(victim, d / ".fluidq-report")
    (d / "report.md").write_bytes(b"my notes")
    one_line(["report", "--out", str(d)], capsys, "--out", ".fluidq-report", "symlink")
    assert victim.read_bytes() == b"keep me" and (d / "report.md").read_bytes() == b"my notes"


def test_the_marker_is_written_by_rename(tmp_path, monkeypatch):
    """A marker replaced by a link after the check (a race) is replaced, its target untouched."""
    from fluidq.cli.common import mark_folder

    d = tmp_path / "d"
    d.mkdir()
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"keep me")
    os.symlink(victim, d / ".fluidq-report")
    mark_folder(d, ".fluidq-report", "report")
    assert victim.read_bytes() == b"keep me"
    assert not (d / ".fluidq-report").is_symlink() and "fluidq report" in (d / ".fluidq-report").read_text()


def test_a_folder_at_a_report_file_name_is_one_data_error(tmp_path):
    from fluidq.errors import DataError
    from fluidq._io import write_output

    (tmp_path / "report.md").mkdir()
    with pytest.raises(DataError, match="report.md.*a folder"):
        write_output(tmp_path / "report.md", "x", what="report file")
    assert (tmp_path / "report.md").is_dir()


# ----------------------------------------------------------------------- no nan/inf in the report (Outputs)

def test_no_nan_or_inf_in_the_report_text_and_json_keeps_null(rewritten):
    rc, out, _, stdout = rewritten

    def no_constant(name):
        raise AssertionError(f"{name} in the JSON")

    json.loads(stdout, parse_constant=no_constant)
    assert '"inf"' not in stdout and '"-inf"' not in stdout
    for name in ("report.md", "report.html"):
        text = re.sub(r"<img [^>]*>", "", (out / name).read_text())
        assert not re.search(r"(?<![\w.-])[-+]?(nan|inf|infinity)(?![\w-])", text, re.I), name


def test_a_quick_report_says_so_at_its_top_and_under_every_figure(rewritten):
    # issue 17: the figures of a --quick report did not say they come from short runs
    _, out, _, _ = rewritten
    from fluidq.report import QUICK_NOTE

    md = (out / "report.md").read_text()
    assert QUICK_NOTE in md.split("## ")[0]
    figs = re.findall(r"!\[([^\]]*)\]\(([^)]+\.png)\)", md)
    assert figs and all(alt.endswith("(quick run)") for alt, _ in figs), figs
    html_text = (out / "report.html").read_text()
    caps = re.findall(r"<figcaption>([^<]*)</figcaption>", html_text)
    assert caps and all(c.endswith("(quick run)") for c in caps) and "Quick run" in html_text
