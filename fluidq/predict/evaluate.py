"""Ranking quality: Kendall's tau_b, within-model and cross-model.

PARS reports Kendall's tau_b between predicted scores and true response lengths on held-out prompts
(Tao et al., arXiv:2510.03243, §4), and cross-model generalisation: a ranker trained on one model's
lengths ranking another model's responses to the same prompts.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .._validate import array
from ..results import Result

__all__ = ["kendall_tau", "RankingEvaluation", "evaluate_ranker", "CrossModelResult", "cross_model"]


def kendall_tau(scores, lengths) -> float:
    """Kendall's tau_b of ``scores`` against ``lengths`` (NaN pairs dropped)."""
    from scipy.stats import kendalltau

    s = np.asarray(scores, float)
    L = np.asarray(lengths, float)
    if s.shape != L.shape or s.ndim != 1:
        from ..errors import ParameterError

        raise ParameterError("scores", f"<shape {s.shape}>", f"one score per length (shape {L.shape})")
    ok = np.isfinite(s) & np.isfinite(L)
    array("lengths", L[ok], min_len=2)
    return float(kendalltau(s[ok], L[ok], variant="b").statistic)


@dataclass(frozen=True)
class RankingEvaluation(Result):
    """tau_b of a ranker on held-out prompts, next to the prompt-length-only baseline."""

    tau_b: float
    baseline_tau_b: float
    n_test: int
    model: str
    method: str = "kendall tau_b on held-out prompts"
    info: dict = field(default_factory=dict)

    @property
    def inputs(self) -> dict:
        """The model whose lengths were ranked, the method and the held-out prompts."""
        return {"model": self.model, "method": self.method, "n_test": self.n_test}

    def to_dict(self) -> dict:
        return {"tau_b": self.tau_b, "baseline_tau_b": self.baseline_tau_b, "n_test": self.n_test,
                "model": self.model, "method": self.method, "info": dict(self.info)}

    def plot(self, ax=None, path=None):
        """Bars: the ranker's tau_b next to the prompt-length baseline."""
        from ..plotting import axes, finish

        fig, ax = axes(ax)
        ax.bar(["ranker", "prompt length"], [self.tau_b, self.baseline_tau_b], color=["C0", "C7"])
        ax.axhline(0, color="k", lw=0.8)
        ax.set_ylabel("Kendall tau_b (held-out)")
        ax.set_title(self.model or "length ranking", fontsize=9)
        return finish(fig, ax, path)


def evaluate_ranker(ranker, prompts, lengths, *, model: str = "") -> RankingEvaluation:
    """tau_b of ``ranker.score(prompts)`` and of the prompt length (characters) against ``lengths``."""
    prompts = list(prompts)
    s = ranker.score(prompts)
    base = np.array([len(p) for p in prompts], float)
    return RankingEvaluation(tau_b=kendall_tau(s, lengths), baseline_tau_b=kendall_tau(base, lengths),
                             n_test=len(prompts), model=model, info=dict(getattr(ranker, "info", {})))


@dataclass(frozen=True)
class CrossModelResult(Result):
    """``tau[i, j]``: trained on ``models[i]``'s lengths, evaluated on ``models[j]``'s (held-out prompts)."""

    models: tuple
    tau: np.ndarray
    n_test: int

    @property
    def inputs(self) -> dict:
        """The models ranked against each other and the held-out prompts per model."""
        return {"models": list(self.models), "n_test": self.n_test}

    def to_dict(self) -> dict:
        return {"models": list(self.models), "tau_b": self.tau.tolist(), "n_test": self.n_test}

    def plot(self, ax=None, path=None):
        from ..plotting.latency import plot_cross_model

        return plot_cross_model(self, ax=ax, path=path)


def cross_model(dataset, models, *, test_fraction: float = 0.25, rng=None, **fit_kw) -> CrossModelResult:
    """Train one ranker per model on a common train split and rank every model's held-out lengths.

    ``fit_kw`` goes to :meth:`LengthRanker.fit` (``method=``, ``delta=``...)."""
    from .ranker import LengthRanker

    rng = np.random.default_rng(rng)
    tr, te = dataset.split(test_fraction, rng=rng)
    prompts = dataset.prompts
    tau = np.full((len(models), len(models)), np.nan)
    for i, mi in enumerate(models):
        Li = dataset.of(mi)
        keep = tr[np.isfinite(Li[tr])]
        rk = LengthRanker.fit([prompts[k] for k in keep], Li[keep], rng=rng, **fit_kw)
        s = rk.score([prompts[k] for k in te])
        for j, mj in enumerate(models):
            tau[i, j] = kendall_tau(s, dataset.of(mj)[te])
    return CrossModelResult(models=tuple(models), tau=tau, n_test=len(te))
