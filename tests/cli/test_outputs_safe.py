"""Every path a command writes is checked by one helper and written without following a link (issue 13).

One line on stderr, exit code 2, the option named; nothing a user gave is lost or overwritten.
"""
import json
import os
import stat

import pytest

from fluidq.cli import CliError
from fluidq.testing.cli import assert_one_line, run_cli
from fluidq.cli.common import output_file
from fluidq.errors import FluidqError

REFUSED = (FluidqError, CliError)  # what the command turns into one line and exit code 2


run = run_cli


one_line = assert_one_line


@pytest.fixture
def no_sim(monkeypatch):
    import fluidq.sim as sim  # noqa: PLR0402 -- the module

    def boom(*a, **k):
        raise AssertionError("the simulation started before --plot was checked")

    for name in ("simulate", "replicate"):
        monkeypatch.setattr(sim, name, boom)


@pytest.fixture
def place(tmp_path):
    """A folder with a user's files, links, a loop and a FIFO; returns ``(folder, {name: bytes})``."""
    d = tmp_path / "w"
    d.mkdir()
    (d / "sub").mkdir()
    files = {"victim.txt": b"the user's own text\n", "notes.pdf": b"%PDF-1.4 a user's paper, not a figure",
             "fig": b"a user's file named fig"}
    for name, data in files.items():
        (d / name).write_bytes(data)
    os.symlink(d / "victim.txt", d / "link.png")
    os.symlink(d / "missing.png", d / "dangling.png")
    os.symlink(d / "loop.png", d / "loop.png")
    os.mkfifo(d / "fifo.png")
    return d, files


def _unchanged(d, files):
    for name, data in files.items():
        assert (d / name).read_bytes() == data, name
    assert os.path.islink(d / "link.png") and os.readlink(d / "link.png") == str(d / "victim.txt")
    assert stat.S_ISFIFO(os.lstat(d / "fifo.png").st_mode)


@pytest.mark.parametrize("name, words", [
    ("/", ["folder"]),                      # was an internal ValueError (empty name)
    ("sub/", ["folder"]),                   # was written silently as sub.png next to it
    ("sub/.", ["folder"]),
    ("sub", ["folder"]),
    ("link.png", ["symlink to a file"]),
    ("dangling.png", ["dangling symlink"]),
    ("loop.png", ["symlink loop"]),
    ("loop.png/x.png", ["symlink loop"]),
    ("fifo.png", ["FIFO"]),
    ("notes.pdf", ["not a PDF figure", "not replaced"]),
    ("fig", ["fig.png", "exists already"]),  # the .png added to a name without one may not exist
])
def test_simulate_plot_path_edge_cases(name, words, place, capsys, no_sim, monkeypatch):
    d, files = place
    if name == "fig":
        (d / "fig.png").write_bytes(b"\x89PNG\r\n\x1a\n someone's png")
        files = dict(files, **{"fig.png": (d / "fig.png").read_bytes()})
    monkeypatch.chdir(d)
    arg = name if name == "/" else str(d / name) if not name.endswith(("/", "/.")) else str(d) + "/" + name
    before = sorted(os.listdir(d))
    one_line(["simulate", "--horizon", "5", "--plot", arg], capsys, "--plot", *words)
    assert sorted(os.listdir(d)) == before
    _unchanged(d, files)


def test_dev_null_is_refused_before_anything_is_written():
    with pytest.raises(REFUSED, match="--plot.*character device"):
        output_file("--plot", "/dev/null")
    with pytest.raises(REFUSED, match="--csv.*character device"):
        output_file("--csv", "/dev/null", figure=False)


def test_non_figure_outputs_refuse_links_and_folders(place):
    d, files = place
    for name, words in (("link.png", "symlink"), ("sub", "folder"), ("sub/", "folder"), ("fifo.png", "FIFO")):
        with pytest.raises(REFUSED, match=f"--csv.*{words}"):
            output_file("--csv", str(d / name) if name != "sub/" else str(d) + "/sub/", figure=False)
    _unchanged(d, files)
    # an existing regular file given as the output is the output asked for: it may be replaced
    assert output_file("--csv", str(d / "victim.txt"), figure=False) == str(d / "victim.txt")


def test_an_explicit_png_or_a_matplotlib_pdf_may_be_replaced(tmp_path):
    from matplotlib.figure import Figure

    from fluidq.plotting import save_figure

    fig = Figure()
    fig.add_subplot().plot([0, 1])
    for name in ("a.png", "a.pdf", "a.svg"):
        save_figure(fig, tmp_path / name)
        assert output_file("--plot", str(tmp_path / name)) == str(tmp_path / name)
    (tmp_path / "text.png").write_text("not a picture")
    with pytest.raises(REFUSED, match="not a PNG figure"):
        output_file("--plot", str(tmp_path / "text.png"))


