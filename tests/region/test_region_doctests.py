"""The examples in the region docstrings run and print what they say."""
import doctest
import importlib

import pytest


@pytest.mark.parametrize("mod", ["fluidq.region.region", "fluidq.region.mix", "fluidq.region.policy",
                                 "fluidq.policies.region_aware"])
def test_docstring_examples(mod):
    res = doctest.testmod(importlib.import_module(mod), optionflags=doctest.ELLIPSIS)
    assert res.attempted > 0 and res.failed == 0
