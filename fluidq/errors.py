"""One exception tree for fluidq.

Every error raised at a public boundary derives from :class:`FluidqError` and also
from the builtin that fits (``ValueError``, ``TypeError``, ``KeyError``...), so
``except ValueError`` keeps working for callers who do not know fluidq.

Messages name the parameter, the value received, what was expected and, where
useful, a hint.  An *answer* such as "unstable" is never an exception: it is a
status in a result object.
"""
from __future__ import annotations


class FluidqError(Exception):
    """Base class of every fluidq error."""


class ParameterError(FluidqError, ValueError):
    """A parameter has a value outside its domain (NaN, negative, below one token...)."""

    def __init__(self, name: str, value, expected: str, hint: str | None = None):
        self.name = name
        self.value = value
        self.expected = expected
        self.hint = hint
        msg = f"{name}={value!r}: expected {expected}"
        if hint:
            msg += f" ({hint})"
        super().__init__(msg)


class ParameterTypeError(FluidqError, TypeError):
    """A parameter has the wrong type."""


class DataError(FluidqError, ValueError):
    """A file or table given by the user is empty, malformed or inconsistent."""


class UnknownNameError(FluidqError, KeyError):
    """A name (policy, profile, method...) is not one fluidq knows."""

    def __init__(self, kind: str, name, known):
        self.kind = kind
        self.name_given = name
        self.known = sorted(known)
        super().__init__(f"unknown {kind} {name!r}; known: {', '.join(self.known)}")

    def __str__(self) -> str:  # KeyError would otherwise quote the message
        return self.args[0]


class PolicyError(FluidqError, RuntimeError):
    """A policy returned something that is not a valid batch: not a :class:`fluidq.policies.Batch`, or a batch
    that breaks the batch constraints (6a)-(6d) or k_max.  (Also importable from ``fluidq.kernel.step`` and
    ``fluidq.sim``, where it was first defined.)"""


class ExtrapolationError(FluidqError, ValueError):
    """A tabulated model was asked for a value outside its measured range."""


class TopologyError(FluidqError, ValueError):
    """A network is not what the caller claims (cycle in a claimed DAG, unknown engine...)."""


def interrupt_in(exc: BaseException) -> KeyboardInterrupt | None:
    """The Ctrl-C behind ``exc``: ``exc`` itself when it is a ``KeyboardInterrupt``; for a ``SystemError`` (what a
    compiled function -- numba's dispatcher -- raises when the interrupt arrives inside it: "returned a result
    with an exception set"), the ``KeyboardInterrupt`` it was raised from or during (``__cause__`` /
    ``__context__``, a few links deep); else ``None``.  Other errors chained from an interrupt stay errors."""
    if isinstance(exc, KeyboardInterrupt):
        return exc
    if not isinstance(exc, SystemError):
        return None
    seen = set()
    link = exc
    for _ in range(8):
        link = link.__cause__ if link.__cause__ is not None else link.__context__
        if link is None or id(link) in seen:
            return None
        if isinstance(link, KeyboardInterrupt):
            return link
        seen.add(id(link))
    return None
