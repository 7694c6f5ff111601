"""Where seeded simulations saturate, per load basis: the measured bands the verdicts quote.

Each band is read off the tables of validation/RESULTS.md that measure it (the column named in ``column``), so a
verdict's words say what was measured and on how many engines, not a range written once by hand.
``tests/stability/test_measured_bands.py`` reads those tables again and holds each constant to them.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MeasuredBand", "SATURATION_PER_BASIS", "SATURATION_WHERE_K_MAX_BINDS"]


@dataclass(frozen=True)
class MeasuredBand:
    """The spread of ``basis / simulated saturation`` over the engines measured.

    Attributes
    ----------
    basis_over_sim : tuple of float
        The smallest and largest ratio of the basis to the simulated saturation (as the table prints them).
    engines : int
        How many engines (rows where the KV cache binds).
    column : str
        The RESULTS.md column the ratios are read from.
    source : str
        Where: the sections of validation/RESULTS.md, with their dates.
    """

    basis_over_sim: tuple
    engines: int
    column: str
    source: str
    #: what the engines were, in the words (``saturate_words``, ``above_words``' callers)
    engines_words: str = "KV-bound engines"
    #: of ``engines``, how many were held out (seeded random engines no constant or change was fitted on), and the
    #: mean ``|basis / sim - 1|`` over those (``None`` where the source does not say)
    held_out: int | None = None
    held_out_mean_abs_error: float | None = None

    @property
    def sim_over_basis(self) -> tuple:
        """Where simulations saturate, as multiples of the basis: ``(1 / high, 1 / low)``."""
        lo, hi = self.basis_over_sim
        return 1.0 / hi, 1.0 / lo

    def saturate_words(self) -> str:
        """``"seeded simulations of 17 KV-bound engines saturate at 0.78-1.21 times it"``."""
        a, b = self.sim_over_basis
        return f"seeded simulations of {self.engines} {self.engines_words} saturate at {a:.2f}-{b:.2f} times it"

    def above_words(self) -> str:
        """``"5-46 % above where seeded simulations saturate"`` (a basis that overstates)."""
        lo, hi = self.basis_over_sim
        return f"{100 * (lo - 1):.0f}-{100 * (hi - 1):.0f} % above where seeded simulations saturate"

    def errors_words(self) -> str:
        """``"-0.3 to +3.8 %"``: the band as the errors ``basis / sim - 1`` the table prints (one decimal)."""
        lo, hi = self.basis_over_sim
        return f"{100 * (lo - 1):+.1f} to {100 * (hi - 1):+.1f} %"

    def within_words(self) -> str:
        """``"-0.3 to +3.8 % of where seeded simulations of 12 roofline engines where max_num_seqs binds saturate
        (mean |error| 1.4 % on the 8 held out)"``: a band that lies close to the simulations, said as the errors
        the table prints (one decimal)."""
        held = ("" if self.held_out is None or self.held_out_mean_abs_error is None else
                f" (mean |error| {100 * self.held_out_mean_abs_error:.1f} % on the {self.held_out} held out)")
        return (f"{self.errors_words()} of where seeded simulations of {self.engines} "
                f"{self.engines_words} saturate{held}")


_SOURCE = ('validation/RESULTS.md, "the load basis where the KV cache binds" (2026-12-07, 13 engines) and "small KV '
           'caches against the load basis" (2026-12-07, 4 engines)')

#: per load basis (:func:`fluidq.dtmc.load_basis.load_basis`'s names), measured where the KV cache binds: Sarathi
#: served under overload at 1.3x the larger basis, 4 seeded runs each.  ``kv_rules``: the 13 engines of h-kvbasis
#: (0.842-1.040) and four small caches (Gemma-2-9B on an A10G, 4,272 tokens, at 100 + 100: 1.160; on an L4: 1.149;
#: on the A10G at 500 + 200: 1.277; Llama-3.1-8B on an A10G, 31,632 tokens, 100 + 100: 0.828).  ``max_throughput``
#: (b/t(b) at the batch of mean footprints): 1.052-1.420 on the 13, 1.172-1.455 on the four.
SATURATION_PER_BASIS = {
    "kv_rules": MeasuredBand(basis_over_sim=(0.828, 1.277), engines=17, column="KV rules / sim", source=_SOURCE),
    "max_throughput": MeasuredBand(basis_over_sim=(1.052, 1.455), engines=17, column="max_thr / sim",
                                   source=_SOURCE),
}

_SWITCH_SOURCE = ('validation/RESULTS.md, "the load basis through the switch from the KV cache to max_num_seqs" '
                  '(2026-12-07, 12 engines)')

#: where the ``kv_rules`` basis has ``capacity.binding == "k_max"`` (max_num_seqs binds, its residents fit the KV
#: cache at their full contexts, no preemptions): the same two bases measured there (h-basis; ``fluidq.simulate``,
#: ``vllm-chunked``, Poisson at 1.5 x the basis, seeds 1-5 of 2,000 requests) on 12 roofline engines, the four of
#: that finding and eight seeded ``random_engine(0..7)`` held out, each read off the table's "after (error)" and
#: "before (error)" of the cache where max_num_seqs alone binds (2 x ``k_max (p + o/2)``; the 1.1 x column where the
#: row says "same as 1.1 x").  ``kv_rules``: -0.3 to +3.8 % of the simulations (mean |error| 1.4 % on the eight held
#: out).  ``max_throughput`` (there the ``k_max`` stability region along the mix, a bound over every scheduler that
#: prefills in small chunks beneath the roofline's knee, which vLLM's chunked prefill does not): +0.4 to +31.1 %
#: (mean 7.9 % on the eight).  ``tests/stability/test_measured_band_k_max.py`` holds both to that table.
SATURATION_WHERE_K_MAX_BINDS = {
    "kv_rules": MeasuredBand(basis_over_sim=(0.997, 1.038), engines=12, column="after", source=_SWITCH_SOURCE,
                             engines_words="roofline engines where max_num_seqs binds", held_out=8,
                             held_out_mean_abs_error=0.014),
    "max_throughput": MeasuredBand(basis_over_sim=(1.004, 1.311), engines=12, column="before",
                                   source=_SWITCH_SOURCE, engines_words="roofline engines where max_num_seqs binds",
                                   held_out=8, held_out_mean_abs_error=0.079),
}
