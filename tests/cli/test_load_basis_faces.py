"""One load basis behind every face (issues 16, 20; h-basis1): ``fluidq check --load``, ``fluidq simulate --load``
(and its fluid prediction line), ``fluidq latency --loads``, a sweep's ``load`` and ``check_stability``'s capacity
where the KV cache binds all read :func:`fluidq.dtmc.load_basis.load_basis`, so load 0.9 is one arrival rate.

Before, on a KV-bound engine (Qwen2.5-7B on an L4 at 1000 + 200 tokens), ``check --load 0.9`` offered 2.117 req/s
(0.9 of the capacity under the KV cache's rules) while ``latency --loads 0.9`` offered 0.9 of b_max/t(b_max)
without the cache and a sweep point at load 0.9 offered 0.9 of ``max_throughput`` (3.004 req/s, which seeded
replications find growing: tests/cli/test_kv_load_basis.py)."""
import json

import pytest

from fluidq.dtmc.load_basis import load_basis
from fluidq.testing.cli import run_cli

from kv_bound_case import QWEN_L4  # tests/cli/kv_bound_case.py: Qwen2.5-7B on an L4 at 1000 + 200 tokens


def _shape(p, d):
    from fluidq import Poisson, Workload

    return Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=p, output_tokens=d)


def _check(flags, capsys, load=0.9):
    rc, out, err = run_cli(["check", *flags, "--load", str(load), "--policy", "sarathi", "--method", "analytic",
                            "--json"], capsys)
    assert rc == 0, err
    return json.loads(out)


def _simulate(flags, capsys, load=0.9):
    rc, out, err = run_cli(["simulate", *flags, "--load", str(load), "--policy", "sarathi", "--horizon", "2",
                            "--no-progress", "--json"], capsys)
    assert rc == 0, err
    return json.loads(out)


def _latency(flags, capsys, load=0.9):
    rc, out, err = run_cli(["latency", *flags, "--loads", str(load), "--orderings", "fcfs", "--horizon", "2",
                            "--replications", "1", "--json"], capsys)
    assert rc == 0, err
    return json.loads(out)


def _sweep(point, load=0.9):
    from fluidq.sweep.analyses import check

    return check({**point, "load": load})


def test_latency_and_a_sweep_point_at_load_0_9_offer_checks_rate_on_a_kv_bound_engine(capsys):
    """Fails before h-basis1: latency's rate was 0.9 of b_max/t(b_max) without the cache and the sweep's 0.9 of
    max_throughput, both above what the engine serves under its cache's rules."""
    from fluidq.capacity import max_throughput
    from fluidq.engine.roofline import roofline_engine

    chk = _check(QWEN_L4, capsys)
    rate = chk["inputs"]["arrival_rate_per_s"]
    lat = _latency(QWEN_L4, capsys)
    sw = _sweep({"gpu": "L4", "model": "Qwen2.5-7B", "prompt_tokens": 1000, "output_tokens": 200})
    assert lat["rates_per_s"][0] == pytest.approx(rate, rel=1e-12)
    assert sw["arrival_rate_per_s"] == pytest.approx(rate, rel=1e-12)
    assert chk["inputs"]["load_basis"] == lat["inputs"]["load_basis"] == sw["load_basis"] == "kv_rules"
    old = max_throughput(roofline_engine("Qwen2.5-7B", "L4"), _shape(1000, 200)).requests_per_s
    assert 0.9 * old > 1.3 * rate  # what the sweep offered before: 3.004 against 2.117 req/s


#: engines of the command line: (name, flags, sweep point or None, the basis expected)
GRID = [
    ("roofline Qwen2.5-7B L4 1000/200", QWEN_L4,
     {"gpu": "L4", "model": "Qwen2.5-7B", "prompt_tokens": 1000, "output_tokens": 200}, "kv_rules"),
    ("affine 600/200 kv30k", ["--model", "affine", "--c-ms", "20", "--a-ms", "0.2", "--b-max", "1024",
                              "--kv-capacity", "30000", "--prompt", "600", "--output", "200"], None, "kv_rules"),
    ("paper staircase 600/200 kv30k", ["--prompt", "600", "--output", "200", "--kv-capacity", "30000"], None,
     "kv_rules"),
    ("roofline Llama-3.1-8B H100 100/100", ["--gpu", "H100", "--model", "Llama-3.1-8B", "--prompt", "100",
                                            "--output", "100"],
     # (max_num_seqs binds, the cache does not: the flow balance under the cache's rules, h-basis; max_throughput before)
     {"gpu": "H100", "model": "Llama-3.1-8B", "prompt_tokens": 100, "output_tokens": 100}, "kv_rules"),
    ("paper staircase 100/100, no cache", ["--prompt", "100", "--output", "100"],
     {"prompt_tokens": 100, "output_tokens": 100}, "max_throughput"),
]


