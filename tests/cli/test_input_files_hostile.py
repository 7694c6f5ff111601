"""Every input path of the CLI against hostile files (issue 13): a FIFO, a device, a folder, a symlink
loop, a dangling link, a name longer than the file system allows, a binary file, corrupt and truncated
gzip, JSON nested too deeply, an empty file.  Each is one line on stderr naming the input, exit code 2,
never an internal error, and never a hang (the FIFO and device cases run in a subprocess with a
timeout: an open() that blocks would otherwise hang the test run)."""
import gzip
import hashlib
import os
import subprocess
import sys

import pytest

from fluidq.testing.cli import run_cli

# (the command line with {} for the hostile path, a word the one-line message must contain)
FACES = [
    (["simulate", "--trace", "{}", "--horizon", "5"], "trace"),
    (["latency", "--trace", "{}", "--horizon", "5"], "trace"),
    (["sweep", "{}"], "case"),
    (["network", "{}"], "case"),
    (["fit", "{}"], "csv"),
    (["capacity", "--fit", "{}", "--b-max", "512"], "--fit"),
    (["check", "--fit", "{}", "--b-max", "512", "--rate", "1"], "--fit"),
    (["region", "--fit", "{}", "--b-max", "512"], "--fit"),
    (["simulate", "--fit", "{}", "--b-max", "512"], "--fit"),
    (["pars", "--data", "{}"], "{}"),
]


run = run_cli


def _fill(argv, path):
    return [a.replace("{}", str(path)) for a in argv]


