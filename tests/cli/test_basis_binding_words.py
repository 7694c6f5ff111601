"""The words of the ``kv_rules`` load basis say which limit binds (h-words).

Since h-basis the load basis (:func:`fluidq.dtmc.load_basis.load_basis`) is ``"kv_rules"`` on every engine with a KV
cache unless the token budget binds, with ``capacity.binding`` ``"kv_cache"`` (the cache binds for some share of the
residents' life) or ``"k_max"`` (max_num_seqs binds: its residents fit the cache at their full contexts, no
preemptions).  ``fluidq capacity``'s region and load basis lines, ``fluidq check``'s load line and the report's
reference capacity said "the KV cache binds" (and quoted the KV-bound engines' band, and called max_throughput the
batch of mean footprints) for both: false where max_num_seqs binds (``fluidq capacity --gpu H100-SXM5-80GB --model
Llama-3.1-8B``, plain).  Here each face is run on engines in each regime -- roofline (``--gpu``) engines and affine /
staircase engines built from flags, with caches on both sides of ``k_max (p + o)`` (where the full contexts of
max_num_seqs' residents fit) -- and the regime is checked from that arithmetic, not from the code under test; the
text must say the limit its JSON's ``load_basis_binding`` names, and quote the band measured for that case.
"""
import json

import pytest

from fluidq.stability.measured import SATURATION_PER_BASIS, SATURATION_WHERE_K_MAX_BINDS
from fluidq.testing.cli import run_cli

KV_WORDS = "the KV cache binds"
K_MAX_WORDS = "max_num_seqs binds"
PART_WORDS = "the KV cache binds for part of its residents' life"


def _stair(kv):
    """A staircase engine (k_max 32) at 1000 + 200 tokens with a cache of ``kv`` tokens: 32 x 1,100 = 35,200 mean
    footprints, 32 x 1,200 = 38,400 full contexts."""
    return ["--model", "staircase", "--c-ms", "10", "--a-ms", "0.05", "--b0", "128", "--b-max", "2048", "--k-max", "32",
            "--kv-capacity", str(kv), "--prompt", "1000", "--output", "200"]


#: (flags, k_max, prompt, output, kv tokens or None for the --gpu planner's, regime); regime "k_max": the cache holds
#: k_max residents at their full contexts; "kv_cache": it does not hold them at their mean footprints either;
#: "part": it holds them at their mean footprints, not at their full contexts
CASES = {
    "gpu-llama8b-h100": (["--gpu", "H100-SXM5-80GB", "--model", "Llama-3.1-8B"], 256, 100, 100, None, "k_max"),
    "gpu-llama8b-h100-k64-long": (["--gpu", "H100-SXM5-80GB", "--model", "Llama-3.1-8B", "--k-max", "64",
                                   "--prompt", "1000", "--output", "500"], 64, 1000, 500, None, "k_max"),
    "gpu-qwen7b-l4": (["--gpu", "L4", "--model", "Qwen2.5-7B", "--prompt", "1000", "--output", "200"], 256, 1000, 200,
                      None, "kv_cache"),
    "stair-kv20000": (_stair(20000), 32, 1000, 200, 20000, "kv_cache"),
    "stair-kv37000": (_stair(37000), 32, 1000, 200, 37000, "part"),
    "stair-kv60000": (_stair(60000), 32, 1000, 200, 60000, "k_max"),
    "affine-kv400000": (["--model", "affine", "--c-ms", "20", "--a-ms", "0.2", "--b-max", "1024", "--k-max", "64",
                         "--kv-capacity", "400000", "--prompt", "600", "--output", "200"], 64, 600, 200, 400000,
                        "k_max"),
}


def _regime(k_max, p, o, kv):
    """The regime from the arithmetic of the cache and max_num_seqs' residents (the code under test not read)."""
    if kv >= k_max * (p + o):
        return "k_max"
    return "part" if kv >= k_max * (p + o / 2) else "kv_cache"


def _lines(out):
    return {ln[:16].strip(): ln[16:] for ln in out.splitlines()}


def _capacity(flags, capsys):
    rc, out, _ = run_cli(["capacity", *flags], capsys)
    assert rc == 0, out
    rc, js, _ = run_cli(["capacity", *flags, "--json"], capsys)
    assert rc == 0, js
    return out, json.loads(js)


@pytest.mark.parametrize("name", sorted(CASES))
def test_capacity_says_the_limit_that_binds(name, capsys):
    flags, k_max, p, o, kv, regime = CASES[name]
    out, d = _capacity(flags, capsys)
    kv = d["inputs"]["kv_capacity_tokens"] if kv is None else kv
    assert _regime(k_max, p, o, kv) == regime  # the case is what its name says
    lines = _lines(out)
    basis = lines["load basis"]
    region = lines.get("region")  # (--gpu only)
    assert d["load_basis"] == "kv_rules"
    if regime == "k_max":
        assert d["load_basis_binding"] == "k_max"
        kvk, mtk = SATURATION_WHERE_K_MAX_BINDS["kv_rules"], SATURATION_WHERE_K_MAX_BINDS["max_throughput"]
        assert K_MAX_WORDS in basis and kvk.within_words() in basis and mtk.errors_words() in basis, basis
        assert KV_WORDS not in out and "KV-bound engines" not in out and "mean footprints" not in out, out
        assert "bound over every scheduler" in (region or basis)
        if region is not None:
            assert K_MAX_WORDS in region and "beneath the roofline's knee" in region, region
            assert kvk.within_words() in region and "takes the batch" not in region, region
    elif regime == "part":
        assert d["load_basis_binding"] == "kv_cache"
        assert PART_WORDS in basis and "bound over every scheduler" in basis and K_MAX_WORDS not in out, basis
        assert "takes the batch" not in out and SATURATION_PER_BASIS["kv_rules"].saturate_words() in basis
    else:  # the KV cache binds at the mean footprints: the words as they were
        assert d["load_basis_binding"] == "kv_cache"
        said = region if region is not None else basis
        assert KV_WORDS in said and PART_WORDS not in out and K_MAX_WORDS not in out, said
        assert SATURATION_PER_BASIS["max_throughput"].above_words() in basis, basis
    # text and JSON agree: the JSON's binding is the one the words name
    assert (K_MAX_WORDS in basis) == (d["load_basis_binding"] == "k_max")
    assert d["load_basis_reason"].startswith("max_num_seqs binds" if regime == "k_max" else "the KV cache binds")