@pytest.mark.parametrize("name,flags,point,basis", GRID, ids=[g[0] for g in GRID])
def test_the_faces_agree_on_a_grid_of_engines(name, flags, point, basis, capsys):
    chk = _check(flags, capsys)
    rate, tokens = chk["inputs"]["arrival_rate_per_s"], chk["inputs"]["load_basis_tokens_per_s"]
    assert chk["inputs"]["load_basis"] == basis
    assert rate == pytest.approx(0.9 * chk["inputs"]["load_basis_requests_per_s"], rel=1e-12)
    sim = _simulate(flags, capsys)
    assert sim["load_basis"] == basis and sim["workload"]["arrival"]["rate_per_s"] == pytest.approx(rate, rel=1e-12)
    assert sim["capacity_tokens_per_s"] == pytest.approx(tokens, rel=1e-12)
    if basis != "max_throughput":  # the fluid line reads the load basis where Theorem 2 is not read
        assert sim["fluid_capacity_tokens_per_s"] == pytest.approx(tokens, rel=1e-12)
    lat = _latency(flags, capsys)
    assert lat["inputs"]["load_basis"] == basis and lat["rates_per_s"][0] == pytest.approx(rate, rel=1e-12)
    if point is not None:
        sw = _sweep(point)
        assert sw["load_basis"] == basis and sw["arrival_rate_per_s"] == pytest.approx(rate, rel=1e-12)
    # check_stability's own load where the KV cache binds is read against the same capacity (the verdict's
    # capacity in batch work), and its JSON says so
    if basis == "kv_rules":
        assert chk["capacity_tokens_per_s"] == pytest.approx(tokens, rel=1e-12)
        assert chk["load"] == pytest.approx(0.9, rel=1e-9)


def test_a_composition_engine_agrees_on_every_face(tmp_path, capsys):
    """An operator-profile engine (``--profile-dir``): its basis is vLLM's flow balance on every face, and
    ``simulate --load`` reads the same seeded length rows as ``check --load`` (before, it read the means through
    ``fluidq capacity --profile-dir``'s path: for geometric lengths a different number)."""
    from flow_profile import META, write_profile  # tests/stability/flow_profile.py (on sys.path: tests/conftest.py)

    if not META.is_dir():
        pytest.skip(f"{META} is not shipped here")
    folder = write_profile(tmp_path / "profile")
    flags = ["--profile-dir", str(folder), "--kv-capacity", "2000000", "--prompt", "100", "--output", "100",
             "--geometric"]
    chk = _check(flags, capsys)
    rate = chk["inputs"]["arrival_rate_per_s"]
    assert chk["inputs"]["load_basis"] == "flow_balance"
    sim = _simulate(flags, capsys)
    assert sim["load_basis"] == "flow_balance"
    assert sim["workload"]["arrival"]["rate_per_s"] == pytest.approx(rate, rel=1e-12)
    assert sim["fluid_capacity_tokens_per_s"] == pytest.approx(chk["inputs"]["load_basis_tokens_per_s"], rel=1e-12)
    # latency has no --profile-dir: its library face on the same engine and lengths
    from fluidq.latency import _load_rates
    from fluidq.validate.deployment import deployment_engine
    from fluidq.workload import Geometric, Poisson, Workload

    engine = deployment_engine(folder, kv_capacity_tokens=2_000_000)[0]
    w = Workload(arrival=Poisson(rate_per_s=1.0), prompt_tokens=Geometric(mean_tokens=100.0),
                 output_tokens=Geometric(mean_tokens=100.0))
    lb = load_basis(engine, w)
    assert lb.basis == "flow_balance" and lb.requests_per_s == pytest.approx(rate / 0.9, rel=1e-9)
    assert _load_rates(engine, w, (0.9,))[2][0] == pytest.approx(rate, rel=1e-9)


def test_the_basis_names_and_bad_input():
    from fluidq import Affine, Engine
    from fluidq.errors import ParameterError

    e = Engine(batch_time=Affine(c=0.02, a=2e-4), b_max=1024, kv_capacity_tokens=30_000)
    w = _shape(600, 200)
    kv = load_basis(e, w)
    assert kv.basis == "kv_rules" and kv.to_dict()["load_basis"] == "kv_rules"
    assert kv.rate(0.9) == pytest.approx(0.9 * kv.requests_per_s)
    # swap preemption keeps max_throughput (the KV rules' capacity counts recomputation), as simulate does
    assert load_basis(e, w, preemption="swap").basis == "max_throughput"
    assert load_basis(e.with_(kv_capacity_tokens=None), w).basis == "max_throughput"
    assert load_basis(e, w, n_engines=3).requests_per_s == pytest.approx(3 * kv.requests_per_s, rel=1e-12)
    for bad, name in ((dict(engine=None, workload=w), "engine"), (dict(engine=e, workload=None), "workload"),
                      (dict(engine=e, workload=w, preemption="drop"), "preemption")):
        with pytest.raises(ParameterError) as ei:
            load_basis(**bad)
        assert ei.value.name == name
