"""A picture redrawn straight into a PNG, a band of rows at a time, so that memory stays bounded
whatever the size: ``ironlearn render`` and ``ironlearn decompress``, composed once."""

from __future__ import annotations

import os

from .. import codec, drawable
from ..backend import get_backend
from ..errors import Note, UsageError
from ..files import check_output
from ..image.render import region_size, render_png, render_size, save_bands
from .arguments import checked_size, silent


def render_file(source, out, size=None, *, scale: float | None = None, view=None, device: str | None = None,
                force: bool = False, progress=False, log=silent) -> tuple[int, int]:
    """Redraw the model or compressed picture at ``source`` (what :func:`ironlearn.load` reads)
    into the PNG ``out``, as ``ironlearn render`` does: ``size``, ``scale`` and ``view`` as
    :func:`ironlearn.render` takes them; ``device`` where a model runs (default: the GPU when
    CuPy sees one).  ``progress`` shows a bar (True or ``"bar"``) or plain lines (``"lines"``)
    once the render takes seconds; ``log`` gets its notes.  Returns ``(width, height)``.

    Raises UsageError for an ``out`` that exists (without ``force``), is ``source`` or is no
    ``.png``, and ValueError for a size, scale or view the command would refuse.
    """
    out, size = os.fspath(out), checked_size(size, scale, view)
    check_output(out, force, reads=[os.fspath(source)])
    if not out.lower().endswith(".png"):
        raise UsageError(f"{out}: render writes PNG; give a name ending in .png")
    picture = drawable.open(source)
    if isinstance(picture, drawable.CompressedFile):
        decoded = picture.decoded
        decoded.region(view)  # a view that leaves the picture: one line, worded with the caller's name for it
        width, height = _render_size(size, decoded.size, view, scale, log)
        _save_drawing(decoded, out, width, height, view, progress)
        return width, height
    width, height = _render_size(size, picture.size, view, scale, log)
    backend = get_backend(device or "auto", notify=log if device == "auto" else None)
    render_png(picture.model.to(backend), out, width, height, backend, picture.channels, progress=progress, view=view)
    return width, height


def decompress_file(source, out, size=None, *, scale: float | None = None, view=None, force: bool = False,
                    progress=False) -> tuple[int, int]:
    """Redraw the compressed file at ``source`` into the PNG ``out``, as ``ironlearn
    decompress`` does: at its own size, at ``size`` or ``scale``, or the region ``view``, as
    :func:`ironlearn.decompress` takes them; ``progress`` as :func:`render_file` takes it.
    Returns ``(width, height)``."""
    out, size = os.fspath(out), checked_size(size, scale, view)
    check_output(out, force, reads=[os.fspath(source)])
    if not out.lower().endswith(".png"):
        raise UsageError(f"{out}: decompress writes PNG; give a name ending in .png")
    _, decoded = codec.read_path(source)
    decoded.region(view)  # a view that leaves the picture: one line, worded with the caller's name for it
    width, height = decoded.draw_size(size, scale, view)
    _save_drawing(decoded, out, width, height, view, progress)
    return width, height


def _render_size(size, trained, view, scale, log) -> tuple[int, int]:
    """The render's ``(width, height)``; a note on ``log`` when ``(W, H)`` changes the aspect."""
    width, height = render_size(trained, size, scale, view)
    if isinstance(size, tuple) and trained is not None:
        trained_w, trained_h = region_size(trained, view)
        if abs(width / height - trained_w / trained_h) > 0.01 * (trained_w / trained_h):
            log(Note(f"note: {width}x{height} changes the aspect ratio of the {trained_w:g}x{trained_h:g} picture; "
                     "give {size} N (the longest side) or {scale} to keep it", "size", "scale"))
    return width, height


def _save_drawing(decoded, out: str, width: int, height: int, view, progress) -> None:
    """Draw ``decoded`` (or the region ``view`` of it) at ``width x height`` straight into the
    PNG ``out``, a band of rows at a time."""
    save_bands(out, width, height, decoded.channels, decoded.bands(height, width, view), progress=progress)
