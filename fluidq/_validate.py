"""Small validators used at every public boundary (internal)."""
from __future__ import annotations

import math
import warnings
from numbers import Integral, Real

import numpy as np

from .errors import ParameterError, ParameterTypeError

# ---------------------------------------------------------------------------------------------------
# Numeric limits shared by every public boundary (Engine, Workload, lengths, arrivals, batch-time
# models, capacity, regions, the CLI).  Each is far beyond any real deployment and far below what
# would overflow an array, a float or the LP solver; the ``*_WHY`` strings go into the message.
# ---------------------------------------------------------------------------------------------------

#: Most tokens in one batch (``b_max``), and most requests in one batch (``k_max``): 2**24.
#: vLLM's ``max_num_batched_tokens`` reaches about 1M tokens with long contexts; the analyses
#: enumerate batch sizes ``1..b_max`` (regions, tabulated models), one array slot each, so 2**24
#: keeps every such array below a few hundred MB.  1e20 would ask numpy for exabytes.
MAX_BUDGET_TOKENS = 2**24
BUDGET_WHY = ("a batch of more tokens or requests than that is far beyond any engine (vLLM's "
              "max_num_batched_tokens reaches about 1M), and the analyses enumerate batch sizes up to b_max")

#: Largest KV-cache capacity in tokens: 1e12 (today's caches hold tens of millions of tokens).
MAX_KV_TOKENS = 10**12
KV_WHY = "KV caches hold tens of millions of tokens; more than 1e12 is no real cache"

#: Longest prompt or output of one request (fixed length, or the mean of a distribution): 2**30.
#: Long-context models take up to about 1e7 tokens; ``E[L^2]`` of such lengths stays far from
#: overflow and sampled lengths fit in int64.
MAX_REQUEST_TOKENS = 2**30
REQUEST_WHY = ("a request of more tokens than that is far beyond any model's context (about 1e7 at most), and "
               "its square must stay a finite float")

#: Arrival rates, requests per second: within [1e-9, 1e9] (one request in 30 years ... a billion
#: per second); the offered load ``rate * tokens`` then stays a finite float.
MIN_RATE_PER_S = 1e-9
MAX_RATE_PER_S = 1e9
RATE_WHY = ("real traffic is between one request in 30 years (1e-9 req/s) and a billion per second (1e9); "
            "rate x tokens must stay a finite number")

#: Coefficient of variation of gamma inter-arrival times: within [1e-6, 100].  The gamma shape is
#: ``1/cv**2``: above 100 nearly every gap rounds to 0 (the generator stalls), below 1e-6 the
#: arrivals are periodic to float precision (use Periodic).
MIN_CV = 1e-6
MAX_CV = 100.0
CV_WHY = ("the gamma shape is 1/cv^2: above cv=100 almost every gap is 0 in floating point and the arrivals "
          "never reach the horizon; below 1e-6 they are periodic (use periodic arrivals)")

#: Most arrivals one call of ``Arrival.times`` draws (``n`` or ``rate * horizon``): 1e8 (800 MB).
MAX_ARRIVALS = 10**8
ARRIVALS_WHY = "1e8 arrival times already take 800 MB of memory"

#: Identical engines behind a router (``n_engines``, ``--engines``): 10**6.
MAX_ENGINES = 10**6
ENGINES_WHY = "no deployment has more than a million engines behind one router"

#: Batch-time constants, seconds: every nonzero constant (``c``, ``a``, a measured time) lies in
#: [1e-12, 1e6] (a picosecond .. 11.6 days per batch).  With ``b <= MAX_BUDGET_TOKENS``, ``t(b)``
#: stays within [1e-12, 2e13] s and ``b/t(b)`` a finite, nonzero number of tokens per second;
#: ``c=0, a=1e-300`` would give 1e305 tokens/s.
MIN_BATCH_SECONDS = 1e-12
MAX_BATCH_SECONDS = 1e6
SECONDS_WHY = ("a batch time is between a picosecond (1e-12 s) and 11.6 days (1e6 s); outside it t(b) or "
               "b/t(b) is no finite, nonzero number")

#: Token rates of a point in the (prefill, decode) plane, tokens per second: at most 1e18, and a
#: nonzero point has a coordinate >= 1e-12 (the LP and the scale 1/point must stay finite).
MIN_TOKEN_RATE = 1e-12
MAX_TOKEN_RATE = 1e18
TOKEN_RATE_WHY = ("token rates between 1e-12 and 1e18 tokens/s keep the time-sharing LP and the scale "
                  "(how far the point may grow) finite")


