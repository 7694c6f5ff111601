"""A profile folder is refused when it is not of the model the caller claims (rev-indep review 2026-12-07, findings
3, 4, 5, 7): a mixture of experts on dense profiles, a config whose shapes differ from what profile_meta.yaml
records, an unreadable profile_meta.yaml.  Every input is made here, in tmp_path: a synthetic folder of linear
operator times (tests/stability/flow_profile.py) whose profile_meta.yaml names a model the shipped facts lack."""
import json

import pytest

from flow_profile import write_profile  # tests/stability (tests/conftest.py puts it on sys.path)
from fluidq.errors import FluidqError, ParameterError
from fluidq.models import ModelFacts
from fluidq.testing.cli import assert_one_line, run_cli
from fluidq.validate.deployment import deployment_engine, predict_deployment

#: the synthetic 13B of the review: 40 layers, hidden 5120, 40 query / 8 KV heads, MLP 13824
SYNTH = {"model_type": "llama", "num_hidden_layers": 40, "hidden_size": 5120, "num_attention_heads": 40,
         "num_key_value_heads": 8, "intermediate_size": 13824, "vocab_size": 128256, "torch_dtype": "bfloat16",
         "max_position_embeddings": 8192}
OVERRIDES = {"num_hidden_layers": 1, "intermediate_size": 13824, "num_attention_heads": 40, "num_key_value_heads": 8,
             "vocab_size": 128256}
#: a mixture of experts with the synthetic model's attention shapes
MOE = {**SYNTH, "model_type": "qwen2_moe", "moe_intermediate_size": 1408, "shared_expert_intermediate_size": 5632,
       "num_experts": 60, "num_experts_per_tok": 4, "decoder_sparse_step": 1, "mlp_only_layers": []}
LENGTHS = {"input_tokens": 1000, "output_tokens": 300, "gpu_memory_gib": 80}
CLI = ["--input-len", "1000", "--output-len", "300", "--gpu-memory-gib", "80"]


def meta_text(model="acme/Synth-13B", overrides=OVERRIDES, tp_degrees=(1,)):
    lines = ["profiler_version: 1.0.0", "vllm_version: 0.19.0", f"model: {model}", "variant: bf16",
             f"tp_degrees: [{', '.join(map(str, tp_degrees))}]", "engine_effective:", "  load_format: dummy",
             "  block_size: 16"]
    if overrides is not None:
        lines += ["  hf_overrides:"] + [f"    {k}: {v}" for k, v in overrides.items()]
    lines += ["  model: <upstream-temporary-path>", "attention_grid:", "  chunks: 0, 16-2048 x2",
              "skew_fit:", "  enabled: false"]
    return "\n".join(lines) + "\n"


def folder(tmp_path, name="prof", **kw):
    d = write_profile(tmp_path / name)
    (d / "profile_meta.yaml").write_text(meta_text(**kw))
    return d


def config(tmp_path, doc, name="config.json"):
    p = tmp_path / name
    p.write_text(json.dumps(doc))
    return p


def test_the_synthetic_folder_and_its_own_config_are_accepted(tmp_path):
    d = folder(tmp_path)
    pred = predict_deployment(d, model=ModelFacts.from_config(config(tmp_path, SYNTH)), **LENGTHS)
    assert pred.tokens_per_s > 0 and pred.inputs["n_layers"] == 40


def test_a_mixture_of_experts_on_dense_profiles_is_refused_on_every_face(tmp_path, capsys):
    # finding 3: accepted by capacity/check/simulate --profile-dir (76,417 tokens/s from the dense MLP times)
    d = folder(tmp_path)
    moe = config(tmp_path, MOE, "moe.json")
    with pytest.raises(ParameterError, match=r"mixture of experts \(60 experts, top-4\) but the folder has no "
                                             r"profile_tp1_moe.csv") as exc:
        predict_deployment(d, model=ModelFacts.from_config(moe), **LENGTHS)
    assert exc.value.name == "model"
    with pytest.raises(ParameterError, match="no profile_tp1_moe.csv"):
        deployment_engine(d, model=ModelFacts.from_config(moe), kv_capacity_tokens=100_000)
    for cmd in (["capacity"], ["check", "--rate", "5", "--policy", "vllm-chunked"],
                ["simulate", "--rate", "5", "--horizon", "3", "--policy", "vllm-chunked"]):
        assert_one_line([*cmd, "--profile-dir", str(d), "--model-config", str(moe), *CLI], capsys,
                        "--model-config", "no profile_tp1_moe.csv", "config.json of the model profiled")
    # a folder naming a shipped MoE model without its expert table: the folder is named
    q = folder(tmp_path, "q", model="Qwen/Qwen3-30B-A3B-Instruct-2507", overrides=None)
    assert_one_line(["capacity", "--profile-dir", str(q), *CLI], capsys, "--profile-dir", "no profile_tp1_moe.csv")
    # the other way round: a dense model on a folder with an expert table
    m = folder(tmp_path, "m")
    (m / "profile_tp1_moe.csv").write_text("tokens,activated_experts,time_us\n1,1,1\n")
    with pytest.raises(FluidqError, match="is dense but the folder has profile_tp1_moe.csv"):
        predict_deployment(m, model=ModelFacts.from_config(config(tmp_path, SYNTH)), **LENGTHS)


