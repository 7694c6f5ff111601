"""The batch rule of the count chains (internal): a re-export of :mod:`fluidq.policies.batch_rule`.

The rule lives in the descriptions layer (``fluidq/policies/batch_rule.py``), where
:meth:`fluidq.policies.Scheduler.select` calls it too; this module keeps the names the chain builders
import (``build.py``, ``symbolic_chain.py``, ``llm_network.py``, ``finite.py``, ``threshold.py``, ``vllm_queue.py``,
``llm_rybko.py``) and adds :func:`count_space`, the state space of the count chain.

Vectorised over states: ``NP``, ``ND``, ``JJ`` are integer arrays of the coordinates ``n_p`` (requests
waiting for or in prefill), ``n_d`` (requests decoding) and ``j`` (prompt tokens the head prompt already
received; only for fixed prompts under a chunking scheduler).
"""
from __future__ import annotations

import numpy as np

from ..policies.batch_rule import (budgets, check_fixed_prompt, decode_tokens, fits, fixed_prefill,
                                   fixed_prefill_counts, prefill_budget, schedulable, take_prompts,
                                   whole_prompts)
from .state import StateSpace

__all__ = ["budgets", "check_fixed_prompt", "count_space", "decode_tokens", "fits", "fixed_prefill",
           "fixed_prefill_counts", "prefill_budget", "schedulable", "take_prompts", "whole_prompts"]


def count_space(max_prefill: int, max_decode: int, head_positions: int) -> StateSpace:
    """The states ``(n_p, n_d, j)`` with ``n_p <= max_prefill``, ``n_d <= max_decode``, ``j < head_positions``.

    ``j > 0`` needs a head prompt, so ``(0, n_d, j > 0)`` is not a state.  States are ordered
    lexicographically in ``(n_p, n_d, j)``.
    """
    if head_positions > 1:
        valid = np.ones((max_prefill + 1, max_decode + 1, head_positions), dtype=bool)
        valid[0, :, 1:] = False
    else:
        valid = np.ones((max_prefill + 1, max_decode + 1, 1), dtype=bool)
    return StateSpace.from_mask(("n_p", "n_d", "j"), valid.shape, valid)
