"""``--dask ADDR`` to a listener that is no Dask scheduler is refused within the deadline, naming --dask
(rev-bad H1): one that never answers (the handshake read had no time limit: a hang), one that answers bytes
that are no Dask frame (read as a frame of exabytes: reported as 'out of memory')."""
from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest

pytest.importorskip("distributed")

import fluidq.sweep as fsweep
from fluidq.cli import main
from fluidq.errors import ParameterError


def _listener(reply: bytes | None):
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(8)
    held = []

    def serve():
        while True:
            try:
                conn, _ = srv.accept()
            except OSError:
                return
            held.append(conn)
            if reply is not None:
                try:
                    conn.sendall(reply)
                except OSError:
                    pass

    threading.Thread(target=serve, daemon=True).start()
    return srv, held, f"tcp://127.0.0.1:{srv.getsockname()[1]}"


@pytest.mark.parametrize("reply", [None, b"HTTP/1.0 400 Bad Request\r\n\r\n" * 4 + b"\xff" * 64],
                         ids=["silent", "garbage"])
def test_api_refuses_within_the_deadline(monkeypatch, reply):
    monkeypatch.setattr(fsweep, "DASK_CONNECT_S", 2.0)
    srv, held, addr = _listener(reply)
    try:
        t0 = time.monotonic()
        with pytest.raises(ParameterError, match="did not answer as a Dask scheduler within 2 s") as ei:
            with fsweep.dask_executor(addr):
                pass
        assert ei.value.name == "address" and time.monotonic() - t0 < 30
    finally:
        srv.close()
        for c in held:
            c.close()


def test_cli_names_the_option(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(fsweep, "DASK_CONNECT_S", 2.0)
    case = Path(__file__).resolve().parents[2] / "examples" / "sweeps" / "verdict_map.toml"
    monkeypatch.chdir(tmp_path)
    srv, held, addr = _listener(None)
    try:
        assert main(["sweep", str(case), "--dask", addr, "--no-progress"]) == 2
    finally:
        srv.close()
        for c in held:
            c.close()
    err = capsys.readouterr().err
    assert f"--dask {addr}" in err and "did not answer as a Dask scheduler" in err and "memory" not in err
