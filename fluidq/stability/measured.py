"""Where seeded simulations saturate, per load basis: the measured bands the verdicts quote.

Each band is read off the tables of validation/RESULTS.md that measure it (the column named in ``column``), so a
verdict's words say what was measured and on how many engines, not a range written once by hand.
``tests/stability/test_measured_bands.py`` reads those tables again and holds each constant to them.
"""
from __future__ import annotations

from dataclasses import dataclass

__all__ = ["MeasuredBand", "SATURATION_PER_BASIS"]


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

    @property
    def sim_over_basis(self) -> tuple:
        """Where simulations saturate, as multiples of the basis: ``(1 / high, 1 / low)``."""
        lo, hi = self.basis_over_sim
        return 1.0 / hi, 1.0 / lo

    def saturate_words(self) -> str:
        """``"seeded simulations of 17 KV-bound engines saturate at 0.78-1.21 times it"``."""
        a, b = self.sim_over_basis
        return f"seeded simulations of {self.engines} KV-bound engines saturate at {a:.2f}-{b:.2f} times it"

    def above_words(self) -> str:
        """``"5-46 % above where seeded simulations saturate"`` (a basis that overstates)."""
        lo, hi = self.basis_over_sim
        return f"{100 * (lo - 1):.0f}-{100 * (hi - 1):.0f} % above where seeded simulations saturate"


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
