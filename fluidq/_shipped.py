"""Where the validation suite's cases and data are: the source checkout's ``validation/`` folder, or
the copy a non-editable install carries as ``fluidq/_validation`` (see ``setup.py``)."""
from __future__ import annotations

from pathlib import Path

__all__ = ["validation_root"]


def validation_root() -> Path:
    """The checkout's ``validation/`` when fluidq runs from a source tree, else the installed copy."""
    here = Path(__file__).resolve().parent
    checkout = here.parent / "validation"
    if (checkout / "cases").is_dir():
        return checkout
    return here / "_validation"
