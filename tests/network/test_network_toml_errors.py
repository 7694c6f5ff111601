"""Bad TOML case files: one fluidq error, one line, naming the file, the place and the key."""
from __future__ import annotations

import pytest

from fluidq.cli import main
from fluidq.errors import (
    DataError,
    FluidqError,
    ParameterError,
    ParameterTypeError,
    TopologyError,
)
from fluidq.network.toml import load_network

_ENGINE = '[engines.E1]\nbatch_time = { kind = "affine", c = 0.05, a = 0.0002 }\nb_max = 512\n'


def _case(tmp_path, *, top="", engine="", routers="", klass='rate_per_s = 1.0',
          route='[{ engine = "E1", prompt = 10, output = 10 }]', classes=None, name="case.toml"):
    text = top + "\n" + _ENGINE + engine + "\n" + routers + "\n"
    text += classes if classes is not None else f'[[classes]]\nname = "c"\n{klass}\nroute = {route}\n'
    p = tmp_path / name
    p.write_text(text)
    return p


# (case keywords, error type, substrings the message must contain besides the file name)
BAD = {
    "arrival_unknown_key": ({'klass': 'arrival = { kind = "periodic", rate = 2.0 }'}, DataError,
                            ["class 'c' arrival", "'rate'", "rate_per_s"]),
    "arrival_not_table": ({'klass': 'arrival = "poisson"'}, DataError, ["class 'c'", "arrival", "table"]),
    "arrival_bad_kind": ({'klass': 'arrival = { kind = 3, rate_per_s = 1.0 }'}, DataError,
                         ["class 'c' arrival", "kind"]),
    "arrival_and_rate": ({'klass': 'rate_per_s = 3.0\narrival = { kind = "periodic", rate_per_s = 2.0 }'},
                         DataError, ["class 'c'", "rate_per_s", "twice"]),
    "arrival_and_rate_equal": ({'klass': 'rate_per_s = 2.0\narrival = { kind = "periodic", rate_per_s = 2.0 }'},
                               DataError, ["class 'c'", "rate_per_s", "twice"]),
    "classes_ints": ({'top': "classes = [1, 2]", 'classes': ""}, DataError, ["class 1", "table"]),
    "classes_strings": ({'top': 'classes = ["a"]', 'classes': ""}, DataError, ["class 1", "table"]),
    "routers_scalar": ({'top': "routers = { r = 5 }"}, DataError, ["router 'r'", "table"]),
    "routers_list": ({'top': "routers = [1]"}, DataError, ["routers", "[routers.NAME]"]),
    "priority_int": ({'engine': "priority = 5\n"}, DataError, ["engine 'E1'", "priority"]),
    "choice_only_empty": ({'route': '[{ choice = [{ p = 1.0, route = [] }] }]'}, DataError,
                          ["class 'c' step 1", "choice", "empty route"]),
    "choice_table": ({'route': '[{ choice = { p = 1.0, route = [] } }]'}, DataError,
                     ["class 'c' step 1", "choice", "array of options"]),
    "choice_missing_route": ({'route': '[{ choice = [{ p = 1.0 }] }]'}, DataError,
                             ["class 'c' step 1 option 1", "route"]),
    "length_extra_key": ({'route': '[{ engine = "E1", prompt = { dist = "geometric", mean = 5, sigma = 1 }, '
                                    'output = 10 }]'}, DataError, ["class 'c' step 1 prompt", "'sigma'"]),
    "length_missing_key": ({'route': '[{ engine = "E1", prompt = { dist = "lognormal", mean = 5 }, output = 10 }]'},
                           DataError, ["class 'c' step 1 prompt", "'sigma'"]),
    "length_infinite": ({"route": '[{ engine = "E1", prompt = inf, output = 10 }]'}, DataError,
                        ["class 'c' step 1", "prompt = inf", "finite"]),
    "name_int": ({'top': "name = 5"}, DataError, ["name = 5", "string"]),
    "class_name_int": ({'classes': '[[classes]]\nname = 7\nrate_per_s = 1.0\n'
                                    'route = [{ engine = "E1", prompt = 10, output = 10 }]\n'},
                       DataError, ["class 1", "name = 7"]),
    "hop_engine_int": ({'route': '[{ engine = 5, prompt = 10, output = 10 }]'}, DataError,
                       ["class 'c' step 1", "engine = 5"]),
    "step_two_kinds": ({'route': '[{ engine = "E1", prompt = 10, output = 10, join = "f" }]'}, DataError,
                       ["class 'c' step 1", "exactly one"]),
    "router_engines_int": ({'routers': '[routers.r]\nengines = 5\n'}, DataError, ["router 'r'", "engines"]),
    "router_probabilities_str": ({'routers': '[routers.r]\nengines = ["E1"]\npolicy = "random"\n'
                                              'probabilities = "half"\n'}, DataError, ["router 'r'", "probabilities"]),
    "top_key_after_table": ({'engine': 'bottleneck_load = 0.9\n'}, DataError,
                            ["engine 'E1'", "'bottleneck_load'", "before the first"]),
    "top_key_after_classes": ({"klass": 'rate_per_s = 1.0\nclaim = "dag"'}, DataError,
                              ["class 'c'", "'claim'", "before the first"]),
    "bottleneck_load_inf": ({'top': "bottleneck_load = inf"}, ParameterError, ["bottleneck_load"]),
    # value errors from the constructors keep their type and gain the place
    "rate_negative": ({'klass': "rate_per_s = -1.0"}, ParameterError, ["class 'c'", "rate_per_s=-1.0", "> 0"]),
    "rate_string": ({'klass': 'rate_per_s = "fast"'}, ParameterTypeError, ["class 'c'", "rate_per_s='fast'"]),
    "choice_sum": ({'route': '[{ engine = "E1", prompt = 10, output = 10 }, { choice = [{ p = 0.3, route = [] }, '
                              '{ p = 0.3, route = [{ engine = "E1", prompt = 1, output = 1 }] }] }]'},
                   ParameterError, ["class 'c' step 2", "options=[0.3, 0.3]", "summing to 1"]),
    "route_empty": ({'route': "[]"}, ParameterError, ["class 'c'", "route=()", "at least one step"]),
    "prompt_fraction": ({'route': '[{ engine = "E1", prompt = 10.5, output = 10 }]'}, ParameterError,
                        ["class 'c' step 1", "prompt_tokens=10.5"]),
    "gamma_cv": ({'klass': 'arrival = { kind = "gamma", rate_per_s = 2.0, cv = -1 }'}, ParameterError,
                 ["class 'c' arrival", "cv=-1"]),
    "router_policy": ({'routers': '[routers.r]\nengines = ["E1"]\npolicy = "round-robin"\n'}, ParameterError,
                      ["router 'r'", "policy='round-robin'"]),
    "unknown_engine": ({'route': '[{ engine = "E9", prompt = 10, output = 10 }]'}, TopologyError,
                       ["class 'c'", "'E9'"]),
}


