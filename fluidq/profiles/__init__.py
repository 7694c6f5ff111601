"""Built-in deployments: batch-time models fitted from measured data, with provenance.

``list_profiles()`` names them; ``load_profile(name)`` returns a :class:`Profile` whose
``engine(b_max=..., k_max=...)`` builds an :class:`~fluidq.Engine`.  Every profile says where its
numbers come from (source repository, GPU, model, tensor-parallel size, license) and how well the
model fits the measurements (held-out MAPE, R^2).

The paper profile ``paper-codellama34b-a100`` carries the constants of Li, Dai, Peng
(arXiv:2504.07347 v3): CodeLlama-34B on one A100-80GB, ``t_b = 11.28 ms + 35.47 ms * ceil(b/128)``.
Fitted profiles are stored in ``fitted.json`` beside this file (derived parameters only).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources

from ..batchtime import BatchTime, Staircase, batch_time_from_dict
from ..engine import Engine
from ..errors import ParameterError, UnknownNameError

__all__ = ["Profile", "load_profile", "list_profiles", "DEFAULT_PROFILE"]

DEFAULT_PROFILE = "paper-codellama34b-a100"


@dataclass(frozen=True, kw_only=True)
class Profile:
    """A named deployment: batch-time model, default budgets and provenance."""

    name: str
    batch_time: BatchTime
    b_max: int
    k_max: int | None = None
    kv_capacity_tokens: int | None = None
    model: str = ""
    gpu: str = ""
    tp: int = 1
    source: str = ""
    license: str = ""
    description: str = ""
    fit: dict = field(default_factory=dict)

    def engine(self, **changes) -> Engine:
        """An :class:`Engine` with this profile's model and budgets (override with keywords)."""
        kw = {"batch_time": self.batch_time, "b_max": self.b_max, "k_max": self.k_max,
              "kv_capacity_tokens": self.kv_capacity_tokens, "name": self.name}
        kw.update(changes)
        return Engine(**kw)

    def to_dict(self) -> dict:
        return {"name": self.name, "batch_time": self.batch_time.to_dict(), "b_max": self.b_max,
                "k_max": self.k_max, "kv_capacity_tokens": self.kv_capacity_tokens, "model": self.model,
                "gpu": self.gpu, "tp": self.tp, "source": self.source, "license": self.license,
                "description": self.description, "fit": self.fit}


_PAPER = Profile(
    name=DEFAULT_PROFILE,
    batch_time=Staircase(c=0.01128, a=0.03547, b0=128),
    b_max=512,
    model="CodeLlama-34B", gpu="A100-80GB", tp=1,
    source="Li, Dai, Peng, arXiv:2504.07347 v3, Eq. 4 fit",
    license="constants quoted from the paper",
    description="the paper's staircase fit (R^2 > 0.97 reported by the authors)",
    fit={"r2_reported": 0.97},
)


def _fitted() -> dict[str, Profile]:
    try:
        raw = resources.files(__name__).joinpath("fitted.json").read_text()
    except FileNotFoundError:
        return {}
    out = {}
    for d in json.loads(raw):
        d = dict(d)
        d["batch_time"] = batch_time_from_dict(d["batch_time"])
        out[d["name"]] = Profile(**d)
    return out


def _all() -> dict[str, Profile]:
    profiles = {_PAPER.name: _PAPER}
    profiles.update(_fitted())
    return profiles


def list_profiles() -> list[Profile]:
    """All built-in profiles, the paper's first."""
    return list(_all().values())


def load_profile(name: str = DEFAULT_PROFILE, *, option: str = "name") -> Profile:
    """The profile called ``name`` (see :func:`list_profiles`).

    An empty name is refused (it is not the default: pass nothing for that); ``option`` is the
    parameter the messages name (the command line passes ``"--profile"``).
    """
    if not isinstance(name, str):
        raise ParameterError(option, name, "a profile name (a string; see `fluidq profiles`)")
    if not name.strip():
        raise ParameterError(option, name, "a profile name, not an empty one (see `fluidq profiles`; leave the "
                             f"option out for the default, {DEFAULT_PROFILE})")
    profiles = _all()
    if name not in profiles:
        raise UnknownNameError("profile" if option == "name" else option, name, profiles)  # "unknown --profile 'x'"
    return profiles[name]
