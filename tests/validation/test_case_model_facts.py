"""Validation cases take a model's layer count from its facts, not from a number written by hand
(issue 16): ``facts = "Llama-2-70B"`` gives 80 layers; a contradicting n_layers is refused."""
import pytest

from fluidq.batchtime.loaders import _layers_for
from fluidq.errors import FluidqError
from fluidq.validate import validation_dir
from fluidq.validate.cases import _n_layers, load_cases


def test_layers_come_from_the_facts():
    assert _n_layers("c", {"facts": "Llama-2-70B"}) == 80
    assert _n_layers("c", {"facts": "llama-3.1-8b"}) == 32
    assert _n_layers("c", {"n_layers": 7}) == 7  # a model the table does not hold
    with pytest.raises(FluidqError, match="n_layers = 40 but Llama-2-70B has 80"):
        _n_layers("c", {"facts": "Llama-2-70B", "n_layers": 40})
    with pytest.raises(FluidqError, match="facts"):
        _n_layers("c", {})
    with pytest.raises(FluidqError, match="unknown model 'no-such-model'; known: .*Llama-2-70B"):
        _n_layers("c", {"facts": "no-such-model"})


def test_hugging_face_ids_find_their_facts():
    assert _layers_for("meta-llama/Llama-3.1-8B") == 32
    assert _layers_for("meta-llama/Llama-2-70b-hf") == 80
    assert _layers_for("codellama/CodeLlama-34b-Instruct-hf") == 48
    assert _layers_for("acme/unknown-model") is None


def test_no_shipped_case_writes_a_layer_count_by_hand():
    for c in load_cases(validation_dir() / "cases"):
        assert "n_layers" not in c.spec, c.name
        for prof in c.spec.get("profiles", []):
            assert "n_layers" not in prof, (c.name, prof.get("label"))


def test_the_measured_binding_limit_never_reads_the_case_file(monkeypatch):
    # issue 16: the "measured" binding limit fell back to the case file's expected answer when neither
    # max_num_seqs nor the KV cache was full; such a run now reads "token_budget" whatever the case says
    from dataclasses import replace

    import fluidq.validate.runs as runs
    from fluidq.validate.cases import _serving_run

    import numpy as np

    real = runs.read_run

    def neither_full(path):  # the measurements of a run where neither max_num_seqs nor the KV cache is full
        r = real(path)
        ts = {**r.timeseries, "running": np.minimum(r.timeseries["running"], 10.0),
              "kv_cache_pct": np.minimum(r.timeseries["kv_cache_pct"], 50.0)}
        return replace(r, timeseries=ts)

    monkeypatch.setattr(runs, "read_run", neither_full)
    case = next(c for c in load_cases(validation_dir() / "cases") if c.name == "rtx4090-llama3.1-8b")
    for expected in ("k_max", "kv_cache"):
        wrong = replace(case, spec={**case.spec, "targets": {**case.spec.get("targets", {}), "binding": expected}})
        res = _serving_run(wrong, validation_dir() / "data", {"fast_replay_skip": True})
        row = next(r for r in res.rows if r.quantity == "binding limit")
        assert row.measured == "token_budget", (expected, row)
    for c in load_cases(validation_dir() / "cases"):
        assert "binding" not in c.spec.get("targets", {}), c.name


def test_interval_words_state_inside_outside_and_resolution():
    from fluidq.validate.cases import _interval_words

    # a prediction inside an interval wider than the aim: the window cannot resolve the aim
    w = _interval_words(8124.0, (6548.0, 8429.0), 7488.0, 5.0)
    assert "inside" in w and "±12.6 %" in w and "too wide to resolve the 5 % aim" in w
    w = _interval_words(9000.0, (7400.0, 7600.0), 7500.0, 5.0)
    assert "outside" in w and "±1.3 %" in w and "resolve" not in w
    # outside a wide interval: the error is resolved (at least the distance to it), no "too wide"
    w = _interval_words(8842.0, (6548.0, 8429.0), 7488.0, 5.0)
    assert "outside" in w and "±12.6 %" in w and "resolve" not in w
    # no interval (one tick) or no prediction: nothing claimed
    assert _interval_words(1.0, (float("nan"), float("nan")), 1.0, 5.0) == ""
    assert _interval_words(None, (1.0, 2.0), 1.5, 5.0) == ""