def test_network_plot_goes_through_the_same_check(place, capsys):
    d, files = place
    from pathlib import Path

    import fluidq

    net = d / "net.toml"  # a valid network file of the user's own
    net.write_bytes((Path(fluidq.__file__).parent / "network" / "cases" / "jsq_pair.toml").read_bytes())
    for opt in ("--plot", "--plot-network"):
        one_line(["network", str(net), opt, str(d / "link.png")], capsys, opt, "symlink")
        one_line(["network", str(net), opt, str(d) + "/sub/"], capsys, opt, "folder")
        one_line(["network", str(net), opt, ""], capsys, opt)  # not silently ignored
    _unchanged(d, files)


# ------------------------------------------------------------------------- save_figure (library)

def test_save_figure_replaces_a_link_and_never_writes_through_it(tmp_path):
    from matplotlib.figure import Figure

    from fluidq.errors import DataError, ParameterError
    from fluidq.plotting import save_figure

    fig = Figure()
    fig.add_subplot().plot([0, 1])
    victim = tmp_path / "victim.txt"
    victim.write_bytes(b"keep")
    os.symlink(victim, tmp_path / "f.png")
    assert save_figure(fig, tmp_path / "f.png") == str(tmp_path / "f.png")
    assert victim.read_bytes() == b"keep"
    assert not (tmp_path / "f.png").is_symlink() and (tmp_path / "f.png").read_bytes()[:4] == b"\x89PNG"
    assert save_figure(fig, tmp_path / "noext") == str(tmp_path / "noext.png")  # as Figure.savefig names it
    assert (tmp_path / "noext.png").is_file()
    os.mkfifo(tmp_path / "p.png")
    with pytest.raises(DataError, match="FIFO"):
        save_figure(fig, tmp_path / "p.png")
    with pytest.raises(ParameterError, match="folder"):
        save_figure(fig, str(tmp_path) + "/")
    with pytest.raises(ParameterError, match=r"\.png"):
        save_figure(fig, tmp_path / "x.notaformat")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.png", "noext.png", "p.png", "victim.txt"]


# ------------------------------------------------------------------------- validate --out

CASE = "sarathi-hybrid-batch"  # about a second


def test_validate_out_replaces_planted_links_and_keeps_their_targets(tmp_path, capsys):
    out = tmp_path / "v"
    rc, _, err = run(["validate", "--case", CASE, "--out", str(out), "--json"], capsys)
    assert rc == 0, err
    victims = {}
    for name in ("validation.md", "validation.json", "validation_summary.png", ".fluidq-validation"):
        if name == ".fluidq-validation":
            continue  # a linked marker makes the folder not fluidq's (below)
        victim = tmp_path / f"victim-{name}"
        victim.write_bytes(b"user bytes " + name.encode())
        (out / name).unlink()
        os.symlink(victim, out / name)
        victims[name] = victim
    rc, stdout, err = run(["validate", "--case", CASE, "--out", str(out), "--json"], capsys)
    assert rc == 0, err
    for name, victim in victims.items():
        assert victim.read_bytes() == b"user bytes " + name.encode(), name
        assert (out / name).is_file() and not (out / name).is_symlink(), name
    json.loads((out / "validation.json").read_text())
    os.unlink(out / ".fluidq-validation")
    os.symlink(tmp_path / "victim-validation.md", out / ".fluidq-validation")
    one_line(["validate", "--case", CASE, "--out", str(out)], capsys, "--out", ".fluidq-validation", "symlink")


@pytest.mark.parametrize("kind", ["folder", "dangling", "loop"])
def test_validate_out_that_is_a_symlink_is_refused(kind, tmp_path, capsys):
    real = tmp_path / "real"
    real.mkdir()
    link = tmp_path / "link"
    os.symlink({"folder": real, "dangling": tmp_path / "nothing", "loop": link}[kind], link)
    one_line(["validate", "--case", CASE, "--out", str(link)], capsys, "--out", "symlink")
    assert list(real.iterdir()) == []


# ------------------------------------------------------------------------- Outputs: no nan/inf, JSON null

def test_plain_turns_every_non_finite_float_into_null():
    import numpy as np

    from fluidq.results import plain

    obj = {"a": float("inf"), "b": -float("inf"), "c": float("nan"), "d": np.float64("inf"),
           "e": np.array([1.0, np.inf, np.nan]), "f": (np.float32("-inf"), 2.5), "g": 3}
    text = json.dumps(plain(obj), allow_nan=False)  # would raise on NaN/Infinity
    assert json.loads(text) == {"a": None, "b": None, "c": None, "d": None, "e": [1.0, None, None],
                                "f": [None, 2.5], "g": 3}
    assert '"inf"' not in text and '"-inf"' not in text