@pytest.mark.parametrize("key", sorted(BAD))
def test_bad_case_is_one_located_error(tmp_path, key):
    kw, typ, parts = BAD[key]
    p = _case(tmp_path, **kw)
    with pytest.raises(typ) as info:
        load_network(p)
    msg = str(info.value)
    assert isinstance(info.value, FluidqError) and "\n" not in msg
    assert msg.startswith(str(p)), msg
    for s in parts:
        assert s in msg, (s, msg)


def _engine_case(tmp_path, body):
    p = tmp_path / "e.toml"
    p.write_text(f'[engines.E1]\n{body}\n[[classes]]\nname = "c"\nrate_per_s = 1.0\n'
                 'route = [{ engine = "E1", prompt = 10, output = 10 }]\n')
    return p


@pytest.mark.parametrize("body, typ, parts", [
    ('batch_time = "fast"\nb_max = 512', DataError, ["engine 'E1'", "batch_time = 'fast'"]),
    ('batch_time = { c = 0.05, a = 0.0 }\nb_max = 512', DataError, ["engine 'E1'", "kind"]),
    ('batch_time = { kind = "affine", c = 0.05 }\nb_max = 512', DataError, ["engine 'E1'", "batch_time", "needs key 'a'"]),
    ('batch_time = { kind = "affine", c = 0.05, a = 0.0, zz = 1 }\nb_max = 512', DataError,
     ["engine 'E1'", "batch_time", "unknown key 'zz'"]),
    ('batch_time = { kind = "context_aware", base = "x", kv_s_per_token = 1e-6 }\nb_max = 512', DataError,
     ["engine 'E1'", "batch_time base"]),
    ('batch_time = { kind = "affine", c = -0.05, a = 0.0 }\nb_max = 512', ParameterError,
     ["engine 'E1' batch_time", "c=-0.05"]),
    ('batch_time = { kind = "affine", c = 0.05, a = 0.0 }\nb_max = -3', ParameterError, ["engine 'E1'", "b_max=-3"]),
    ('batch_time = { kind = "affine", c = 0.05, a = 0.0 }\nb_max = 8\npolicy = "magic"', FluidqError,
     ["engine 'E1'", "'magic'"]),
    ('profile = 5', DataError, ["engine 'E1'", "profile = 5"]),
])
def test_bad_engine_is_located(tmp_path, body, typ, parts):
    p = _engine_case(tmp_path, body)
    with pytest.raises(typ) as info:
        load_network(p)
    msg = str(info.value)
    assert msg.startswith(str(p)) and "\n" not in msg
    for s in parts:
        assert s in msg, (s, msg)


def test_relocated_parameter_error_keeps_its_fields(tmp_path):
    p = _case(tmp_path, klass="rate_per_s = -1.0")
    with pytest.raises(ParameterError) as info:
        load_network(p)
    assert info.value.name == "rate_per_s" and info.value.value == -1.0 and isinstance(info.value, ValueError)


def test_not_utf8(tmp_path):
    p = tmp_path / "bin.toml"
    p.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(DataError, match="UTF-8|binary"):
        load_network(p)
    with pytest.raises(DataError, match="folder"):
        load_network(tmp_path)


def test_single_names_are_one_element_lists(tmp_path):
    p = _case(tmp_path, engine='priority = "c.1"\n', routers='[routers.r]\nengines = "E1"\n',
              classes='[[classes]]\nname = "c"\nrate_per_s = 1.0\nroute = [{ engine = "E1", prompt = 10, output = 10 }]\n'
                      '[[classes]]\nname = "d"\nrate_per_s = 1.0\nroute = [{ engine = "r", prompt = 10, output = 10 }]\n')
    net = load_network(p)
    assert net.stations[0].priority == ("c.1",)
    assert net.routers[0].engines == ("E1",)


def test_rate_from_the_class_fills_the_arrival(tmp_path):
    p = _case(tmp_path, klass='rate_per_s = 2.5\narrival = { kind = "gamma", cv = 3.0 }')
    cls = load_network(p).classes[0]
    assert cls.rate_per_s == 2.5 and type(cls.arrival).__name__ == "Gamma" and cls.arrival.cv == 3.0


def test_cli_bad_case_is_one_line(tmp_path, capsys):
    p = _case(tmp_path, klass='arrival = { kind = "periodic", rate = 2.0 }')
    assert main(["network", str(p)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "'rate'" in err and str(p) in err