#: vLLM's KV-cache block sizes, tokens: ``CacheConfig.block_size`` is ``BlockSize = Literal[1, 8, 16, 32, 64, 128,
#: 256]`` in vLLM's API reference for v0.11 to v0.16 (v0.9 and v0.10: the same without 256; docs.vllm.ai,
#: ``vllm.config.cache``, read 2026-12-07).  Later releases type it as any positive integer and align it to the
#: attention backend's supported sizes (the profiles shipped with fluidq were measured on vLLM 0.19.0 with blocks of
#: 16).  A block size the user gives for vLLM outside this set is planned as given, with a
#: :class:`VllmBlockSizeWarning`; a block size a run records is vLLM's own (not checked against the set), and
#: :class:`fluidq.engine.Memory`'s paged cache is any engine's (other servers page in other sizes).
VLLM_BLOCK_SIZES = (1, 8, 16, 32, 64, 128, 256)
VLLM_BLOCK_WHY = ("vLLM 0.9-0.16 take only these for --block-size (CacheConfig.block_size); later releases take "
                  "other sizes and align them to the attention backend's, so check that your vLLM accepts it")


class VllmBlockSizeWarning(UserWarning):
    """A block size for vLLM outside :data:`VLLM_BLOCK_SIZES`: planned as given; the warning says which vLLM
    releases take it.  ``name`` and ``value``: the parameter and the block size.  The command line prints it once,
    as one ``fluidq COMMAND: warning:`` line on stderr naming the flag (:meth:`said_as`)."""

    def __init__(self, name: str, value: int):
        self.name, self.value = name, value
        super().__init__(self.said_as(f"{name}={value}"))

    def said_as(self, given: str) -> str:
        """The warning's text with the block size named as ``given`` (``--block-size 7`` on the command line)."""
        return (f"{given} is not one of vLLM's block sizes {', '.join(map(str, VLLM_BLOCK_SIZES))}: planned as "
                f"given; {VLLM_BLOCK_WHY}")


def vllm_block_size(name: str, value) -> int:
    """``value`` as vLLM's KV block size: a whole number within [1, MAX_BUDGET_TOKENS], or a ``ParameterError``
    naming ``name``; one outside :data:`VLLM_BLOCK_SIZES` is returned as given, with a
    :class:`VllmBlockSizeWarning` (later vLLM releases take other sizes and align them to the attention
    backend's)."""
    b = integer(name, value, minimum=1, maximum=MAX_BUDGET_TOKENS, why=BUDGET_WHY)
    if b not in VLLM_BLOCK_SIZES:
        warnings.warn(VllmBlockSizeWarning(name, b), stacklevel=2)
    return b


def load_rate(name: str, load: float, capacity_per_s: float) -> float:
    """The arrival rate ``load x capacity_per_s`` of a load given as a fraction of a capacity, refused naming
    ``name`` (the load's own parameter or flag) when it leaves [MIN_RATE_PER_S, MAX_RATE_PER_S]."""
    lam = load * capacity_per_s
    if not MIN_RATE_PER_S <= lam <= MAX_RATE_PER_S:
        raise ParameterError(name, load, f"a load whose arrival rate (load x {capacity_per_s:.6g} req/s) is within "
                             f"[{MIN_RATE_PER_S:g}, {MAX_RATE_PER_S:g}] req/s, so at most "
                             f"{MAX_RATE_PER_S / capacity_per_s:.4g} and at least {MIN_RATE_PER_S / capacity_per_s:.4g}",
                             RATE_WHY)
    return lam


def real(name: str, value, *, positive: bool = False, nonnegative: bool = False,
         allow_none: bool = False, maximum: float | None = None, minimum: float | None = None,
         why: str | None = None) -> float | None:
    """Return ``value`` as a finite float, or raise naming ``name``.

    ``minimum``/``maximum`` bound the value (inclusive) where the computation cannot represent more:
    ``why`` says so in the message (e.g. "a horizon of more than 1e12 s cannot be simulated").
    """
    if value is None and allow_none:
        return None
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ParameterTypeError(f"{name}={value!r}: expected a real number, got {type(value).__name__}")
    try:
        v = float(value)
    except OverflowError:  # an int beyond the float range (10**400)
        raise ParameterError(name, value, "a finite number") from None
    if not math.isfinite(v):
        raise ParameterError(name, value, "a finite number")
    if positive and not v > 0:
        raise ParameterError(name, value, "a number > 0")
    if nonnegative and not v >= 0:
        raise ParameterError(name, value, "a number >= 0")
    if minimum is not None and v < minimum:
        raise ParameterError(name, value, f"a number >= {_bound(minimum)}", why)
    if maximum is not None and v > maximum:
        raise ParameterError(name, value, f"a number <= {_bound(maximum)}", why)
    return v


def _bound(x) -> str:
    """A bound for a message: an int with thousands separators (2**30 -> 1,073,741,824), a float as %g."""
    return f"{x:,}" if isinstance(x, int) and not isinstance(x, bool) else f"{x:g}"


