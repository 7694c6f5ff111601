"""A join-the-shortest-queue router pools its engines into one fluid point, whose work per request is one engine
rule: engines that disagree on ``prefill_emits_token`` are refused, naming the router.  Second reading of
2026-12-06: the point took its first engine's rule, so the load was 0.1645 or 0.1795 by the stations' order."""
import pytest

from fluidq import Engine, Staircase
from fluidq.errors import ParameterError
from fluidq.fluid.compile import compile_network
from fluidq.network.model import Hop, Network, RequestClass, Router, Station

BT = Staircase(c=0.01128, a=0.03547, b0=128)


def _net(a, b):
    return Network(stations=(Station(name="A", engine=a), Station(name="B", engine=b)),
                   routers=(Router(name="R", engines=("A", "B")),),
                   classes=(RequestClass(name="c", rate_per_s=100.0,
                                         route=[Hop(engine="R", prompt_tokens=10, output_tokens=2, name="h")]),))


def test_pooled_engines_that_disagree_on_the_first_token_are_refused():
    emits, plain = Engine(batch_time=BT, b_max=512, prefill_emits_token=True), Engine(batch_time=BT, b_max=512)
    for a, b in ((emits, plain), (plain, emits)):
        with pytest.raises(ParameterError, match="router 'R'.*prefill_emits_token"):
            compile_network(_net(a, b))
    # agreeing engines: the pooled point's work is their rule's (m_p + m_d - 1 = 11, m_p + m_d = 12)
    assert [b.w for b in compile_network(_net(emits, emits)).buffers] == [11.0]
    assert [b.w for b in compile_network(_net(plain, plain)).buffers] == [12.0]
