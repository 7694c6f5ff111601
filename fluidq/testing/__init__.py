"""Public conformance checks for user code that plugs into fluidq.

``check_policy(policy)``  does a scheduling policy honour the protocol everywhere the built-ins run?
``fluidq.testing.strategies``  hypothesis strategies (queue states, engines, workloads) for
property tests of one's own policies (needs ``hypothesis``, the ``test`` extra).
"""
from .policy import PolicyCheckResult, check_policy

__all__ = ["PolicyCheckResult", "check_policy"]
