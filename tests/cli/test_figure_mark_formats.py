"""``--plot`` replaces an existing JPEG, TIFF, GIF, WebP or AVIF only when fluidq wrote it (audit 2026-12-07,
robust6 finding 2).

Before: any real image of those formats was taken for fluidq's (matplotlib leaves no mark in them), so
``--plot holiday.jpg`` silently overwrote a user's photo.  Now fluidq writes its own mark in those formats
(Pillow's text fields) and requires it; each format is checked here on the installed matplotlib and Pillow.
"""
import io

import pytest

from fluidq.cli import CliError
from fluidq.cli.common import _replaceable_figure, output_file

PIL_FORMATS = ("jpg", "jpeg", "tif", "tiff", "gif", "webp", "avif")


def _pillow_can(fmt):
    from PIL import Image

    try:
        Image.new("RGB", (4, 4)).save(io.BytesIO(), format={"jpg": "JPEG", "tif": "TIFF"}.get(fmt, fmt.upper()))
    except (KeyError, ValueError, OSError):
        return False
    return True


def _users_image(path, fmt):
    """A user's own photo: a real image of the format, written by Pillow, with no fluidq mark."""
    from PIL import Image

    img = Image.new("RGB", (64, 48), (200, 30, 30))
    img.save(path, format={"jpg": "JPEG", "tif": "TIFF"}.get(fmt, fmt.upper()))
    return path.read_bytes()


def _figure(path):
    from fluidq.plotting import axes, save_figure

    fig, ax = axes()
    ax.plot([0, 1, 2], [1, 0, 2])
    return save_figure(fig, path)


@pytest.mark.parametrize("fmt", PIL_FORMATS)
def test_a_users_image_is_refused_and_left_as_it_was(tmp_path, fmt):
    if not _pillow_can(fmt):
        pytest.skip(f"this Pillow writes no {fmt}")
    p = tmp_path / f"photo.{fmt}"
    data = _users_image(p, fmt)
    assert not _replaceable_figure(p)
    with pytest.raises(CliError) as ei:
        output_file("--plot", str(p))
    assert "--plot" in str(ei.value) and "not replaced" in str(ei.value)
    assert p.read_bytes() == data


@pytest.mark.parametrize("fmt", PIL_FORMATS)
def test_a_figure_fluidq_wrote_carries_the_mark_and_is_replaced(tmp_path, fmt):
    if not _pillow_can(fmt):
        pytest.skip(f"this Pillow writes no {fmt}")
    p = tmp_path / f"fig.{fmt}"
    _figure(p)
    assert _replaceable_figure(p), fmt
    assert output_file("--plot", str(p)) == str(p)
    _figure(p)  # written over


@pytest.mark.parametrize("fmt", ["raw", "rgba"])
def test_a_pixel_dump_cannot_carry_a_mark_and_is_never_replaced(tmp_path, fmt):
    p = tmp_path / f"x.{fmt}"
    _figure(p)
    with pytest.raises(CliError):
        output_file("--plot", str(p))
