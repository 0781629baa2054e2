"""The original project's converters, composed once for Python and for ``ironlearn to-csv`` and
``ironlearn from-csv``: a picture to a pixel CSV (one row a pixel) and a pixel CSV back to a picture."""

from __future__ import annotations

import os

import numpy as np

from ..errors import UsageError
from ..files import check_output
from ..image.io import (CSV_SUFFIXES, MODES, image_format, load_picture, read_pixel_levels, save_image,
                        write_pixel_csv)
from ..image.picture import Picture
from .arguments import checked

__all__ = ["MODES", "csv_to_picture", "picture_to_csv"]


@checked
def picture_to_csv(picture, csv, *, size=None, mode: str | None = None, max_pixels: int | None = None,
                   force: bool = False) -> Picture:
    """Write ``picture`` (an image file) to ``csv`` as ``ironlearn to-csv`` does: one row a pixel,
    ``x,y,pixel_value`` (binary: 1 = black; gray: 0-255) or ``x,y,r,g,b``.

    ``size`` resizes first (N for the longest side, or ``(W, H)``); ``mode`` is binary, gray or rgb
    (default: rgb for a colour picture, else gray); ``max_pixels`` refuses a larger picture before
    decoding it (by default 100 MP, and a file that declares more pixels than it plausibly holds:
    a number given reads any file up to it).  ``csv`` must be a new ``.csv`` file, or with
    ``force`` one that exists, never the picture itself.  Returns the :class:`~ironlearn.image.picture.Picture` written.
    """
    if max_pixels is not None and max_pixels < 1:  # 0 was read as "none given" (the default limit)
        raise ValueError(f"max_pixels must be at least 1 (got {max_pixels})")
    csv = os.fspath(csv)
    check_output(csv, force, reads=[os.fspath(picture)])
    if not csv.lower().endswith(CSV_SUFFIXES):
        raise UsageError(f"{csv}: to-csv writes a pixel CSV; give a name ending in .csv")
    loaded = load_picture(picture, mode=mode, size=size, max_pixels=max_pixels)
    write_pixel_csv(csv, loaded)
    return loaded


@checked
def csv_to_picture(csv, picture, *, force: bool = False) -> tuple[np.ndarray, str]:
    """Write the pixel CSV ``csv`` (``x,y,pixel_value`` or ``x,y,r,g,b``) to the image ``picture``
    as ``ironlearn from-csv`` does, in the format its name ends in (.png, .bmp, ...): a new file, or
    with ``force`` one that exists.  Returns the pixels, ``(H, W, C)`` uint8 (255 white), and the
    CSV's mode (binary, gray or rgb).
    """
    picture = os.fspath(picture)
    check_output(picture, force, reads=[os.fspath(csv)])
    if not image_format(picture):
        raise UsageError(f"{picture}: from-csv writes an image in the format its name ends in; give a name "
                         "ending in .png (or .bmp, .tif, .webp, ...)")
    levels, mode = read_pixel_levels(csv)
    save_image(picture, levels)
    return levels, mode
