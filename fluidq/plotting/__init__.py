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

__all__ = ["axes", "finish", "save_figure"]


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
    return save_figure(fig, path)


def save_figure(fig, path, *, dpi: float = 110, **kwargs) -> str:
    """Write ``fig`` to ``path`` and return the path written; the one way fluidq saves a figure.

    The figure is rendered into memory, then written by a temporary file in the same folder and a
    rename (:func:`fluidq._io.write_output`): a symlink at ``path`` is replaced, never
    written through; a folder, FIFO or device there is refused; a failure leaves the old file as it
    was.  The format comes from the extension; a path without one gets ``.png`` (as
    ``Figure.savefig`` does) and the returned path says so.
    """
    import io

    from ..errors import ParameterError
    from .._io import write_output

    text = os.fspath(path)
    if isinstance(text, bytes):
        text = os.fsdecode(text)
    name = os.path.basename(text)
    if not name or name in (".", "..") or text.endswith(os.sep):
        raise ParameterError("path", text, "a file name for the figure (this names a folder)")
    fmt = os.path.splitext(name)[1].lower().lstrip(".")
    if not fmt:
        fmt, text = "png", text + ".png"
    formats = fig.canvas.get_supported_filetypes()
    if fmt not in formats:
        raise ParameterError("path", text, "a file name ending in one of " + ", ".join("." + f for f in sorted(formats)),
                             "the figure format comes from the extension")
    mark = _PIL_MARK.get(fmt)
    if mark is not None:  # the formats Pillow writes: matplotlib leaves no mark in them, fluidq writes its own
        kwargs = {**kwargs, "pil_kwargs": {mark[0]: _mark_text(mark[1]), **(kwargs.get("pil_kwargs") or {})}}
    buf = io.BytesIO()
    try:
        fig.savefig(buf, format=fmt, dpi=dpi, **kwargs)
    except (RuntimeError, OSError) as exc:  # e.g. .pgf without a LaTeX installation
        from ..errors import DataError

        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
        raise DataError(f"figure {text}: matplotlib cannot write the .{fmt} format here ({msg})") from None
    return write_output(text, buf.getvalue(), what="figure")


#: the mark fluidq writes in a figure of a format that matplotlib hands to Pillow (it writes none there itself),
#: so that an existing file of that name can be told to be a figure fluidq wrote before it is replaced
#: (:func:`fluidq.cli.common.output_file`): Pillow's keyword for the format's text field, and its type.
#: JPEG's comment segment, TIFF's ImageDescription tag, GIF's comment extension, WebP's and AVIF's XMP packet
#: (each checked by tests/cli/test_figure_mark_formats.py on this matplotlib and Pillow)
_PIL_MARK = {"jpg": ("comment", bytes), "jpeg": ("comment", bytes), "tif": ("description", str),
             "tiff": ("description", str), "gif": ("comment", bytes), "webp": ("xmp", bytes), "avif": ("xmp", bytes)}


def _mark_text(kind):
    """The mark's text: 'fluidq VERSION (matplotlib VERSION)', the word that the check reads being 'matplotlib'
    (as in PNG's Software chunk and the creator field of PDF, SVG, EPS, PS and PGF)."""
    import matplotlib

    from .._version import __version__

    text = f"fluidq {__version__} (matplotlib {matplotlib.__version__})"
    return text.encode() if kind is bytes else text


def __getattr__(name):
    for info in pkgutil.iter_modules(__path__):
        mod = importlib.import_module(f"{__name__}.{info.name}")
        if hasattr(mod, name):
            return getattr(mod, name)
    raise AttributeError(f"module 'fluidq.plotting' has no attribute {name!r}")
