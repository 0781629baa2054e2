"""A picture redrawn straight into a PNG, a band of rows at a time, so that memory stays bounded
whatever the size: ``ironlearn render`` and ``ironlearn decompress``, composed once."""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Literal

from .. import drawable
from ..errors import Note, OptionError, UsageError
from ..files import check_output
from ..image.picture import megapixels
from ..image.render import region_size, save_bands
from ..limits import MAX_RENDER_PIXELS
from .arguments import checked, checked_size, silent

#: How a long render shows its progress: a bar (True or "bar"), plain lines, or not at all.
Progress = bool | Literal["bar", "lines"]


@checked
def render_file(source, out, size=None, *, scale: float | None = None, view=None, device: str | None = None,
                max_pixels: int | None = None, force: bool = False, progress: Progress = False,
                log: Callable = silent) -> tuple[int, int]:
    """Redraw the model or compressed picture at ``source`` (what :func:`ironlearn.load` reads)
    into the PNG ``out``, as ``ironlearn render`` does: ``size``, ``scale`` and ``view`` as
    :func:`ironlearn.render` takes them; ``device`` where a model runs (default: the GPU when
    CuPy sees one).  ``progress`` shows a bar (True or ``"bar"``) or plain lines (``"lines"``)
    once the render takes seconds; ``log`` gets its notes.  A render of more than ``max_pixels``
    pixels (default :data:`~ironlearn.limits.MAX_RENDER_PIXELS`) is refused before it is drawn.
    Returns ``(width, height)``.

    Raises UsageError for an ``out`` that exists (without ``force``), is ``source`` or is no
    ``.png``, and ValueError for a size, scale or view the command would refuse.
    """
    out, size = os.fspath(out), checked_size(size, scale, view)
    check_output(out, force, reads=[os.fspath(source)])
    if not out.lower().endswith(".png"):
        raise UsageError(f"{out}: render writes PNG; give a name ending in .png")
    picture = drawable.load(source)
    width, height = picture.draw_size(size, scale, view)
    _check_pixels(width, height, max_pixels)
    _note_the_aspect(size, picture.size, view, width, height, log)
    drawn = picture.bands(height, width, view, device=device or "auto", notify=log if device == "auto" else None)
    save_bands(out, width, height, picture.channels, drawn, progress=progress)
    return width, height


@checked
def decompress_file(source, out, size=None, *, scale: float | None = None, view=None, force: bool = False,
                    progress: Progress = False) -> tuple[int, int]:
    """Redraw the compressed file at ``source`` into the PNG ``out``, as ``ironlearn
    decompress`` does: at its own size, at ``size`` or ``scale``, or the region ``view``, as
    :func:`ironlearn.decompress` takes them; ``progress`` as :func:`render_file` takes it.
    Returns ``(width, height)``."""
    out, size = os.fspath(out), checked_size(size, scale, view)
    check_output(out, force, reads=[os.fspath(source)])
    if not out.lower().endswith(".png"):
        raise UsageError(f"{out}: decompress writes PNG; give a name ending in .png")
    picture = drawable.load_compressed(source)
    width, height = picture.draw_size(size, scale, view)  # a view that leaves the picture: refused first
    save_bands(out, width, height, picture.channels, picture.bands(height, width, view), progress=progress)
    return width, height


def _check_pixels(width: int, height: int, max_pixels: int | None) -> None:
    """Refuse a render of more than ``max_pixels`` (None: :data:`MAX_RENDER_PIXELS`) pixels."""
    if max_pixels is not None and max_pixels < 1:  # a whole number: render_file checks its arguments
        raise ValueError(f"max_pixels must be a whole number from 1 (got {max_pixels!r})")
    pixels = width * height
    if pixels <= (max_pixels or MAX_RENDER_PIXELS):
        return
    if max_pixels is None:
        raise OptionError(f"a render of {width}x{height} is {megapixels(pixels)}, more than ironlearn draws unasked "
                          f"({megapixels(MAX_RENDER_PIXELS)}); give a smaller {{size}} or {{scale}}, or "
                          f"{{max_pixels}} {pixels} to draw it", "size", "scale", "max_pixels")
    raise OptionError(f"a render of {width}x{height} is {megapixels(pixels)}, over the limit you set "
                      f"({{max_pixels}} {max_pixels:,}); raise it, or give a smaller {{size}} or {{scale}}",
                      "max_pixels", "size", "scale")


def _note_the_aspect(size, trained, view, width: int, height: int, log) -> None:
    """A note on ``log`` when a size ``(W, H)`` changes the aspect of the picture (or its view)."""
    if isinstance(size, tuple) and trained is not None:
        trained_w, trained_h = region_size(trained, view)
        if abs(width / height - trained_w / trained_h) > 0.01 * (trained_w / trained_h):
            log(Note(f"note: {width}x{height} changes the aspect ratio of the {trained_w:g}x{trained_h:g} picture; "
                     "give {size} N (the longest side) or {scale} to keep it", "size", "scale"))
