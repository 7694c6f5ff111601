"""A network station's load at its mix is ``fluidq check``'s load for the same engine, lengths and rate (h-user6b).

Before, ``fluidq network`` printed only the mean-footprint basis of fluidq.capacity.network.mix_capacity (b/t(b) at
the batch the mean footprints allow): a roofline Llama-3.1-8B on an A10G at 1500 + 100 tokens and 2.073 req/s read
load 0.7430 there where ``fluidq check`` says 1.023 under the KV cache's rules.  The engines here are built in the
test (an affine batch time with a context term and a KV cache that binds), not shipped cases."""
import json

import numpy as np
import pytest

from fluidq import Engine, Poisson, Workload
from fluidq.batchtime import Affine, ContextAware
from fluidq.dtmc.load_basis import load_basis
from fluidq.dtmc.station_basis import MIX_ROWS, mix_workload, station_load_bases
from fluidq.network import Hop
from fluidq.testing.cli import run_cli
from fluidq.workload import Empirical
from fluidq.workload.traces import Trace

#: c = 20 ms, a = 0.2 ms/token, 100 ns per KV token read, a cache of 30,000 tokens: at 600 + 200 tokens it binds
ENGINE = {"batch_time": {"kind": "affine", "c": 0.02, "a": 0.0002}, "b_max": 1024, "kv_capacity_tokens": 30000}


def _engine():
    return Engine(batch_time=Affine(c=0.02, a=2e-4), b_max=1024, kv_capacity_tokens=30_000)


def _case(tmp_path, rate, hops):
    route = ", ".join(f'{{ engine = "kv", prompt = {p}, output = {o}, name = "h{i}" }}' for i, (p, o) in enumerate(hops))
    text = f'''name = "kv-station"
[engines.kv]
batch_time = {{ kind = "affine", c = 0.02, a = 0.0002 }}
b_max = 1024
kv_capacity_tokens = 30000
[[classes]]
name = "task"
rate_per_s = {rate!r}
route = [{route}]
'''
    path = tmp_path / "case.toml"
    path.write_text(text)
    return str(path)


def _workload(p, o):
    return Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=p, output_tokens=o)


def test_one_hop_station_load_is_checks(tmp_path, capsys):
    """Fails before (the JSON station load was the mean-footprint 0.80 where check's basis gives 0.95).  One hop is
    the workload itself, so the load is check's up to round-off (rel 1e-12)."""
    lam = load_basis(_engine(), _workload(600, 200))
    assert lam.basis == "kv_rules"
    rate = 0.95 * lam.requests_per_s
    rc, out, err = run_cli(["network", _case(tmp_path, rate, [(600, 200)]), "--json"], capsys)
    assert rc in (0, None), err
    st = json.loads(out)["mix_basis"]["stations"]["kv"]
    assert st["load_basis"] == "kv_rules"
    assert st["load"] == pytest.approx(rate / lam.requests_per_s, rel=1e-12)
    assert st["mean_footprint_load"] < 0.9 * st["load"]  # the mean footprints said less (the old figure)
    rc, out, err = run_cli(["check", "--model", "affine", "--c-ms", "20", "--a-ms", "0.2", "--b-max", "1024",
                            "--kv-capacity", "30000", "--prompt", "600", "--output", "200", "--rate", repr(rate),
                            "--policy", "sarathi", "--method", "analytic", "--json"], capsys)
    chk = json.loads(out)
    assert chk["inputs"]["kv_rules_requests_per_s"] == pytest.approx(lam.requests_per_s, rel=1e-12)
    assert chk["load"] == pytest.approx(st["load"], rel=1e-9)  # check's load at the station's rate
    rc, out, _ = run_cli(["network", _case(tmp_path, rate, [(600, 200)])], capsys)
    assert "kv load 0.9500 (" in out
    assert "req/s, the capacity under the KV cache's rules, whole-prompt admission and recompute preemptions)" in out


def test_a_mix_of_hops_is_the_basis_of_its_rows(tmp_path):
    """Two fixed hops at visit rates 1 : 3 on one station: the basis of a trace holding the pairs in that ratio
    (MIX_ROWS is divisible by 4, so the rows' shares are exact; rel 1e-9 for the sums' order)."""
    from fluidq.network.toml import load_network

    net = load_network(_case(tmp_path, 0.4, [(600, 200), (300, 100), (300, 100), (300, 100)]))
    got = station_load_bases(net)["kv"]
    rows = [(600, 200), (300, 100), (300, 100), (300, 100)]
    p = np.array([r[0] for r in rows], dtype=np.int64)
    o = np.array([r[1] for r in rows], dtype=np.int64)
    w = Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=Empirical(values=tuple(p)),
                 output_tokens=Empirical(values=tuple(o)),
                 trace=Trace(arrival_s=np.arange(4.0), prompt_tokens=p, output_tokens=o, source="rows"))
    ref = load_basis(_engine(), w)
    assert got["load_basis"] == ref.basis == "kv_rules"
    assert got["rate_per_s"] == pytest.approx(1.6, rel=1e-12)
    assert got["load"] == pytest.approx(1.6 / ref.requests_per_s, rel=1e-9)
    assert MIX_ROWS % 4 == 0


def test_mix_workload_shares_follow_the_visit_rates():
    mix = [(1.0, Hop(engine="E", prompt_tokens=100, output_tokens=10)),
           (2.0, Hop(engine="E", prompt_tokens=200, output_tokens=20))]
    w = mix_workload(mix)
    assert len(w.trace) == MIX_ROWS
    assert abs(np.mean(w.trace.prompt_tokens == 100) - 1 / 3) <= 1 / (2 * MIX_ROWS)


def test_a_prompt_only_hop_on_a_kv_station(tmp_path, capsys):
    """Fails before: ``fluidq network`` stopped with "internal error: NotImplementedError" on a KV station serving a
    prompt-only hop (output = 0: NoTokens had no mean_square, which mix_capacity reads).  Now the mean-footprint
    figure is given and the load basis says why it reads no such mix."""
    path = tmp_path / "p0.toml"
    path.write_text('''name = "p0"
[engines.kv]
batch_time = { kind = "affine", c = 0.02, a = 0.0002 }
b_max = 1024
kv_capacity_tokens = 30000
[[classes]]
name = "t"
rate_per_s = 1.0
route = [ { engine = "kv", prompt = 600, output = 0 }, { engine = "kv", prompt = 300, output = 100 } ]
''')
    rc, out, err = run_cli(["network", str(path)], capsys)
    assert rc in (0, None), err
    assert "kv (no load basis: a prompt-only hop (no output tokens) in its mix" in out
    # the mean footprints: the prompt-only hop holds no decode context, so the mix's is the other hop's
    assert "at the mean footprints" in out
