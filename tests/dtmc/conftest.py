import pytest

import fluidq


@pytest.fixture
def paper_engine():
    return fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=128), b_max=512)


@pytest.fixture
def small_engine():
    """A small budget keeps chains tiny: b_max = 16, blocks of 8 tokens."""
    return fluidq.Engine(batch_time=fluidq.Staircase(c=0.01128, a=0.03547, b0=8), b_max=16)