def test_an_invalid_profile_meta_is_refused_with_its_line_and_column(tmp_path, capsys):
    # finding 7a: `garbage: [` read as a file that "names no model"; with --model-config accepted silently
    d = folder(tmp_path)
    (d / "profile_meta.yaml").write_text("garbage: [\n")
    cfg = config(tmp_path, SYNTH)
    where = rf"{d / 'profile_meta.yaml'}: invalid YAML at line 1, column 10: the '\[' opened here is never closed"
    with pytest.raises(FluidqError, match=where):
        predict_deployment(d, model=ModelFacts.from_config(cfg), **LENGTHS)
    with pytest.raises(FluidqError, match=where):
        predict_deployment(d, **LENGTHS)
    for extra in ([], ["--model-config", str(cfg)]):
        assert_one_line(["capacity", "--profile-dir", str(d), *extra, *CLI], capsys, "invalid YAML at line 1, column 10")
    for text, line, col in (("model: acme/X\nengine_effective:\n\thf_overrides: {}\n", 3, 1),
                            ("model: 'acme/X\n", 1, 8), ("model: acme/X\n  tp: 1\n", 2, 3),
                            ("model: acme/X\ntp_degrees: [1, 2\nvariant: bf16\n", 2, 13)):
        (d / "profile_meta.yaml").write_text(text)
        with pytest.raises(FluidqError, match=rf"invalid YAML at line {line}, column {col}"):
            predict_deployment(d, model=ModelFacts.from_config(cfg), **LENGTHS)


def test_the_yaml_reader_reads_what_pyyaml_reads():
    # the shipped profile_meta.yaml files and 2,000 seeded random documents dumped by PyYAML (block and flow styles,
    # folded long values) read the same; PyYAML is no dependency of fluidq, only of this check
    import random
    import string

    yaml = pytest.importorskip("yaml")
    from fluidq.validate import validation_dir
    from fluidq.validate.profile_meta import parse_yaml

    for f in sorted((validation_dir() / "data" / "llmservingsim").glob("*/profile_meta.yaml")):
        assert parse_yaml(f.read_text(), str(f)) == yaml.safe_load(f.read_text()), f
    rng = random.Random(16)

    def word():
        return "".join(rng.choice(string.ascii_letters + "_") for _ in range(rng.randint(1, 8)))

    def scalar():
        r = rng.random()
        if r < 0.2:
            return rng.randint(-10**6, 10**6)
        if r < 0.35:
            return round(rng.uniform(-100, 100), rng.randint(0, 5))
        if r < 0.45:
            return rng.choice([True, False, None])
        if r < 0.6:
            return "".join(rng.choice(string.ascii_letters + string.digits + " -_.,<>=%/[]{}:'\"")
                           for _ in range(rng.randint(1, 120))).strip() or "x"
        return word()

    def value(depth):
        r = rng.random()
        if depth < 3 and r < 0.3:
            return {word(): value(depth + 1) for _ in range(rng.randint(1, 5))}
        if depth < 3 and r < 0.4:
            return [scalar() for _ in range(rng.randint(0, 12))]
        if depth < 3 and r < 0.45:
            return [{word(): scalar()} for _ in range(rng.randint(1, 3))]
        return scalar()

    for _ in range(2000):
        doc = {word(): value(0) for _ in range(rng.randint(1, 8))}
        text = yaml.safe_dump(doc, sort_keys=rng.random() < 0.5, default_flow_style=rng.choice([None, False, True]),
                              width=rng.choice([40, 80, 1000]))
        assert parse_yaml(text, "doc") == yaml.safe_load(text), text


