from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "validation" / "data"


@pytest.fixture(scope="session")
def data_dir():
    if not (DATA / "llmservingsim").is_dir():
        pytest.skip("validation/data is not present (not a source checkout)")
    return DATA


@pytest.fixture(scope="session")
def fast_validation(tmp_path_factory):
    """The fast subset, run once for all tests that read its rows."""
    import fluidq

    out = tmp_path_factory.mktemp("validation")
    return fluidq.validate(out, fast=True)
