"""`_plain_path`'s decompressed copy of a ``.gz`` file is written by a temporary file and a rename: an interrupt
during the write leaves no file, so the next call decompresses again.  Before, it wrote in place and reused any
``dst`` that existed: a truncated copy was read from then on."""
import gzip
import os
import pathlib

import pytest

from fluidq.validate import cases
from fluidq.validate.cases import _plain_path


def test_an_interrupted_decompression_is_not_reused(tmp_path, monkeypatch):
    data = b"operator,tokens,time_ms\n" + b"".join(b"op,%d,1.0\n" % i for i in range(20000))
    gz = tmp_path / "profile.csv.gz"
    gz.write_bytes(gzip.compress(data))

    def half_then_interrupt(self, b, *a, **k):  # the in-place write, cut short
        with open(self, "wb") as fh:
            fh.write(bytes(b)[: len(b) // 2])
        raise KeyboardInterrupt

    def fsync_interrupt(fd):  # the temporary file's write, cut short before the rename
        raise KeyboardInterrupt

    with monkeypatch.context() as m:
        m.setattr(pathlib.Path, "write_bytes", half_then_interrupt)
        m.setattr(os, "fsync", fsync_interrupt)
        with pytest.raises(KeyboardInterrupt):
            _plain_path(gz)
    out = _plain_path(gz)
    assert out.read_bytes() == data
    assert [p.name for p in out.parent.iterdir()] == ["profile.csv"]  # no temporary file left beside it


def test_the_folder_branch_also_reads_whole_files(tmp_path):
    d = tmp_path / "run"
    d.mkdir()
    (d / "a.csv.gz").write_bytes(gzip.compress(b"x,y\n1,2\n"))
    (d / "b.txt").write_text("plain")
    out = _plain_path(d)
    assert (out / "a.csv").read_bytes() == b"x,y\n1,2\n" and (out / "b.txt").read_text() == "plain"
    assert out.parent.parent == cases._TMP["dir"]
