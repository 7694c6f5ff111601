"""Scheduling policies: batch-formation rule x ordering.

``base``          the protocol: RequestState, QueueView, Batch, batch_violations
``orderings``     FCFS and the ordering interface (KeyOrdering)
``schedulers``    Scheduler and the five named engine schedulers, resolve_policy
``batch_rule``    the batch rule as functions of queue counts (select and the count chains call it)
``conservation``  check_work_conserving: search for a state where the batch is short
"""
from .base import Batch, Policy, QueueView, RequestState, batch_violations
from .conservation import WorkConservationResult, check_work_conserving
from .orderings import FCFS, KeyOrdering, Ordering
from .schedulers import (POLICY_NAMES, VLLM, FasterTransformer, Orca, Sarathi, Scheduler, VLLMChunked,
                         resolve_policy)

__all__ = ["Batch", "Policy", "QueueView", "RequestState", "batch_violations", "Ordering", "FCFS",
           "KeyOrdering", "Scheduler", "FasterTransformer", "VLLM", "Orca", "Sarathi", "VLLMChunked",
           "resolve_policy", "POLICY_NAMES", "check_work_conserving", "WorkConservationResult"]