def test_a_config_of_other_shapes_than_the_recorded_ones_is_refused(tmp_path, capsys):
    # finding 4: a 28-layer, 2560-wide, 32-head config on the folder of a model in no table was predicted from
    # 5120-wide operator times (profile_shape_differences compared against shipped facts only)
    d = folder(tmp_path)
    other = {"model_type": "qwen3", "num_hidden_layers": 28, "hidden_size": 2560, "num_attention_heads": 32,
             "num_key_value_heads": 8, "head_dim": 128, "intermediate_size": 9728, "vocab_size": 151936,
             "torch_dtype": "bfloat16", "max_position_embeddings": 32768, "tie_word_embeddings": True}
    cfg = config(tmp_path, other, "other.json")
    with pytest.raises(ParameterError, match=r"n_heads 32 where the profiles record num_attention_heads 40, "
                                             r"intermediate_size 9728 where the profiles record intermediate_size "
                                             r"13824, vocab_size 151936") as exc:
        predict_deployment(d, model=ModelFacts.from_config(cfg), **LENGTHS)
    assert exc.value.name == "model"
    for key, value in (("num_key_value_heads", 4), ("intermediate_size", 14336), ("num_attention_heads", 32)):
        with pytest.raises(ParameterError, match=rf"where the profiles record {key} {OVERRIDES[key]}"):
            deployment_engine(d, model=ModelFacts.from_config(config(tmp_path, {**SYNTH, key: value}, f"{key}.json")),
                              kv_capacity_tokens=100_000)
    for cmd in (["capacity"], ["check", "--rate", "5", "--policy", "vllm-chunked"],
                ["simulate", "--rate", "5", "--horizon", "3", "--policy", "vllm-chunked"]):
        assert_one_line([*cmd, "--profile-dir", str(d), "--model-config", str(cfg), *CLI], capsys,
                        "--model-config", "num_attention_heads 40")
    # the layer count is not compared (one layer is profiled): half the layers is a faster engine of the same layer
    half = predict_deployment(d, model=ModelFacts.from_config(config(tmp_path, {**SYNTH, "num_hidden_layers": 20},
                                                                     "half.json")), **LENGTHS)
    assert half.inputs["n_layers"] == 20
    # a folder profiled at TP1 and TP2 that records TP2's shard (heads / 2, ...): the full model is its model
    shard = {k: (v // 2 if k != "num_hidden_layers" else v) for k, v in OVERRIDES.items()}
    two = folder(tmp_path, "two", overrides=shard, tp_degrees=(1, 2))
    assert predict_deployment(two, model=ModelFacts.from_config(config(tmp_path, SYNTH)), **LENGTHS).tokens_per_s > 0
    with pytest.raises(ParameterError, match=r"num_key_value_heads 4.*at the profiled tensor-parallel sizes 1, 2"):
        predict_deployment(two, model=ModelFacts.from_config(config(tmp_path, {**SYNTH, "num_key_value_heads": 20},
                                                                    "kv20.json")), **LENGTHS)
    # a folder naming a shipped model whose recorded shapes are another's: the folder is named
    mis = folder(tmp_path, "mis", model="meta-llama/Llama-3.1-8B")
    assert_one_line(["capacity", "--profile-dir", str(mis), *CLI], capsys, "--profile-dir",
                    "shipped facts of Llama-3.1-8B have n_heads 32 where the profiles record num_attention_heads 40")


def test_validate_run_compares_a_config_with_the_recorded_shapes(tmp_path):
    # the same check on `fluidq validate --run DIR --model-config`: the RTX PRO 6000 Llama run renamed as a model the
    # tables lack (its profile_meta.yaml records TP2's shard of Llama-3.1-8B: 16 heads, 4 KV heads, MLP 7168)
    import run_variants as rv
    from fluidq.errors import DataError
    from fluidq.validate.cases import case_for_run

    from hf_configs import LLAMA_8B  # tests/models/hf_configs.py

    d = rv.copy_run(rv.LLAMA_PRO, tmp_path / "run")
    (d / "profile_meta.yaml").write_text((d / "profile_meta.yaml").read_text().replace("meta-llama/Llama-3.1-8B",
                                                                                      "acme/Unknown-9B"))
    m = rv.meta(d)
    m["model"] = m["engine_kwargs"]["model"] = "acme/Unknown-9B"
    rv.set_meta(d, m)
    case, _ = case_for_run(d, model_config=config(tmp_path, LLAMA_8B))
    assert case.spec["_facts"].n_layers == 32
    with pytest.raises(DataError, match=r"profiles 'acme/Unknown-9B' but the config.json given .* has "
                                        r"intermediate_size 8192 where the profiles record intermediate_size 7168"):
        case_for_run(d, model_config=config(tmp_path, {**LLAMA_8B, "intermediate_size": 8192}, "w.json"))


def test_validate_run_refuses_a_run_that_served_another_model(tmp_path, capsys):
    # finding 5: `validate --run --model-config` never looked at the model the run served, and the refusal without
    # it pointed to that bypass; profiles of one model with a run serving another were accepted silently
    import run_variants as rv
    from fluidq.errors import DataError
    from fluidq.validate.cases import case_for_run

    from hf_configs import LLAMA_8B  # tests/models/hf_configs.py

    def run(name, profiled, served):
        d = rv.copy_run(rv.LLAMA_PRO, tmp_path / name)
        (d / "profile_meta.yaml").write_text((d / "profile_meta.yaml").read_text().replace(
            "meta-llama/Llama-3.1-8B", profiled))
        m = rv.meta(d)
        m["model"] = m["engine_kwargs"]["model"] = served
        rv.set_meta(d, m)
        return d

    cfg = config(tmp_path, LLAMA_8B)
    qwen = "Qwen/Qwen3-30B-A3B-Instruct-2507"
    # the Llama profiles with a run that served Qwen3-30B: refused by shape, with or without the config, flag or not
    d = run("q", "meta-llama/Llama-3.1-8B", qwen)
    for kw in ({}, {"model_config": cfg}, {"model_config": cfg, "served_model_is_profiled": True}):
        with pytest.raises(DataError, match=r"profiles 'meta-llama/Llama-3.1-8B' \(Llama-3.1-8B\) but vllm_meta.json "
                                            r"ran 'Qwen/Qwen3-30B-A3B-Instruct-2507' \(Qwen3-30B-A3B-Instruct-2507\), "
                                            r"and .* has n_layers 32 \(the served Qwen3-30B-A3B-Instruct-2507: "
                                            r"48\)") as exc:
            case_for_run(d, **kw)
        assert "--model-config" not in str(exc.value)  # no bypass offered
    # profiles of a model in no table, a run that served another name: refused naming both, unless the user says
    for served in ("meta-llama/Llama-3.1-8B", "acme/Other-9B"):
        d = run(served.replace("/", "_"), "acme/Unknown-9B", served)
        with pytest.raises(DataError, match=rf"profiles 'acme/Unknown-9B' but vllm_meta.json ran '{served}'.*"
                                            r"--served-model-is-profiled"):
            case_for_run(d, model_config=cfg)
        case, _ = case_for_run(d, model_config=cfg, served_model_is_profiled=True)
        assert case.spec["_facts"].n_layers == 32
    # ... but a config of other shapes than the served model's shipped facts is refused even so
    d = run("s", "acme/Synth-13B", "meta-llama/Llama-3.1-8B")
    with pytest.raises(DataError, match=r"ran 'meta-llama/Llama-3.1-8B' \(Llama-3.1-8B\), and the config.json given"):
        case_for_run(d, model_config=config(tmp_path, SYNTH, "synth.json"), served_model_is_profiled=True)
    # the same repository in a local folder is the same model
    case, _ = case_for_run(run("local", "acme/Unknown-9B", "/models/Unknown-9B/"), model_config=cfg)
    # the command line: the flag, and its refusal without --run
    d = run("cli", "acme/Unknown-9B", "acme/Other-9B")
    assert_one_line(["validate", "--run", str(d), "--model-config", str(cfg), "--out", str(tmp_path / "v")], capsys,
                    "--served-model-is-profiled", "acme/Other-9B", "acme/Unknown-9B")
    assert_one_line(["validate", "--served-model-is-profiled", "--out", str(tmp_path / "w")], capsys,
                    "--served-model-is-profiled is read only with --run")


def _block_faces(tmp_path, block):
    """The library faces that plan a block size given for vLLM, each returning the KV cache it planned, tokens; and
    the command lines that do (the same flags on every command that takes --profile-dir)."""
    from fluidq.validate.roofline import predict_roofline_deployment

    d = folder(tmp_path)
    cfg = config(tmp_path, SYNTH)
    facts = ModelFacts.from_config(cfg)
    calls = (lambda: predict_deployment(d, model=facts, block_size=block, **LENGTHS).inputs["kv_capacity_tokens"],
             lambda: deployment_engine(d, model=facts, block_size=block, gpu_memory_gib=80)[0].kv_capacity_tokens,
             lambda: predict_roofline_deployment("Llama-3.1-8B", "H100", input_tokens=1000, output_tokens=300,
                                                 block_size=block).inputs["kv_capacity_tokens"])
    prof = ["--profile-dir", str(d), "--model-config", str(cfg), "--gpu-memory-gib", "80", "--block-size", str(block)]
    argvs = (["capacity", "--model", "Llama-3.1-8B", "--gpu", "H100", "--input-len", "1000", "--output-len", "300",
              "--block-size", str(block)],
             ["capacity", *prof, "--input-len", "1000", "--output-len", "300"],
             ["check", *prof, "--rate", "5", "--policy", "vllm-chunked"],
             ["simulate", *prof, "--rate", "5", "--horizon", "3", "--policy", "vllm-chunked"],
             ["models", "kv", "Llama-3.1-8B", "--gpu-memory-gib", "80", "--block-size", str(block)])
    return calls, argvs


@pytest.mark.parametrize("block", [7, 12, 48, 512])
def test_a_block_size_outside_vllm_s_set_is_planned_as_given_with_a_warning_on_every_face(block, tmp_path, capsys):
    # rev-indep finding 7b: `capacity --gpu --block-size 7` was planned without a word; then it was refused on every
    # face, which refused what later vLLM releases take (fin9 finding 4; the shipped profiles are vLLM 0.19.0).  vLLM
    # 0.9-0.16 take only 1, 8, 16, 32, 64, 128, 256 (fluidq._validate.VLLM_BLOCK_SIZES): another whole block size is
    # planned as given, in whole blocks of it, with a VllmBlockSizeWarning saying so
    from fluidq._validate import VllmBlockSizeWarning

    calls, argvs = _block_faces(tmp_path, block)
    for call in calls:
        with pytest.warns(VllmBlockSizeWarning, match=rf"block_size={block} is not one of vLLM's block sizes 1, 8, "
                                                      r"16, 32, 64, 128, 256: planned as given; vLLM 0\.9-0\.16 take "
                                                      r"only these .* later releases take other sizes") as rec:
            kv = call()
        assert kv > 0 and kv % block == 0, (block, kv)
        assert all(w.message.name == "block_size" and w.message.value == block for w in rec
                   if issubclass(w.category, VllmBlockSizeWarning))
    # the command line: exit 0, the answer on stdout, the warning once (however many faces read the block size) as
    # one line on stderr naming the flag
    line = (f"warning: --block-size {block} is not one of vLLM's block sizes 1, 8, 16, 32, 64, 128, 256: planned as "
            "given; vLLM 0.9-0.16 take only these")
    for argv in argvs:
        rc, out, err = run_cli(argv, capsys)
        assert rc == 0, (argv, rc, err)
        said = [ln for ln in err.splitlines() if "--block-size" in ln]
        assert len(said) == 1 and said[0].startswith(f"fluidq {argv[0]}: {line}"), (argv, err)
        assert "Traceback" not in err and "error" not in err and out.strip(), (argv, err)
    rc, out, _ = run_cli([*argvs[0], "--json"], capsys)  # the answer is in blocks of the size given
    inputs = json.loads(out)["inputs"]
    assert rc == 0 and inputs["block_size"] == block and inputs["kv_capacity_tokens"] % block == 0


def test_a_command_that_fails_after_the_block_size_warning_says_its_error_alone(capsys):
    # a block of 1,000,000 tokens is planned as given (a warning) and then fits no GPU: the one error line, as ever
    assert_one_line(["models", "kv", "Llama-3.1-8B", "--gpu-memory-gib", "80", "--block-size", "1000000"], capsys,
                    "fluidq models: error:", "less than one KV block")


@pytest.mark.parametrize("block", [0, -16])
def test_a_block_size_below_one_is_refused_on_every_face(block, tmp_path, capsys):
    calls, argvs = _block_faces(tmp_path, block)
    for call in calls:
        with pytest.raises(ParameterError, match=r"an integer >= 1") as exc:
            call()
        assert exc.value.name == "block_size"
    for argv in argvs:
        assert_one_line(argv, capsys, "--block-size", "an integer >= 1")


def test_a_block_size_that_is_no_whole_number_is_refused():
    from fluidq._validate import vllm_block_size

    for bad in (16.5, "16", None, True):
        with pytest.raises(FluidqError, match="block_size"):
            vllm_block_size("block_size", bad)


def test_vllm_block_sizes_are_accepted_and_a_recorded_one_is_vllm_s_own(tmp_path):
    from fluidq.validate.deployment import RecordedBlockSize

    d = folder(tmp_path)
    facts = ModelFacts.from_config(config(tmp_path, SYNTH))
    kv = [predict_deployment(d, model=facts, block_size=b, **LENGTHS).inputs["kv_capacity_tokens"] for b in (8, 256)]
    assert kv[0] % 8 == 0 and kv[1] % 256 == 0
    # a block size a run recorded is vLLM's choice (a later release may take another): planned, not refused
    assert predict_deployment(d, model=facts, block_size=RecordedBlockSize(48), **LENGTHS).inputs[
        "kv_capacity_tokens"] % 48 == 0
