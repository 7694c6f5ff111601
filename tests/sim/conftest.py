import pytest

from fluidq import Engine, Staircase

PAPER = dict(c=0.01128, a=0.03547, b0=128)


@pytest.fixture
def paper_engine():
    return Engine(batch_time=Staircase(**PAPER), b_max=512)
