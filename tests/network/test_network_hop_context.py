"""A hop of a network case file whose prompt + output passes its engine's context is refused, naming the class, the
hop and the station (as one engine's --prompt/--output and --trace are refused with --gpu / --profile-dir): vLLM
refuses a request beyond max_position_embeddings, its default --max-model-len.  Before, a 5,000-token hop on a
Llama-2 profile (context 4,096) was analysed as if it could run."""
import pytest

from fluidq.errors import DataError
from fluidq.models import load_model
from fluidq.network.toml import network_from_dict
from fluidq.testing.cli import assert_one_line, run_cli

LLAMA2 = "vidur-llama2-7b-a100"  # a profile of Llama-2-7B: 4,096 tokens of context


def _case(prompt, output, *, engine="E", router=False, roofline=False):
    e = ({"batch_time": {"kind": "roofline", "model": "Llama-3.1-8B", "gpu": "H100"}} if roofline
         else {"profile": LLAMA2})
    d = {"name": "ctx", "engines": {"E": e, "F": {"profile": "paper-codellama34b-a100"}},
         "classes": [{"name": "chat", "rate_per_s": 0.1, "route": [
             {"engine": "F", "prompt": 100, "output": 10, "name": "first"},
             {"engine": engine, "prompt": prompt, "output": output, "name": "long"}]}]}
    if router:
        d["routers"] = {"pool": {"engines": ["F", "E"]}}
    return d


def test_a_hop_within_the_context_is_read():
    net = network_from_dict(_case(3000, 1096))  # 4,096 exactly
    assert [h.name for h in net.hops] == ["first", "long"]


def test_a_hop_beyond_the_context_names_class_hop_and_station():
    assert load_model("Llama-2-7B").max_position_embeddings == 4096
    with pytest.raises(DataError, match=r"^case\.toml class 'chat' hop 'long' on engine 'E': prompt \+ output = "
                                        r"3,000 \+ 1,097 = 4,097 tokens: expected at most 4,096 tokens, Llama-2-7B's "
                                        r"context"):
        network_from_dict(_case(3000, 1097), source="case.toml")


def test_random_lengths_are_checked_by_their_means_and_routers_on_each_station():
    with pytest.raises(DataError, match=r"hop 'long' on engine 'E': .* = 4,500 tokens \(the mean of its random "
                                        r"prompt\)"):
        network_from_dict(_case({"dist": "geometric", "mean": 4000}, 500))
    network_from_dict(_case({"dist": "geometric", "mean": 3000}, 500))
    # behind a router of F (CodeLlama-34B, 16,384) and E (Llama-2-7B): E is the one refused
    with pytest.raises(DataError, match=r"hop 'long' on engine 'E'"):
        network_from_dict(_case(5000, 100, engine="pool", router=True))
    network_from_dict(_case(5000, 100, engine="F"))  # CodeLlama-34B alone takes it


def test_a_roofline_station_has_its_models_context(tmp_path, capsys):
    assert load_model("Llama-3.1-8B").max_position_embeddings == 131072
    network_from_dict(_case(120_000, 11_072, roofline=True))
    with pytest.raises(DataError, match=r"131,073 tokens: expected at most 131,072 tokens, Llama-3.1-8B's context"):
        network_from_dict(_case(120_000, 11_073, roofline=True))
    case = tmp_path / "long.toml"
    case.write_text(f'''name = "long"
[engines.E]
profile = "{LLAMA2}"
[[classes]]
name = "chat"
rate_per_s = 0.1
route = [{{ engine = "E", prompt = 4000, output = 200, name = "ask" }}]
''')
    assert_one_line(["network", str(case)], capsys, "class 'chat' hop 'ask' on engine 'E'", "4,200 tokens",
                    "at most 4,096")
    case.write_text(case.read_text().replace("prompt = 4000", "prompt = 3000"))
    rc, out, err = run_cli(["network", str(case)], capsys)
    assert rc == 0, err


def test_hops_inside_forks_and_choices_are_the_network_s_hops_and_are_checked():
    # one walk over a route (fluidq.network.model.route_hops) gives Network.hops and the hops the context check
    # reads: a hop inside a choice inside a fork's branch is listed in the order written and refused there
    def case(deep_prompt):
        return {"name": "ctx", "engines": {"E": {"profile": LLAMA2}, "F": {"profile": "paper-codellama34b-a100"}},
                "classes": [{"name": "chat", "rate_per_s": 0.1, "route": [
                    {"engine": "F", "prompt": 100, "output": 10, "name": "first"},
                    {"fork": "f", "branches": [
                        [{"engine": "F", "prompt": 50, "output": 5, "name": "left"}],
                        [{"choice": [{"p": 0.5, "route": [{"engine": "E", "prompt": deep_prompt, "output": 96,
                                                            "name": "deep"}]},
                                     {"p": 0.5, "route": [{"engine": "F", "prompt": 20, "output": 2,
                                                           "name": "other"}]}]}]]},
                    {"join": "f"},
                    {"engine": "E", "prompt": 10, "output": 10, "name": "last"}]}]}

    net = network_from_dict(case(4000))  # 4,096 exactly
    assert [h.name for h in net.hops] == ["first", "left", "deep", "other", "last"]
    with pytest.raises(DataError, match=r"class 'chat' hop 'deep' on engine 'E': prompt \+ output = 4,001 \+ 96"):
        network_from_dict(case(4001))
