"""An interrupted `fluidq report` / `fluidq validate --out` leaves the earlier report whole.

New-user review: after a complete report in R, a second report into R cut short by Ctrl-C had replaced
six of seven PNGs while report.md still described the first one.  The sections here are stand-ins
(each writes one figure through ``ctx.figure``), so the test runs in a moment; the real sections use
the same ``ctx.figure`` path.
"""
import os
import importlib
import types

import pytest

import fluidq.report as report_mod
from fluidq._io import staged_folder
from fluidq.errors import DataError
from fluidq.report import Section, build_report


def _fake_sections(tag, *, stop_after=None):
    mods = []
    for i in range(3):
        def render(ctx, i=i):
            if stop_after is not None and i > stop_after:
                raise KeyboardInterrupt
            p = ctx.figure(f"fig{i}")
            p.write_bytes(f"{tag} figure {i}".encode())
            return Section(title=f"{tag} {i}", markdown=f"text of {tag} {i}", figures=[p])
        mods.append(types.SimpleNamespace(__name__=f"fake.s{i}0_x", render=render))
    return mods


@pytest.fixture
def engine_workload():
    from fluidq.report import default_inputs

    e, w, _ = default_inputs()
    return e, w


def _snapshot(folder):
    return {p.name: p.read_bytes() for p in sorted(folder.iterdir())}


def test_a_report_cut_short_leaves_the_earlier_one_whole(tmp_path, monkeypatch, engine_workload):
    e, w = engine_workload
    out = tmp_path / "R"
    monkeypatch.setattr(report_mod, "_sections", lambda: _fake_sections("first"))
    res = build_report(out, e, w)
    assert res["figures"] == [str(out / f"fig{i}.png") for i in range(3)]
    (out / "notes.txt").write_text("the user's own file")
    before = _snapshot(out)
    assert b"first figure 0" in before["report.html"] or b"first 0" in before["report.md"]
    monkeypatch.setattr(report_mod, "_sections", lambda: _fake_sections("second", stop_after=1))
    with pytest.raises(KeyboardInterrupt):
        build_report(out, e, w)
    assert _snapshot(out) == before  # not one figure of the second run got in
    assert sorted(p.name for p in tmp_path.iterdir()) == ["R"]  # no temporary folder left beside it
    monkeypatch.setattr(report_mod, "_sections", lambda: _fake_sections("third"))
    res = build_report(out, e, w)
    after = _snapshot(out)
    assert after["fig1.png"] == b"third figure 1" and b"third 2" in after["report.md"]
    assert after["notes.txt"] == b"the user's own file"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["R"]


def test_an_error_in_a_section_leaves_the_folder_alone(tmp_path, monkeypatch, engine_workload):
    e, w = engine_workload
    out = tmp_path / "R"

    def boom(ctx):
        ctx.figure("half").write_bytes(b"x")
        raise ValueError("a section failed")

    monkeypatch.setattr(report_mod, "_sections",
                        lambda: [types.SimpleNamespace(__name__="fake.s10_x", render=boom)])
    with pytest.raises(ValueError):
        build_report(out, e, w)
    assert list(out.iterdir()) == []


def test_a_folder_at_a_file_name_is_refused_before_any_file_moves(tmp_path):
    out = tmp_path / "R"
    out.mkdir()
    (out / "a.png").write_bytes(b"old a")
    (out / "b.png").mkdir()
    with pytest.raises(DataError, match="b.png.*a folder"):
        with staged_folder(out, what="report file") as stage:
            (stage / "a.png").write_bytes(b"new a")
            (stage / "b.png").write_bytes(b"new b")
    assert (out / "a.png").read_bytes() == b"old a" and (out / "b.png").is_dir()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["R"]


def test_a_link_at_a_file_name_is_replaced_not_followed(tmp_path):
    out = tmp_path / "R"
    out.mkdir()
    victim = tmp_path / "victim"
    victim.write_bytes(b"keep")
    os.symlink(victim, out / "a.png")
    with staged_folder(out) as stage:
        (stage / "a.png").write_bytes(b"new")
    assert victim.read_bytes() == b"keep" and not (out / "a.png").is_symlink()
    assert (out / "a.png").read_bytes() == b"new"


def test_validate_cut_short_leaves_the_earlier_report_whole(tmp_path, monkeypatch):
    vmod = importlib.import_module("fluidq.validate")
    from fluidq.validate.cases import CaseResult

    cases = [types.SimpleNamespace(name=f"c{i}", fast=True, kind="k", source="s", path=f"c{i}.toml")
             for i in range(3)]
    monkeypatch.setattr(vmod, "load_cases", lambda folder: cases)
    monkeypatch.setattr(vmod, "validation_dir", lambda root: tmp_path)
    state = {"tag": "first", "stop": None}

    def run_case(c, data, *, fast, out_dir, harness_dir):
        i = int(c.name[1:])
        if state["stop"] is not None and i > state["stop"]:
            raise KeyboardInterrupt
        p = out_dir / f"{c.name}.png"
        p.write_bytes(f"{state['tag']} {c.name}".encode())
        return CaseResult(case=c, rows=(), markdown=f"{state['tag']} {c.name}", figures=(str(p),))

    monkeypatch.setattr(vmod, "run_case", run_case)
    monkeypatch.setattr(vmod.ValidationResult, "plot",
                        lambda self, path=None: (path.write_bytes(state["tag"].encode()), path)[1])
    monkeypatch.setattr(vmod, "summary_table", lambda rows: "(table)")
    out = tmp_path / "V"
    res = vmod.validate(out)
    assert res.files["figures"][1:] == [str(out / f"c{i}.png") for i in range(3)]
    assert [cr.figures for cr in res.cases] == [(str(out / f"c{i}.png"),) for i in range(3)]
    before = _snapshot(out)
    state.update(tag="second", stop=1)
    with pytest.raises(KeyboardInterrupt):
        vmod.validate(out)
    assert _snapshot(out) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["V"]
