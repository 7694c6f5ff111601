"""Helpers shared by tests/cli/test_capacity_headline_vs_kv_rules.py and test_capacity_geometric.py: the iteration
models that take the capacity line's full roofline apart, step by step, towards the load basis's batch time."""
import numpy as np


class Iterations:
    """An iteration model for predict_capacity from ``time_shape(prefill, kv_prefill, n_decode, kv_decode)``."""

    source = "test"

    def __init__(self, fn):
        self.time_shape = fn

    def decode_only(self, n, kv):
        return float(self.time_shape(0.0, 0.0, n, kv))


def one_head(rf):
    """The roofline ``rf`` charging one LM head an iteration."""
    return Iterations(lambda pc, kvp, nd, kvd, n_emit=None: rf.time_shape(pc, kvp, nd, kvd, 1.0))


def as_decodes(rf):
    """No attention of the chunk to its own tokens: the batch's b tokens read as b decodes holding the decodes'
    context between them, one LM head."""
    def shape(pc, kvp, nd, kvd, n_emit=None):
        nd = np.asarray(nd, dtype=float)
        b = np.maximum(np.asarray(pc, dtype=float) + nd, 1.0)
        return rf.time_shape(0.0, 0.0, b, nd * np.asarray(kvd, dtype=float) / b, 1.0)

    return Iterations(shape)
