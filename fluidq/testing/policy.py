"""``check_policy``: the conformance check of the policy protocol (``fluidq.policies.base``)."""
from __future__ import annotations

import copy
from dataclasses import dataclass, field

import numpy as np

from ..policies.base import Batch, QueueView, RequestState, batch_violations
from ..results import Result, plain

__all__ = ["PolicyCheckResult", "check_policy"]


@dataclass(frozen=True)
class PolicyCheckResult(Result):
    """Outcome of :func:`check_policy`.

    Attributes
    ----------
    ok : bool
        True when no problem was found.
    problems : tuple of str
        Each problem in words, with the state that shows it.
    states_checked : int
        Random queue states given to ``select``.
    work_conserving : bool or None
        From :func:`fluidq.check_work_conserving` (a property, not a requirement).
    simulated : bool
        Whether the short simulations ran (``simulate=True``) without error.
    """

    policy: str
    ok: bool
    problems: tuple
    states_checked: int
    work_conserving: bool | None
    simulated: bool
    notes: tuple = field(default=())

    @property
    def inputs(self) -> dict:
        """The policy checked and whether it was simulated."""
        return {"policy": self.policy, "simulated": self.simulated}

    def to_dict(self) -> dict:
        return plain({"policy": self.policy, "ok": self.ok, "problems": list(self.problems),
                      "states_checked": self.states_checked, "work_conserving": self.work_conserving,
                      "simulated": self.simulated, "notes": list(self.notes)})

    def raise_if_failed(self) -> None:
        """Raise ``AssertionError`` listing the problems (handy inside a test)."""
        if not self.ok:
            raise AssertionError(f"policy {self.policy!r} fails the protocol:\n  " + "\n  ".join(self.problems))


def _random_view(rng, b_max, k_max, kv_free, n_max=12):
    n = int(rng.integers(0, n_max + 1))
    rs = []
    for i in range(n):
        p = int(rng.integers(1, 3 * b_max + 2))
        d = int(rng.integers(1, 40))
        kind = rng.integers(0, 3)
        if kind == 0:
            pf, dec = 0, 0
        elif kind == 1:
            pf, dec = int(rng.integers(0, p)), 0
        else:
            pf, dec = p, int(rng.integers(0, d))
        rs.append(RequestState(rid=int(10 * i + rng.integers(0, 10)), arrival_s=float(i) * 0.1, prompt_tokens=p,
                               output_tokens=d, prefilled=pf, decoded=dec,
                               first_scheduled_s=0.0 if pf or dec else float("nan"),
                               score=float(rng.normal()) if rng.random() < 0.5 else None))
    return QueueView(requests=tuple(rs), now_s=float(n), b_max=b_max, k_max=k_max, kv_free_tokens=kv_free)


def _snap(view):
    return [(r.rid, r.prompt_tokens, r.output_tokens, r.prefilled, r.decoded, r.score) for r in view.requests]


