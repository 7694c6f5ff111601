"""Plots, one module per analysis (``capacity``, ``sim``, ``region``, ``network``...).

matplotlib is imported inside the functions only; nothing calls ``plt.show()``; a file is written
only when ``path`` is given.  Every function takes ``ax=None`` (a new figure when omitted) and
returns the path written, or the axes when no path was given.

``fluidq.plotting.NAME`` finds ``NAME`` in any sub-module, so callers need not know which.
"""
from __future__ import annotations

import importlib
import os
import pkgutil

__all__ = ["axes", "finish"]


def axes(ax=None, figsize=(6.4, 4.0)):
    """``(fig, ax)``: the given axes, or a new figure on the Agg backend.

    A path given where the axes go (``result.plot("out.png")``) is honoured: the new figure
    remembers it and :func:`finish` saves there.
    """
    path = None
    if isinstance(ax, (str, os.PathLike)):
        path, ax = ax, None
    if ax is not None:
        if not hasattr(ax, "figure"):
            from ..errors import ParameterError

            raise ParameterError("ax", ax, "matplotlib Axes, or None (pass path= to write a file)")
        return ax.figure, ax
    import matplotlib

    matplotlib.use("Agg", force=False) if matplotlib.get_backend().lower() != "agg" else None
    from matplotlib.figure import Figure

    fig = Figure(figsize=figsize, layout="constrained")
    fig._fluidq_path = path
    return fig, fig.add_subplot()


def finish(fig, ax, path=None):
    """Save to ``path`` (and return it), or return ``ax``."""
    path = path if path is not None else getattr(fig, "_fluidq_path", None)
    if path is None:
        return ax
    fig.savefig(path, dpi=110)
    return str(path)


def __getattr__(name):
    for info in pkgutil.iter_modules(__path__):
        mod = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(mod, name):
            return getattr(mod, name)
    raise AttributeError(f"module 'fluidq.plotting' has no attribute {name!r}")
