"""A bad Dask scheduler address is one line naming --dask (no traceback), and the API names ``address``."""
from __future__ import annotations

import pytest

pytest.importorskip("distributed")

from fluidq.cli import main
from fluidq.errors import ParameterError
from fluidq.sweep import dask_executor


def test_unparsable_address_names_the_option(capsys, tmp_path, monkeypatch):
    from pathlib import Path

    case = Path(__file__).resolve().parents[2] / "examples" / "sweeps" / "verdict_map.toml"
    monkeypatch.chdir(tmp_path)  # (a store the case names would go here)
    assert main(["sweep", str(case), "--dask", "notanaddr"]) == 2
    err = capsys.readouterr().err
    assert "--dask notanaddr" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


def test_api_names_the_address():
    with pytest.raises(ParameterError, match="address"), dask_executor("notanaddr"):
        pass


def test_store_in_a_missing_folder_is_refused(capsys, tmp_path):
    from pathlib import Path

    case = Path(__file__).resolve().parents[2] / "examples" / "sweeps" / "verdict_map.toml"
    assert main(["sweep", str(case), "--store", str(tmp_path / "no" / "x.jsonl"), "--serial"]) == 2
    assert "existing folder" in capsys.readouterr().err and not (tmp_path / "no").exists()