def check_policy(policy, *, n_states: int = 300, rng=0, simulate: bool = True,
                 work_conserving: bool = True) -> PolicyCheckResult:
    """Check that ``policy`` implements the policy protocol correctly.

    Checks, on ``n_states`` random queue states (budgets 1..64, with and without ``k_max`` and a
    KV-free figure): ``select(view)`` returns a :class:`~fluidq.policies.Batch`; the batch breaks
    none of (6a)-(6d) and ``k_max`` (:func:`~fluidq.policies.batch_violations`); the same view
    gives the same batch (policies must be deterministic given the view); ``select`` does not
    modify the requests it is shown; an empty queue gives an empty batch.  With ``simulate=True``
    the policy also runs two short simulations (with and without KV-cache memory) with every batch
    checked.  ``work_conserving`` is reported from :func:`fluidq.check_work_conserving`.

    Parameters
    ----------
    policy : object
        Anything with ``name`` and ``select(view) -> Batch``, or a built-in policy name.
    n_states : int
        Random states to try.
    rng : int, SeedSequence or Generator
        Seed of the random states.
    simulate : bool
        Also run the policy in :func:`fluidq.simulate`.
    work_conserving : bool
        Also search for a work-conservation counterexample (reported, not a failure).

    Returns
    -------
    PolicyCheckResult
        Call ``.raise_if_failed()`` in a test.

    Examples
    --------
    >>> from fluidq.testing import check_policy
    >>> check_policy("sarathi", n_states=50, simulate=False).ok
    True
    """
    from ..policies import resolve_policy

    pol = resolve_policy(policy)
    name = getattr(pol, "name", None)
    problems: list = []
    notes: list = []
    if not isinstance(name, str) or not name:
        problems.append("the policy has no `name` string attribute")
        name = type(pol).__name__
    gen = rng if isinstance(rng, np.random.Generator) else np.random.default_rng(rng)
    checked = 0
    try:
        empty = pol.select(QueueView(requests=(), now_s=0.0, b_max=8))
        if not isinstance(empty, Batch) or not empty.empty:
            problems.append(f"an empty queue gave {empty!r}, expected an empty Batch()")
    except Exception as exc:  # noqa: BLE001 - report any failure of user code
        problems.append(f"select() on an empty queue raised {type(exc).__name__}: {exc}")
    for _ in range(int(n_states)):
        b_max = int(gen.integers(1, 65))
        k_max = None if gen.random() < 0.5 else int(gen.integers(1, 10))
        kv = None if gen.random() < 0.7 else int(gen.integers(0, 500))
        view = _random_view(gen, b_max, k_max, kv)
        before = _snap(view)
        checked += 1
        try:
            batch = pol.select(view)
            again = pol.select(copy.deepcopy(view))
        except Exception as exc:  # noqa: BLE001
            problems.append(f"select() raised {type(exc).__name__}: {exc} (b_max={b_max}, k_max={k_max}, "
                            f"{len(view.requests)} requests)")
            break
        if not isinstance(batch, Batch):
            problems.append(f"select() returned {type(batch).__name__}, expected fluidq.policies.Batch")
            break
        bad = batch_violations(batch, view)
        if bad:
            problems.append(f"b_max={b_max}, k_max={k_max}: {bad[0]}")
            break
        if _snap(view) != before:
            problems.append("select() modified the RequestState records it was shown (they are read-only)")
            break
        if (again.prefill, again.decode) != (batch.prefill, batch.decode):
            problems.append("select() gave different batches for the same view (it must be deterministic)")
            break
    simulated = False
    if simulate and not problems:
        from ..batchtime import Staircase
        from ..engine import Engine
        from ..sim import simulate as run
        from ..workload import Geometric, Poisson, Workload

        w = Workload(arrival=Poisson(rate_per_s=8.0), prompt_tokens=Geometric(mean_tokens=20),
                     output_tokens=Geometric(mean_tokens=15))
        try:
            for cap in (None, 600):
                e = Engine(batch_time=Staircase(c=0.01, a=0.02, b0=16), b_max=64, k_max=16, kv_capacity_tokens=cap)
                r = run(e, w, pol, horizon_s=15.0, rng=int(gen.integers(0, 2**31)), method="generic",
                        check_batches=True)
                if r.n_finished == 0:
                    notes.append(f"no request finished in 15 s of simulation (kv capacity {cap})")
            simulated = True
        except Exception as exc:  # noqa: BLE001
            problems.append(f"simulation failed: {type(exc).__name__}: {exc}")
    wc = None
    if work_conserving and not problems:
        from ..policies import check_work_conserving

        res = check_work_conserving(pol)
        wc = res.work_conserving
        if not wc:
            notes.append(f"not work-conserving: {res.reason}")
    return PolicyCheckResult(policy=name, ok=not problems, problems=tuple(problems), states_checked=checked,
                             work_conserving=wc, simulated=simulated, notes=tuple(notes))