@pytest.fixture
def hostile(tmp_path):
    """name -> a path of that kind (the regular ones are made here, in a fresh folder)."""
    d = tmp_path
    (d / "binary.dat").write_bytes(bytes(range(256)) * 20)
    (d / "corrupt.gz").write_bytes(b"\x1f\x8b\x08\x00" + b"\xff" * 40)
    full = gzip.compress(b"TIMESTAMP,ContextTokens,GeneratedTokens\n" + b"2023-11-16 18:15:46.6,10,5\n" * 200)
    (d / "truncated.gz").write_bytes(full[: len(full) // 2])
    (d / "deep.json").write_text("[" * 200_000)
    (d / "empty.txt").write_text("")
    (d / "folder").mkdir()
    os.symlink("loop", d / "loop")
    os.symlink(d / "nowhere", d / "dangling")
    return {"binary": d / "binary.dat", "corrupt gzip": d / "corrupt.gz", "truncated gzip": d / "truncated.gz",
            "deep json": d / "deep.json", "empty": d / "empty.txt", "folder": d / "folder",
            "symlink loop": d / "loop", "dangling link": d / "dangling", "missing": d / "missing.csv",
            "long name": d / ("x" * 300)}


KINDS = ["binary", "corrupt gzip", "truncated gzip", "deep json", "empty", "folder", "symlink loop",
         "dangling link", "missing", "long name"]


@pytest.mark.parametrize("argv,word", FACES, ids=[f[0][0] + ("-" + f[0][1] if f[0][1].startswith("-") else "")
                                                   for f in FACES])
@pytest.mark.parametrize("kind", KINDS)
def test_hostile_input_is_one_line_naming_it(argv, word, kind, hostile, capsys):
    path = hostile[kind]
    before = path.read_bytes() if kind in ("binary", "corrupt gzip", "truncated gzip", "deep json", "empty") else None
    rc, out, err = run(_fill(argv, path), capsys)
    assert rc == 2, (kind, argv, rc, out, err)
    assert err.count("\n") == 1, err
    assert "internal error" not in err and "Traceback" not in err, err
    assert word.replace("{}", path.name[:40]) in err or path.name[:40] in err, err
    if before is not None:
        assert path.read_bytes() == before  # an input is never rewritten


@pytest.mark.parametrize("argv,word", FACES[:4] + [(["pars", "--load", "{}"], "{}"), (["sweep", "x.toml",
                                                                                        "--store", "{}"], "store")],
                         ids=["simulate", "latency", "sweep", "network", "pars-load", "sweep-store"])
@pytest.mark.parametrize("special", ["fifo", "/dev/zero"])
def test_fifo_and_device_answer_at_once(argv, word, special, tmp_path):
    if special == "fifo":
        path = tmp_path / "pipe"
        os.mkfifo(path)
    else:
        path = special
    if argv[0] == "sweep" and "--store" in argv:
        case = tmp_path / "x.toml"
        case.write_text('[sweep]\nanalysis = "capacity"\n[grid]\nb_max = [128, 256]\n')
        argv = [str(case) if a == "x.toml" else a for a in argv]
    cmd = [sys.executable, "-m", "fluidq", *_fill(argv, path)]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:  # pragma: no cover - the regression this test exists for
        pytest.fail(f"{' '.join(cmd)} hung on a {special}")
    assert p.returncode == 2, (p.returncode, p.stdout, p.stderr)
    assert p.stderr.count("\n") == 1, p.stderr
    assert "internal error" not in p.stderr
    assert "regular" in p.stderr or "not a" in p.stderr, p.stderr


# ---------------------------------------------------------------- trace contents

AZ_HEAD = "TIMESTAMP,ContextTokens,GeneratedTokens\n"


def _mooncake(*records):
    return "".join(r + "\n" for r in records)


@pytest.mark.parametrize("text,words", [
    (_mooncake('{"timestamp": NaN, "input_length": 10, "output_length": 5}',
               '{"timestamp": 1, "input_length": 10, "output_length": 5}'), ["line 1", "NaN"]),
    (_mooncake('{"timestamp": Infinity, "input_length": 10, "output_length": 5}'), ["line 1", "Infinity"]),
    (_mooncake('{"timestamp": 0, "input_length": 10, "output_length": 5}',
               '{"timestamp": -Infinity, "input_length": 10, "output_length": 5}'), ["line 2", "Infinity"]),
    (_mooncake('{"timestamp": 0, "input_length": true, "output_length": 5}'), ["line 1", "input_length"]),
    (_mooncake('{"timestamp": 0, "input_length": 10, "output_length": 1.9}'), ["line 1", "output_length"]),
    (_mooncake('{"timestamp": 0, "input_length": 1e30, "output_length": 5}'), ["line 1", "input_length"]),
    (_mooncake('{"timestamp": 0, "input_length": -3, "output_length": 5}'), ["line 1", "input_length"]),
    (AZ_HEAD + "2023-11-16 18:15:46.68+00:00,100,10\n2023-11-16 18:15:47.68,100,10\n", ["line 2", "line 3"]),
    (AZ_HEAD + "2023-11-16 18:15:46.68,100,10\nnot a time,100,10\n", ["line 3"]),
    (AZ_HEAD + "2023-11-16 18:15:46.68,100,ten\n", ["line 2"]),
])
def test_trace_contents_are_refused_naming_the_line(text, words, tmp_path, capsys):
    p = tmp_path / ("t.jsonl" if text.startswith("{") else "t.csv")
    p.write_text(text)
    before = hashlib.sha256(p.read_bytes()).hexdigest()
    rc, out, err = run(["simulate", "--trace", str(p), "--horizon", "5"], capsys)
    assert rc == 2, (rc, out, err)
    assert err.count("\n") == 1 and "internal error" not in err, err
    assert "t.jsonl" in err or "t.csv" in err, err
    for w in words:
        assert w in err, (w, err)
    assert hashlib.sha256(p.read_bytes()).hexdigest() == before


def test_trace_api_refuses_non_finite_times(tmp_path):
    from fluidq.errors import DataError
    from fluidq.workload import load_trace

    p = tmp_path / "t.jsonl"
    p.write_text(_mooncake('{"timestamp": 0, "input_length": 10, "output_length": 5}',
                           '{"timestamp": NaN, "input_length": 10, "output_length": 5}'))
    with pytest.raises(DataError, match="line 2"):
        load_trace(p)


# ---------------------------------------------------------------- PARS files

def _table(path, rows):
    import json
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


@pytest.mark.parametrize("content", [b"x\n", bytes(range(100)), b"PK\x03\x04" + b"\x00" * 60])
def test_pars_load_of_a_fake_npz_is_one_line(content, tmp_path, capsys):
    fake = tmp_path / "ranker.npz"
    fake.write_bytes(content)
    data = _table(tmp_path / "t.jsonl", [{"instruction": f"p {i}", "words": {"m": 5 + i}} for i in range(20)])
    rc, out, err = run(["pars", "--load", str(fake), "--data", str(data)], capsys)
    assert rc == 2 and err.count("\n") == 1, (rc, err)
    assert "ranker.npz" in err and "internal error" not in err, err
    assert fake.read_bytes() == content


def test_pars_with_empty_prompts_prints_no_nan(tmp_path, capsys):
    rows = [{"instruction": "", "words": {"m": 5 + i % 3}} for i in range(40)]
    data = _table(tmp_path / "t.jsonl", rows)
    rc, out, err = run(["pars", "--data", str(data)], capsys)
    assert rc == 0, err
    words = out.replace(",", " ").split()
    assert "nan" not in [w.lower() for w in words], out
    assert "–" in out and "undefined" in out, out  # the dash, and a note that says why
    rc, out, err = run(["pars", "--data", str(data), "--json"], capsys)
    import json
    doc = json.loads(out)  # strict JSON: NaN would not even parse with allow_nan=False below
    json.dumps(doc, allow_nan=False)


@pytest.mark.parametrize("argv", [["check"], ["capacity"], ["simulate", "--horizon", "5"], ["region"],
                                  ["latency", "--horizon", "5"], ["capacity", "--model", "Llama-3.1-8B", "--gpu", "H100"]],
                         ids=lambda a: "-".join(a[:1] + a[2:3]))
@pytest.mark.parametrize("text", ["", "foo,bar\n1,2\n"], ids=["empty", "bad header"])
def test_trace_content_errors_name_the_option(argv, text, tmp_path, capsys):
    """A trace whose contents the loader refuses is named with its option (the line was 'empty.csv: the
    file is empty', naming the file but not --trace)."""
    p = tmp_path / "t.csv"
    p.write_text(text)
    rc, out, err = run([*argv, "--trace", str(p)], capsys)
    assert rc == 2 and err.count("\n") == 1 and "internal error" not in err, err
    assert f"--trace {p}" in err, err