def integer(name: str, value, *, minimum: int | None = None, allow_none: bool = False,
            maximum: int | None = None, why: str | None = None) -> int | None:
    """Return ``value`` as an int (integral floats accepted), or raise naming ``name``.

    ``maximum`` bounds it (inclusive) where a larger value cannot be built; ``why`` says so.
    """
    if value is None and allow_none:
        return None
    if isinstance(value, bool):
        raise ParameterTypeError(f"{name}={value!r}: expected an integer, got bool")
    if isinstance(value, Integral):
        v = int(value)
    elif isinstance(value, Real) and math.isfinite(float(value)) and float(value).is_integer():
        v = int(value)
    else:
        if isinstance(value, Real):
            raise ParameterError(name, value, "an integer")
        raise ParameterTypeError(f"{name}={value!r}: expected an integer, got {type(value).__name__}")
    if minimum is not None and v < minimum:
        raise ParameterError(name, value, f"an integer >= {minimum:,}")
    if maximum is not None and v > maximum:
        raise ParameterError(name, value, f"an integer <= {maximum:,}", why)
    return v


def array(name: str, values, *, positive: bool = False, nonnegative: bool = False,
          ndim: int = 1, min_len: int = 1) -> np.ndarray:
    """Return a finite float array, or raise naming ``name``."""
    raw = values if isinstance(values, np.ndarray) else None
    try:
        if raw is None:
            raw = np.asarray(values)
        if raw.dtype.kind in "bUSc":  # True, "5", 1j: not real numbers, even if numpy would convert them
            raise ParameterError(name, f"<array of {raw.dtype}>", "an array of numbers")
        arr = np.asarray(raw, dtype=float)
    except (TypeError, ValueError, OverflowError) as exc:
        if isinstance(exc, ParameterError):
            raise
        raise ParameterError(name, values, "an array of numbers") from exc
    if arr.ndim != ndim:
        raise ParameterError(name, f"<array of shape {arr.shape}>", f"a {ndim}-d array")
    if arr.size < min_len:
        raise ParameterError(name, f"<array of length {arr.size}>", f"at least {min_len} value(s)")
    if not np.all(np.isfinite(arr)):
        bad = int(np.flatnonzero(~np.isfinite(arr.ravel()))[0])
        raise ParameterError(name, f"<array with {arr.ravel()[bad]} at index {bad}>", "finite values")
    if positive and np.any(arr <= 0):
        bad = int(np.flatnonzero(arr.ravel() <= 0)[0])
        raise ParameterError(name, f"<array with {arr.ravel()[bad]} at index {bad}>", "values > 0")
    if nonnegative and np.any(arr < 0):
        bad = int(np.flatnonzero(arr.ravel() < 0)[0])
        raise ParameterError(name, f"<array with {arr.ravel()[bad]} at index {bad}>", "values >= 0")
    return arr


def check_rng(rng, name: str = "rng"):
    """``rng`` as accepted by :func:`numpy.random.default_rng` (None, a seed >= 0, a SeedSequence, a Generator),
    or a ParameterError naming ``name``."""
    if rng is None or isinstance(rng, (np.random.Generator, np.random.SeedSequence)):
        return rng
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, (bool, np.bool_)):
        if rng < 0:
            raise ParameterError(name, rng, "a seed >= 0 (or None, a numpy SeedSequence or Generator)")
        return int(rng)
    raise ParameterError(name, rng, "None, an integer seed >= 0, a numpy SeedSequence or a numpy Generator")


def seed_sequence(rng, name: str = "rng") -> np.random.SeedSequence:
    """The root SeedSequence of ``rng`` (checked by :func:`check_rng`): a SeedSequence as is, one 63-bit seed
    drawn from a Generator, else from the seed (None: fresh entropy)."""
    rng = check_rng(rng, name)
    if isinstance(rng, np.random.SeedSequence):
        return rng
    if isinstance(rng, np.random.Generator):
        return np.random.SeedSequence(int(rng.integers(2**63)))
    return np.random.SeedSequence(rng)


def budget_holds_seqs(name: str, b_max: int, k_max: int | None) -> None:
    """vLLM's scheduler refuses ``--max-num-batched-tokens`` below ``--max-num-seqs`` (``SchedulerConfig``: every
    running sequence needs a token of the iteration's budget); a deployment of vLLM's is refused the same way here,
    naming ``name``, the budget's parameter."""
    if k_max is not None and b_max < k_max:
        raise ParameterError(name, b_max, f"at least max_num_seqs ({k_max:,}): vLLM refuses a token budget below "
                             "its sequence limit", "raise max_num_batched_tokens or lower max_num_seqs")