def test_the_brief_s_repro_long_prompts_k_max(capsys):
    """Llama-3.1-8B on an H100 at 1000 + 500, max_num_seqs 64 (h-basis' finding): the region line's figure, the
    stability region's bound over every scheduler, lies above the load basis that check --load reads (10.83 against
    9.44 req/s there; seeded simulation 9.30), and the region line says why, not "the KV cache binds"."""
    out, d = _capacity(CASES["gpu-llama8b-h100-k64-long"][0], capsys)
    reg = d["stability_region"]["requests_per_s"]
    assert reg > 1.1 * d["load_basis_requests_per_s"]
    assert d["stability_region"]["kv_rules_requests_per_s"] == d["load_basis_requests_per_s"]
    region = _lines(out)["region"]
    assert "one that prefills in small chunks" in region and "vLLM's chunked prefill" in region


@pytest.mark.parametrize("name", ["gpu-llama8b-h100", "gpu-qwen7b-l4", "stair-kv20000", "stair-kv37000",
                                  "stair-kv60000"])
@pytest.mark.parametrize("how", [["--load", "0.9"], ["--rate", "1.5"]])
def test_check_load_line_says_the_limit_that_binds(name, how, capsys):
    flags, k_max, p, o, kv, regime = CASES[name]
    argv = ["check", *flags, *how, "--method", "analytic", "--policy", "sarathi"]
    rc, out, _ = run_cli(argv, capsys)
    assert rc == 0, out
    (line,) = [ln for ln in out.splitlines() if ln.startswith("arrival rate")]
    rc, js, _ = run_cli([*argv, "--json"], capsys)
    assert rc == 0, js
    inputs = json.loads(js)["inputs"]
    binding = "kv_cache" if regime != "k_max" else "k_max"
    assert inputs["load_basis_binding"] == binding
    if how[0] == "--load":
        assert inputs["load_basis"] == "kv_rules"
    if regime == "k_max":
        assert K_MAX_WORDS in line and SATURATION_WHERE_K_MAX_BINDS["kv_rules"].within_words() in line, line
        assert "mean-footprint" not in line and "the batch the KV cache allows" not in line, line
        assert "bound over every scheduler" in line, line
    elif regime == "part":
        assert PART_WORDS in line and "bound over every scheduler" in line and "mean-footprint" not in line, line
    else:  # as before
        assert "max_throughput's mean-footprint estimate, b/t(b) at the batch the KV cache allows" in line, line
        assert K_MAX_WORDS not in line, line
    assert (K_MAX_WORDS in line) == (inputs["load_basis_binding"] == "k_max")


def _report_case(regime):
    import fluidq
    from fluidq.engine.roofline import roofline_engine

    if regime == "gpu-k_max":
        return roofline_engine("Llama-3.1-8B", "H100-SXM5-80GB"), 100, 100
    if regime == "gpu-kv_cache":
        return roofline_engine("Qwen2.5-7B", "L4"), 1000, 200
    kv = {"stair-kv_cache": 20000, "stair-part": 37000, "stair-k_max": 60000}[regime]
    e = fluidq.Engine(batch_time=fluidq.Staircase(c=0.010, a=0.00005, b0=128), b_max=2048, k_max=32,
                      kv_capacity_tokens=kv)
    return e, 1000, 200


@pytest.mark.parametrize("regime", ["gpu-k_max", "gpu-kv_cache", "stair-kv_cache", "stair-part", "stair-k_max"])
def test_report_reference_says_the_limit_that_binds(regime):
    import fluidq
    from fluidq.report.reference import reference

    engine, p, o = _report_case(regime)
    w = fluidq.Workload(arrival=fluidq.Poisson(rate_per_s=1.0), prompt_tokens=p, output_tokens=o)
    ref = reference(engine, w)
    expect = _regime(engine.k_max, p, o, engine.kv_capacity_tokens)
    assert expect == regime.split("-")[1]
    note, d = ref.capacity_note, ref.to_dict()
    assert d["load_basis"] == "kv_rules"
    assert d["load_basis_binding"] == ("k_max" if expect == "k_max" else "kv_cache")
    if expect == "k_max":
        assert note.startswith("**Reference capacity.**") and K_MAX_WORDS in note and KV_WORDS not in note and "mean footprints allow" not in note, note
        assert SATURATION_WHERE_K_MAX_BINDS["kv_rules"].within_words() in note, note
    elif expect == "part":
        assert PART_WORDS in note and "bound over every scheduler" in note and "mean footprints allow" not in note
    else:
        assert "the KV cache binds, so it is" in note and K_MAX_WORDS not in note, note
