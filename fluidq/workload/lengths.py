"""Token-length distributions for prompts (``v_p``) and outputs (``v_d``).

All lengths are integers >= 1; a fixed length, a mean and an empirical value are at most
``MAX_REQUEST_TOKENS`` (2**30, see :mod:`fluidq._validate`).  Each distribution exposes ``mean``, ``mean_square`` (``E[L^2]``), ``sample(rng, n)``,
``is_memoryless`` (geometric only) and, when its support is finite, ``support()`` giving
``(values, probabilities)`` -- what the DTMC builder needs.

* :class:`Fixed` a constant (an ``int`` given to a :class:`~fluidq.Workload` becomes one)
* :class:`Geometric` on ``{1, 2, ...}`` with the given mean (memoryless)
* :class:`PoissonLength` ``1 + Poisson(mean - 1)``
* :class:`LogNormal` ``ceil(X)`` with ``log X ~ Normal(mu, sigma)``
* :class:`Empirical` values with weights (e.g. lengths from a trace)
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np

from .._validate import MAX_REQUEST_TOKENS, REQUEST_WHY, array, integer, real
from ..errors import ParameterError, ParameterTypeError

__all__ = ["Empirical", "Fixed", "Geometric", "Length", "LogNormal", "PoissonLength", "as_length"]


def _mean_tokens(value) -> float:
    v = real("mean_tokens", value, maximum=MAX_REQUEST_TOKENS, why=REQUEST_WHY)
    if v < 1:
        raise ParameterError("mean_tokens", value, "a mean >= 1 token")
    return v


#: LogNormal: ``sigma`` at most this (token lengths measured in practice have sigma of 0.5..2).
_MAX_SIGMA = 10.0
#: LogNormal: ``mu`` at least this (``exp(mu)`` underflows to 0 near -745; every draw is 1 token long
#: before that).
_MIN_MU = -700.0
#: LogNormal: ``E[ceil X]`` is summed exactly over ``k < _EXACT_TERMS``; the tail beyond is the
#: closed-form integral with the Euler-Maclaurin correction (smooth at that scale).
_EXACT_TERMS = 2**14


def _lognormal_moments(mu: float, sigma: float) -> tuple[float, float]:
    """``(E[ceil X], E[ceil(X)^2])`` for ``log X ~ Normal(mu, sigma)``.

    ``E[ceil X] = sum_{k>=0} P(X > k)`` and ``E[ceil(X)^2] = sum_{k>=0} (2k+1) P(X > k)``: the terms
    ``k < K`` are summed, and ``sum_{k>=K} f(k) = int_K^inf f + f(K)/2 - f'(K)/12`` (Euler-Maclaurin)
    with the integrals in closed form (partial moments of the log-normal), so a heavy tail is
    neither truncated nor enumerated.
    """
    from scipy.special import log_ndtr, ndtr

    K = _EXACT_TERMS
    k = np.arange(0, K, dtype=float)
    with np.errstate(divide="ignore", over="ignore"):  # log 0 = -inf; a tiny sigma gives +-inf: sf 1 or 0
        z = (np.log(k) - mu) / sigma
    sf = ndtr(-z)  # P(X > k); log(0) = -inf gives 1
    lk = math.log(K)
    zK = (lk - mu) / sigma
    sfK = float(ndtr(-zK))
    pdfK = math.exp(-0.5 * zK * zK) / (K * sigma * math.sqrt(2 * math.pi))

    def partial(j: int) -> float:  # E[X^j; X > K] = exp(j mu + j^2 s^2/2) Phi((mu + j s^2 - log K)/s)
        return math.exp(j * mu + j * j * sigma * sigma / 2 + float(log_ndtr((mu + j * sigma * sigma - lk) / sigma)))

    int1 = max(partial(1) - K * sfK, 0.0)  # int_K^inf P(X > x) dx = E[(X - K)+]
    int2 = max(partial(2) - K * K * sfK, 0.0)  # int_K^inf 2x P(X > x) dx = E[(X^2 - K^2)+]
    tail1 = int1 + sfK / 2 + pdfK / 12  # f = sf, f' = -pdf
    tail2 = int2 + int1 + (2 * K + 1) * sfK / 2 - (2 * sfK - (2 * K + 1) * pdfK) / 12
    return float(np.sum(sf)) + tail1, float(np.sum((2 * k + 1) * sf)) + tail2


@dataclass(frozen=True, kw_only=True)
class Length:
    """Base class of length distributions (tokens, integers >= 1)."""

    is_memoryless = False

    @property
    def mean(self) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def mean_square(self) -> float:  # pragma: no cover - abstract
        """``E[L^2]`` (length-biased averages need it)."""
        raise NotImplementedError

    def sample(self, rng: np.random.Generator, n: int) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def support(self):
        """``(values, probabilities)`` for a finite support, else ``None``."""
        return

    def to_dict(self) -> dict:
        from dataclasses import asdict

        return {"kind": type(self).__name__, **asdict(self)}


@dataclass(frozen=True, kw_only=True)
class Fixed(Length):
    """Always ``n`` tokens."""

    n: int

    def __post_init__(self):
        object.__setattr__(self, "n", integer("n", self.n, minimum=1, maximum=MAX_REQUEST_TOKENS, why=REQUEST_WHY))

    @property
    def mean(self):
        return float(self.n)

    @property
    def mean_square(self):
        return float(self.n) ** 2

    def sample(self, rng, n):
        return np.full(int(n), self.n, dtype=np.int64)

    def support(self):
        return np.array([self.n]), np.array([1.0])


@dataclass(frozen=True, kw_only=True)
class Geometric(Length):
    """Geometric on ``{1, 2, ...}``: ``P(L = k) = p (1-p)^(k-1)``, ``p = 1/mean``."""

    mean_tokens: float
    is_memoryless = True

    def __post_init__(self):
        object.__setattr__(self, "mean_tokens", _mean_tokens(self.mean_tokens))

    @property
    def mean(self):
        return self.mean_tokens

    @property
    def p(self) -> float:
        """Per-token completion probability ``1/mean``."""
        return 1.0 / self.mean_tokens

    @property
    def mean_square(self):
        return (2.0 - self.p) / self.p ** 2

    def sample(self, rng, n):
        return rng.geometric(self.p, size=int(n)).astype(np.int64)


@dataclass(frozen=True, kw_only=True)
class PoissonLength(Length):
    """``1 + Poisson(mean - 1)`` tokens (shifted so that every request has a token)."""

    mean_tokens: float

    def __post_init__(self):
        object.__setattr__(self, "mean_tokens", _mean_tokens(self.mean_tokens))

    @property
    def mean(self):
        return self.mean_tokens

    @property
    def mean_square(self):
        mu = self.mean_tokens - 1.0
        return 1.0 + 3.0 * mu + mu * mu

    def sample(self, rng, n):
        return 1 + rng.poisson(self.mean_tokens - 1.0, size=int(n)).astype(np.int64)


@dataclass(frozen=True, kw_only=True)
class LogNormal(Length):
    """``ceil(X)`` tokens with ``log X ~ Normal(mu, sigma)`` (heavy-tailed lengths).

    Use :meth:`from_mean` to give the mean of ``X`` instead of ``mu``.
    """

    mu: float
    sigma: float
    _mean: float = field(default=float("nan"), init=False, repr=False, compare=False)
    _mean_square: float = field(default=float("nan"), init=False, repr=False, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "sigma", real("sigma", self.sigma, positive=True, maximum=_MAX_SIGMA,
                                               why="measured token lengths have sigma 0.5..2; above 10 "
                                                   "nearly all of the mean sits in draws beyond int64"))
        top = math.log(MAX_REQUEST_TOKENS) - self.sigma ** 2 / 2  # E[X] = exp(mu + sigma^2/2) <= 2**30
        object.__setattr__(self, "mu", real("mu", self.mu, minimum=_MIN_MU, maximum=top,
                                            why=f"the mean exp(mu + sigma^2/2) must be <= {MAX_REQUEST_TOKENS:,} "
                                                "tokens, and exp(mu) underflows to 0 below -745"))
        m1, m2 = _lognormal_moments(self.mu, self.sigma)
        object.__setattr__(self, "_mean", max(m1, 1.0))
        object.__setattr__(self, "_mean_square", max(m2, 1.0))

    @classmethod
    def from_mean(cls, mean_tokens: float, sigma: float) -> LogNormal:
        """``mu`` such that ``E[X] = mean_tokens``: a mean of at least one token, as for :class:`Geometric`
        (a smaller one would be served as a mean of about one token and a half, every draw rounded up)."""
        mean_tokens = _mean_tokens(mean_tokens)
        sigma = real("sigma", sigma, positive=True, maximum=_MAX_SIGMA,
                     why="measured token lengths have sigma 0.5..2; above 10 nearly all of the mean sits in "
                         "draws beyond int64")
        return cls(mu=math.log(mean_tokens) - sigma * sigma / 2, sigma=sigma)

    @property
    def mean(self):
        return self._mean

    @property
    def mean_square(self):
        return self._mean_square

    def sample(self, rng, n):
        return np.ceil(rng.lognormal(self.mu, self.sigma, size=int(n))).astype(np.int64)

    def to_dict(self):
        return {"kind": "LogNormal", "mu": self.mu, "sigma": self.sigma}


@dataclass(frozen=True, kw_only=True)
class Empirical(Length):
    """Lengths drawn from ``values`` with probabilities proportional to ``weights``."""

    values: tuple
    weights: tuple | None = None

    def __post_init__(self):
        v = array("values", self.values, positive=True)
        if np.any(v != np.round(v)):
            raise ParameterError("values", "<non-integer lengths>", "integer token counts >= 1")
        if np.any(v > MAX_REQUEST_TOKENS):
            i = int(np.flatnonzero(v > MAX_REQUEST_TOKENS)[0])
            raise ParameterError("values", f"<array with {v[i]:g} at index {i}>",
                                 f"token counts <= {MAX_REQUEST_TOKENS:,}", REQUEST_WHY)
        if self.weights is None:
            w = np.ones_like(v)
        else:
            w = array("weights", self.weights, nonnegative=True)
            if w.shape != v.shape:
                raise ParameterError("weights", f"<{w.size} weights>", f"{v.size} weights, one per value")
            if not np.any(w > 0):
                raise ParameterError("weights", "<all zero>", "some weight > 0")
        w = w / w.max()  # relative weights: a sum of huge ones (1e308 each) would overflow
        uv, inv = np.unique(v.astype(np.int64), return_inverse=True)
        uw = np.bincount(inv, weights=w)
        object.__setattr__(self, "values", tuple(int(x) for x in uv))
        object.__setattr__(self, "weights", tuple(float(x) for x in uw / uw.sum()))

    @property
    def mean(self):
        # math.fsum, not np.dot: BLAS's dot sums in an order (and with FMA) that depends on the CPU, so the mean of
        # 200, 210, ..., 250 read 224.99999999999997 on one machine and 225.0 on another (and a CLI line printed
        # "m_p=225.0"); fsum rounds the products' sum once, the same everywhere
        v = np.asarray(self.values, dtype=float)
        return math.fsum(v * np.asarray(self.weights))

    @property
    def mean_square(self):
        v = np.asarray(self.values, dtype=float)
        return math.fsum(v * v * np.asarray(self.weights))

    def sample(self, rng, n):
        return rng.choice(np.asarray(self.values, dtype=np.int64), size=int(n), p=np.asarray(self.weights))

    def support(self):
        return np.asarray(self.values), np.asarray(self.weights)

    def to_dict(self):
        return {"kind": "Empirical", "n_values": len(self.values), "mean": self.mean}


def as_length(name: str, value) -> Length:
    """An int becomes :class:`Fixed`; a :class:`Length` passes; anything else raises."""
    if isinstance(value, Length):
        return value
    if isinstance(value, bool):
        raise ParameterTypeError(f"{name}={value!r}: expected an int or a length distribution")
    if isinstance(value, (int, np.integer)) or (isinstance(value, float) and value.is_integer()):
        return Fixed(n=integer(name, value, minimum=1, maximum=MAX_REQUEST_TOKENS, why=REQUEST_WHY))
    if isinstance(value, float) and not math.isfinite(value):
        raise ParameterError(name, value, "a finite whole number of tokens (>= 1) or a length distribution")
    if isinstance(value, float):
        raise ParameterError(name, value, "an integer number of tokens or a distribution",
                             f"for a mean of {value} use fluidq.Geometric(mean_tokens={value})")
    raise ParameterTypeError(f"{name}={value!r}: expected an int or a fluidq length distribution "
                             "(Fixed, Geometric, PoissonLength, LogNormal, Empirical)")
