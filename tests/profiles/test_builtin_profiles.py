"""Built-in deployment profiles: fitted ones present, with provenance and fit errors."""
import json
from importlib import resources

import numpy as np
import pytest

import fluidq
from fluidq.batchtime import ContextAware
from fluidq.errors import UnknownNameError
from fluidq.profiles import DEFAULT_PROFILE, Profile, list_profiles, load_profile

EXPECTED = {"vidur-llama2-7b-a100", "vidur-llama2-7b-h100", "vidur-codellama34b-a100", "vidur-llama2-7b-a40",
            "vidur-llama2-70b-h100-tp4",
            "llmservingsim-llama3.1-8b-rtx4090", "llmservingsim-llama3.1-8b-rtxpro6000",
            "splitwise-llama2-70b-a100-tp8", "splitwise-llama2-70b-h100-tp8"}


def fitted():
    return [p for p in list_profiles() if p.name != DEFAULT_PROFILE]


def test_paper_profile_first_and_fitted_ones_present():
    profs = list_profiles()
    assert profs[0].name == DEFAULT_PROFILE
    assert EXPECTED <= {p.name for p in profs}


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_fitted_profile_has_provenance_and_fit_error(name):
    p = load_profile(name)
    assert isinstance(p, Profile)
    for field in ("model", "gpu", "source", "license", "description"):
        assert getattr(p, field), field
    assert "@" in p.source and p.license in ("MIT", "Apache-2.0")
    f = p.fit
    assert 0 < f["mape_heldout"] < 0.25 and 0 < f["r2"] <= 1 and f["n_points"] >= 100
    assert f["mape_heldout"] == pytest.approx(min(f["candidates"].values()), abs=1e-6)
    r = fluidq.max_throughput(p.engine())
    assert np.isfinite(r.tokens_per_s) and r.tokens_per_s > 0 and 1 <= r.batch_tokens <= p.b_max


def test_llmservingsim_profiles_carry_the_run_limits():
    a = load_profile("llmservingsim-llama3.1-8b-rtx4090")
    b = load_profile("llmservingsim-llama3.1-8b-rtxpro6000")
    assert (a.b_max, a.k_max, a.kv_capacity_tokens) == (2048, 256, 41408)
    assert (b.b_max, b.k_max) == (2048, 128)
    assert isinstance(a.batch_time, ContextAware) and a.batch_time.kv_s_per_token > 0
    # attention cost lowers the capacity at a workload's context
    w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=1.0), prompt_tokens=1000, output_tokens=300)
    assert fluidq.max_throughput(a.engine(), w).tokens_per_s < fluidq.max_throughput(a.engine()).tokens_per_s


def test_vidur_codellama_refit_is_close_to_the_paper():
    p = load_profile("vidur-codellama34b-a100")
    paper = load_profile(DEFAULT_PROFILE)
    assert p.batch_time.b0 == 128
    assert p.batch_time(512) == pytest.approx(paper.batch_time(512), rel=0.10)


def test_fitted_json_round_trips():
    raw = json.loads(resources.files("fluidq.profiles").joinpath("fitted.json").read_text())
    fields = set(Profile.__dataclass_fields__)
    for d in raw:
        assert set(d) <= fields
        assert load_profile(d["name"]).to_dict()["batch_time"] == d["batch_time"]


def test_unknown_profile_and_engine_overrides():
    with pytest.raises(UnknownNameError, match="nope"):
        load_profile("nope")
    e = load_profile("vidur-llama2-7b-h100").engine(b_max=512, k_max=64)
    assert e.b_max == 512 and e.k_max == 64


def test_build_refuses_a_folder_without_data(tmp_path, capsys):
    from fluidq.profiles.build import main

    assert main(["--data", str(tmp_path), "--out", str(tmp_path / "x.json")]) == 2
    assert "measured" in capsys.readouterr().err
    assert not (tmp_path / "x.json").exists()


def test_profiles_help_has_a_description(capsys):
    import pytest

    from fluidq.cli import main

    with pytest.raises(SystemExit) as ex:
        main(["profiles", "--help"])
    assert ex.value.code == 0
    out = capsys.readouterr().out
    body = out.split("positional arguments")[0]
    assert "batch-time model" in body and "show NAME" in " ".join(body.split())
    assert "list the profiles" in out
