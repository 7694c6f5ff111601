"""An iteration model whose iterations all take ``T`` seconds, whatever is in them: a capacity the tests can
work out by hand (k_max residents, one iteration per output token).  Shared by test_simulate_capacity.py and
test_simulate_saturation.py."""
import numpy as np

T = 0.01  # seconds per iteration


class Constant:
    """An iteration model whose iterations all take ``T``."""
    n_layers, source, name = 1, "constant", "constant"

    def time_shape(self, pc, kp, nd, kv, n_emit=None):
        return np.full(np.broadcast(np.asarray(pc, float), np.asarray(nd, float)).shape, T)[()]

    def decode_only(self, n, kv):
        return self.time_shape(0.0, 0.0, n, kv)

    def time(self, prefill_chunks=(), decode_contexts=()):
        return T
