"""The claims generator and the latency example scripts convert their 2026-12 loads (fractions of ``b_max / t(b_max)``
without the KV cache, the unit ``compare_orderings`` read until 2026-12-06) into today's loads (fractions of
``fluidq.dtmc.load_basis.load_basis``) with the old arrival rates, to the last bit (h-claims18, issue 18).

The expected rates are derived here from the engine's batch time and the workload's mean tokens, independently of the
library's ``old_unit`` (:mod:`fluidq.latency.old_loads`, which the four scripts share); the loads from
``load_basis``.  Nothing is typed from a run.
"""
import importlib.util
import json
from pathlib import Path

import numpy as np
import pytest

import fluidq
from fluidq.dtmc.load_basis import load_basis
from fluidq.latency import compare_orderings, reasoning_workload
from fluidq.latency import old_loads
from fluidq.latency.families import workload_family

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = {"claims": "validation/tools/pars_uniboost_claims.py", "pars_sweep": "examples/pars_headline_sweep.py",
           "memguard_sweep": "examples/memguard_ada_sweep.py", "orderings": "examples/latency_orderings.py"}
PROF = fluidq.load_profile("paper-codellama34b-a100")


def _module(key):
    spec = importlib.util.spec_from_file_location(f"_claims18_{key}", ROOT / SCRIPTS[key])
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _old_rate(eng, w, old_load):
    """old_load x b_max / t(b_max) (the engine without its KV cache; this profile's batch time reads the batch
    size only) / mean tokens per request: the arrival rate compare_orderings made of ``old_load`` until 2026-12-06."""
    t = float(np.asarray(eng.batch_time(np.array([float(eng.b_max)])), dtype=float)[0])
    return old_load * (eng.b_max / t) / w.mean_tokens


#: (engine KV tokens, workload, old loads): every Poisson experiment of the claims page and of the two sweeps
CASES = [(200_000, "reasoning", (0.7, 0.9, 1.0, 1.2)), (30_000, "reasoning", (1.0, 1.2)), (None, "reasoning", (1.2,)),
         (200_000, "azure-conv", (0.9,)), (200_000, "azure-code", (0.9,)), (30_000, "azure-conv", (0.7, 0.9)),
         (50_000, "azure-conv", (0.3, 0.5, 0.7, 0.9)), (50_000, "reasoning", (0.3, 0.5, 0.7, 0.9))]
CASES += [(200_000, f"sigma{s}", (1.2,)) for s in (0.6, 1.2, 1.6, 2.0)] + [(30_000, "sigma1.2", (1.2,))]


def _workload(name):
    return reasoning_workload(sigma=float(name[5:])) if name.startswith("sigma") else workload_family(name)


@pytest.mark.parametrize("key", list(SCRIPTS))
def test_every_script_converts_with_the_one_library_function(key):
    """The four scripts' conversions are fluidq.latency.old_loads's (written once since 2026-12-07 evening)."""
    mod = _module(key)
    assert mod.old_loads is old_loads.old_loads and mod.load_words is old_loads.load_words


@pytest.mark.parametrize("kv, wname, olds", CASES)
def test_converted_loads_give_the_old_rates_to_the_bit(kv, wname, olds):
    mod = old_loads
    eng = PROF.engine(kv_capacity_tokens=kv) if kv else PROF.engine()
    w = _workload(wname)
    lb = load_basis(eng, w)
    for d, x in zip(mod.old_loads(eng, w, olds), olds):
        r = _old_rate(eng, w, x)
        assert d["old_load"] == x and d["basis"] == lb.basis and d["basis_req_s"] == lb.requests_per_s
        assert d["rate_req_s"] == pytest.approx(r, rel=1e-14)
        assert d["load"] * lb.requests_per_s == d["rate_req_s"]       # what compare_orderings makes of the load
        words = mod.load_words(d)
        assert f"{d['load']:.4g}" in words and f"{lb.requests_per_s:.4g} req/s" in words and f"{r:.4g} req/s" in words


def test_the_headline_loads_are_above_2_and_run_at_the_old_rate():
    """The 15.7x rows' old load 1.2 is 2.304 (200,000 KV tokens) and 6.832 (30,000) of today's basis: loads the cap
    of 2 refused; they run now, at the old arrival rate exactly."""
    mod = _module("claims")
    w = workload_family("reasoning")
    for kv in (200_000, 30_000):
        eng = PROF.engine(kv_capacity_tokens=kv)
        d = mod.old_loads(eng, w, (1.2,))[0]
        assert d["load"] > 2 and d["basis"] == "kv_rules"
        res = compare_orderings(eng, w, ["fcfs"], loads=(d["load"],), horizon_s=4.0, n_replications=1, rng=2,
                                drain=True)
        assert res.rates_per_s[0] == d["rate_req_s"] == 1.2 * old_loads.old_unit(eng, w)
        assert res.values["fcfs"]["finished_fraction"][0][0] == 1.0


def test_the_committed_claims_json_states_the_old_rates():
    """docs/latency/claims.json's load conversions (written by the generator) give the old rates of the settings the
    generator names, on today's basis."""
    mod = _module("claims")
    R = json.loads((ROOT / "docs/latency/claims.json").read_text())
    if "load_conversion" not in R["poisson"]:
        pytest.skip("claims.json predates the load conversion")
    rw = workload_family("reasoning")
    checks = [(PROF.engine(kv_capacity_tokens=200_000), rw, R["poisson"]["load_conversion"], mod.OLD_POISSON_LOADS),
              (PROF.engine(kv_capacity_tokens=30_000), rw, R["poisson_kv30k"]["load_conversion"],
               mod.OLD_POISSON_LOADS[-2:]),
              (PROF.engine(), rw, [R["poisson_kv_off_load"]], mod.OLD_POISSON_LOADS[-1:])]
    checks += [(PROF.engine(kv_capacity_tokens=200_000), workload_family(f), [d["load"]], (mod.OLD_UNIBOOST_LOAD,))
               for f, d in R["uniboost"].items()]
    checks += [(PROF.engine(kv_capacity_tokens=int(kv)), rw, [d["load"]], mod.OLD_POISSON_LOADS[-1:])
               for kv, d in R.get("poisson_window_sweep", {}).items()]
    for eng, w, conv, olds in checks:
        lb = load_basis(eng, w)
        assert [d["old_load"] for d in conv] == list(olds)
        for d in conv:
            assert d["rate_req_s"] == pytest.approx(_old_rate(eng, w, d["old_load"]), rel=1e-14)
            assert d["basis_req_s"] == pytest.approx(lb.requests_per_s, rel=1e-12), "regenerate the claims page"
            assert d["load"] * d["basis_req_s"] == d["rate_req_s"]
    # the page's Poisson table at the highest load names that rate
    assert f"({R['poisson']['load_conversion'][-1]['rate_req_s']:.4g} req/s)" in R["poisson"]["table_last"]