def test_fmt_value_prints_an_en_dash_for_an_undefined_value():
    import numpy as np

    from fluidq.report.reference import fmt_num
    from fluidq.results import fmt_value

    for bad in (float("nan"), float("inf"), -float("inf"), np.float64("nan"), None, "x"):
        assert fmt_value(bad, ",.1f") == "\u2013" and fmt_num(bad) == "\u2013"
    assert fmt_value(1234.5, ",.1f") == "1,234.5" and fmt_value(np.int64(7), ",d") == "7"
    assert fmt_value(3, ".2f") == "3.00" and fmt_value(0.5, "+.1f") == "+0.5"


def test_validation_table_shows_a_dash_not_nan():
    from fluidq.validate import Row, summary_table

    rows = [Row(case="c", source="s", quantity="q", predicted=float("nan"), measured=float("inf"), unit="x",
                error_pct=float("nan"), target="t", status="miss", note="")]
    table = summary_table(rows)
    assert not any(w in table.lower() for w in ("nan", "inf")), table
    assert table.splitlines()[-1].count("\u2013") == 3


@pytest.mark.parametrize("argv", [["simulate", "--horizon", "5", "--plot="], ["fit", "m.csv", "--plot="],
                                  ["region", "--plot="], ["dtmc", "--rate", "1", "--plot="],
                                  ["latency", "--plot="], ["pars", "--plot=", "--cross", "a"],
                                  ["pars", "--save="], ["sweep", "case.toml", "--csv="]],
                         ids=lambda a: "-".join(x.strip("-=") for x in a if x.startswith("--"))[:30] or a[0])
def test_an_empty_output_path_is_refused_not_ignored(argv, capsys):
    # an empty --plot / --csv / --save used to be skipped silently: the user asked for a file and got none
    err = one_line(argv, capsys, "''")
    assert "--" in err and "path" in err, err


def test_a_png_fluidq_did_not_write_is_not_replaced(tmp_path):
    """Review 2026-12-06: `fluidq fit meas.csv --plot mine.png` replaced a user's own 1x1 PNG.  A PNG is
    replaced only when it carries matplotlib's mark (every PNG fluidq writes has it)."""
    import zlib

    def chunk(kind, data):
        return len(data).to_bytes(4, "big") + kind + data + zlib.crc32(kind + data).to_bytes(4, "big")

    png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", (1).to_bytes(4, "big") * 2 + b"\x08\x00\x00\x00\x00")
           + chunk(b"IDAT", zlib.compress(b"\x00\x00")) + chunk(b"IEND", b""))
    mine = tmp_path / "mine.png"
    mine.write_bytes(png)
    with pytest.raises(REFUSED, match="not a PNG figure"):
        output_file("--plot", str(mine))
    assert mine.read_bytes() == png


def test_one_replace_rule_for_every_output_that_says_what_fluidq_wrote(tmp_path, monkeypatch):
    """--plot, sweep's --csv and pars's --save refuse to replace a file fluidq cannot tell it wrote through
    output_file's one check (``replaceable``), with one wording naming the flag, and an empty file is replaced
    by each (before, an empty x.png given to --plot was refused while an empty --csv or --save was used)."""
    from fluidq.cli.commands.pars import _is_saved_ranker
    from fluidq.cli.commands.sweep import _is_sweep_table

    mine = b"a user's own file\n"
    cases = [("--plot", "x.png", {}),
             ("--csv", "x.csv", dict(figure=False, replaceable=(_is_sweep_table, "a sweep table"))),
             ("--save", "x.npz", dict(figure=False, suffixes=(".npz",),
                                      replaceable=(_is_saved_ranker, "a ranker fluidq saved")))]
    for option, name, kw in cases:
        p = tmp_path / name
        p.write_bytes(mine)
        with pytest.raises(CliError, match=f"^{option} .*{name}: an existing file that is not .* \\(fluidq did not "
                                           "write it\\), so it is not replaced; remove it or give a new name$"):
            output_file(option, str(p), **kw)
        assert p.read_bytes() == mine
        p.write_bytes(b"")
        assert output_file(option, str(p), **kw) == str(p)

    def unreadable(path):
        raise PermissionError(13, "Permission denied")

    p = tmp_path / "y.csv"
    p.write_bytes(mine)
    with pytest.raises(CliError, match="^--csv .*y.csv: cannot read the existing file .*permission denied.*not replaced"):
        output_file("--csv", str(p), figure=False, replaceable=(unreadable, "a sweep table"))
