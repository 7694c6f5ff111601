"""Work conservation, checked by search rather than declared.

A policy is work-conserving (Li, Dai, Peng, arXiv:2504.07347, §3) when every batch takes
``min(b_max, demand)`` tokens, with ``demand = sum_i (p_i + 1{p_i = 0})`` over the resident
requests (remaining prefill, or one decode token).  :func:`check_work_conserving` enumerates
small queue states exhaustively (all combinations of up to ``max_requests`` residents, each in
prefill with a few remaining sizes, partly prefilled, or decoding) for several budgets and
returns the first state where the batch is short, with the batch itself.

A search that finds nothing is evidence over the states searched, not a proof; the result says
how many states it covered.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field

from math import comb

from .._validate import MAX_BUDGET_TOKENS, integer
from ..errors import ParameterError, PolicyError
from .base import Batch, QueueView, RequestState, _shape_errors, batch_violations
from .schedulers import resolve_policy
from ..results import Result

__all__ = ["MAX_SEARCH_STATES", "WorkConservationResult", "check_work_conserving", "work_conserving_cached"]

#: the most queue states one search may visit (a second or so of ``select`` calls)
MAX_SEARCH_STATES = 200_000


@dataclass(frozen=True)
class WorkConservationResult(Result):
    """Outcome of the search: ``work_conserving``, and a ``counterexample`` when it is not.

    ``inputs`` says what was searched, JSON-ready: ``policy`` (its name), ``policy_repr`` (its ``repr``, with
    the fields that set its behaviour), ``b_max_values`` and ``max_requests`` (the search's budgets and
    largest number of residents); a result made by hand without it has ``{"policy": policy}``.
    :meth:`to_dict` is the outcome without it (as before).
    """

    policy: str
    work_conserving: bool
    counterexample: QueueView | None
    batch: Batch | None
    states_checked: int
    reason: str
    invalid: tuple = field(default=())
    inputs: dict | None = field(default=None, repr=False, compare=False)

    def __post_init__(self):
        if self.inputs is None:
            object.__setattr__(self, "inputs", {"policy": self.policy})

    def to_dict(self) -> dict:
        ce = None
        if self.counterexample is not None:
            ce = {"b_max": self.counterexample.b_max,
                  "requests": [{"rid": r.rid, "prompt_tokens": r.prompt_tokens, "prefilled": r.prefilled,
                                "output_tokens": r.output_tokens, "decoded": r.decoded}
                               for r in self.counterexample.requests],
                  "batch": {"prefill": [list(p) for p in self.batch.prefill], "decode": list(self.batch.decode)}}
        return {"policy": self.policy, "work_conserving": self.work_conserving, "states_checked": self.states_checked,
                "reason": self.reason, "counterexample": ce, "invalid": list(self.invalid)}


def _request_options(b_max: int):
    """(prompt, prefilled, output, decoded) options for one resident."""
    sizes = sorted({1, 2, max(1, b_max - 1), b_max})
    opts = [(p, 0, 2, 0) for p in sizes]          # waiting for prefill
    opts.append((b_max + 2, 2, 2, 0))              # partly prefilled
    opts += [(3, 3, 2, 0), (3, 3, 2, 1)]           # decoding, 2 or 1 tokens left
    return opts


def search_states(b_max: int, max_requests: int, k_max: int | None = None):
    """The searched queue states of one budget, in a fixed order: ``(requests, view)`` for every multiset of up
    to ``max_requests`` residents drawn from :func:`_request_options` (each in its order and reversed), seen
    under ``b_max`` (and ``k_max`` when given).  Shared by :func:`check_work_conserving` and
    :func:`fluidq.stability.bounds.k_max_floor_search`."""
    opts = _request_options(b_max)
    for n in range(1, max_requests + 1):
        for combo in itertools.combinations_with_replacement(range(len(opts)), n):
            for perm in ({tuple(combo)} | {tuple(reversed(combo))}):
                rs = [RequestState(rid=i, arrival_s=float(i), prompt_tokens=opts[j][0], prefilled=opts[j][1],
                                   output_tokens=opts[j][2], decoded=opts[j][3]) for i, j in enumerate(perm)]
                yield rs, QueueView(requests=tuple(rs), now_s=0.0, b_max=b_max, k_max=k_max)


def cached_per_policy(cache: dict, policy, compute):
    """``compute()``, remembered in ``cache`` per hashable ``policy`` (policy equality includes every field
    that changes behaviour, so one entry never serves two policies); unhashable policies are not cached."""
    try:
        key = policy if hash(policy) is not None else None
    except TypeError:
        key = None
    if key is not None and key in cache:
        return cache[key]
    res = compute()
    if key is not None:
        cache[key] = res
    return res


def check_work_conserving(policy, *, b_max_values=(2, 3, 4, 6), max_requests: int = 4) -> WorkConservationResult:
    """Search queue states for one where ``policy`` leaves budget unused while demand allows.

    Parameters
    ----------
    policy : str or Policy
        A policy name (``"sarathi"``...) or object.
    b_max_values : iterable of int
        Token budgets to try.
    max_requests : int
        Largest number of residents in a searched state.

    Returns
    -------
    WorkConservationResult
        ``work_conserving`` False with a ``counterexample`` state and the short ``batch``, or True
        with the number of states checked.  A batch breaking (6a)-(6d) or k_max ends the search: the
        policy is not a valid one, ``work_conserving`` is False, ``reason`` starts "not a valid policy",
        ``invalid`` holds the violation and ``counterexample``/``batch`` the state and the batch.

    Raises
    ------
    PolicyError
        ``policy.select`` returns something that is not a :class:`~fluidq.policies.Batch`, or entries that are not
        ``(rid, tokens)`` pairs of whole numbers (since 2026-12-07).
    """
    pol = resolve_policy(policy)
    max_requests = integer("max_requests", max_requests, minimum=1, maximum=64,
                           why="the search grows combinatorially with the residents")
    try:
        budgets = [integer("b_max", b, minimum=1, maximum=MAX_BUDGET_TOKENS,
                           why="larger budgets cannot be built by any engine") for b in b_max_values]
    except TypeError:
        raise ParameterError("b_max_values", b_max_values, "an iterable of integer budgets") from None
    if len(budgets) > 1024:
        raise ParameterError("b_max_values", f"<{len(budgets)} budgets>", "at most 1024 budgets to search")
    # every budget has 7 resident options (see _request_options); states = multisets of n of them, twice
    states = len(budgets) * sum(2 * comb(7 + n - 1, n) for n in range(1, max_requests + 1))
    if states > MAX_SEARCH_STATES:
        raise ParameterError("max_requests", max_requests, f"a search of at most {MAX_SEARCH_STATES:,} queue states",
                             f"{len(budgets)} budget(s) x up to {max_requests} residents would be {states:,} states")
    inputs = {"policy": getattr(pol, "name", repr(pol)), "policy_repr": repr(pol), "b_max_values": list(budgets),
              "max_requests": max_requests}
    checked = 0
    invalid = []
    for b_max in budgets:
        for rs, view in search_states(b_max, max_requests):
            batch = pol.select(view)
            checked += 1
            bad = batch_violations(batch, view)
            if bad and not isinstance(batch, Batch) or bad and _shape_errors(batch):  # nothing to describe
                raise PolicyError(f"policy {getattr(pol, 'name', pol)!r} is not a valid policy: with b_max={b_max} "
                                  f"and {len(rs)} residents it {bad[0]}" if not isinstance(batch, Batch) else
                                  f"policy {getattr(pol, 'name', pol)!r} is not a valid policy: with b_max={b_max} "
                                  f"and {len(rs)} residents it returned {batch!r:.120}: {bad[0]}")
            need = min(b_max, view.demand)
            if bad or batch.tokens < need:
                names = {r.rid: chr(ord("A") + r.rid) for r in rs}
                state = ", ".join(
                    f"{names[r.rid]}: {'prefill ' + str(r.prefill_left) + ' left' if r.in_prefill else 'decoding, ' + str(r.decode_left) + ' left'}"
                    for r in rs)
            if bad:  # not a valid policy: neither work-conserving nor Theorem 2's premise (its batches are not batches)
                invalid.append(f"b_max={b_max}: {bad[0]}")
                reason = (f"not a valid policy: with b_max={b_max} and residents {state} "
                          f"{getattr(pol, 'name', 'the policy')} forms {batch.describe(names)}, which breaks the "
                          f"batch constraints: {'; '.join(bad)}")
                return WorkConservationResult(getattr(pol, "name", repr(pol)), False, view, batch,
                                              checked, reason, tuple(invalid), inputs)
            if batch.tokens < need:
                reason = (f"a counterexample on a small engine (the search tries budgets from 1 up; the "
                          f"rules are the same at any budget): with b_max={b_max} and residents {state} the "
                          f"demand is {view.demand} "
                          f"but {getattr(pol, 'name', 'the policy')} forms {batch.describe(names)} "
                          f"({batch.tokens} < {need} tokens)")
                return WorkConservationResult(getattr(pol, "name", repr(pol)), False, view, batch,
                                              checked, reason, tuple(invalid), inputs)
    return WorkConservationResult(getattr(pol, "name", repr(pol)), True, None, None, checked,
                                  f"every one of {checked} searched states got a batch of min(b_max, demand) tokens",
                                  tuple(invalid), inputs)


_WC_CACHE: dict = {}


def work_conserving_cached(policy) -> WorkConservationResult:
    """:func:`check_work_conserving` with its default search, remembered per hashable policy (policy
    equality includes every field that changes behaviour, so one entry never serves two policies)."""
    return cached_per_policy(_WC_CACHE, policy, lambda: check_work_conserving(policy))
