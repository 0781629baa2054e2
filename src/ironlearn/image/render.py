"""Redrawing a fitted model at any size, in bands of rows so memory stays bounded.

A render never holds the whole picture unless asked to: :func:`render_png`
streams each band through zlib into the PNG file, so an 8192x8192 or larger
render needs only one band of coordinates and activations at a time.
"""

from __future__ import annotations

import os
import sys
import time
import struct
import zlib

import numpy as np
from tqdm import tqdm

from ..errors import OptionError
from ..files import atomic_write
from .coords import pixel_grid
from .io import InputError, scaled_size, to_uint8

#: Coordinates evaluated per forward pass; bounds render memory (about 100 MB for a 256-wide SIREN).
TILE_POINTS = 1 << 15
MAX_RENDER_SIDE = 65536


def region_size(trained, view=None) -> tuple[float, float]:
    """The size in training pixels of the region ``view`` of a picture trained at ``trained``
    ``(W, H)`` (all of it without a view): what a render keeps the aspect of."""
    if view is None:
        return trained
    return trained[0] * (view[2] - view[0]) / 2, trained[1] * (view[3] - view[1]) / 2


def render_size(trained, size=None, scale=None, view=None) -> tuple[int, int]:
    """The ``(width, height)`` to render a model trained at ``trained`` ``(W, H)`` (None: unknown).

    ``size`` is N (the longest side, the aspect kept) or ``(W, H)``; ``scale`` multiplies the
    training size instead; neither is the picture's own size (or, with a view, its pixel pitch).
    ``view`` ``(x0, y0, x1, y1)`` sizes that region of the picture.  Raises
    :class:`~ironlearn.errors.OptionError` (a ValueError) when both are given, when neither is
    and the size is unknown, or when the result is beyond MAX_RENDER_SIDE.
    """
    if size is not None and scale is not None:
        raise OptionError("give {size} or {scale}, not both", "size", "scale")
    if size is None and scale is None:
        if trained is None:
            raise OptionError("this model does not record its training size; give {size}", "size")
        scale = 1.0
    if scale is not None and trained is None:
        raise OptionError("this model does not record its training size, so {scale} has nothing to scale; "
                          "give {size}", "size", "scale")
    trained_w, trained_h = region_size(trained or (1, 1), view)
    if scale is not None:
        # Checked before rounding: a scale of 1e308 makes a side inf, which round() cannot take.
        if max(trained_w, trained_h) * scale >= MAX_RENDER_SIDE + 0.5:
            raise OptionError(f"{{scale}} {scale:g} makes a render more than {MAX_RENDER_SIDE} pixels a side, the "
                              "limit; give a smaller one", "scale")
        return max(1, round(trained_w * scale)), max(1, round(trained_h * scale))
    # Checked before scaling: a size of 10**400 is past what a float division takes.
    if max(size if isinstance(size, tuple) else (size,)) > MAX_RENDER_SIDE:
        shown = "x".join(map(str, size)) if isinstance(size, tuple) else size
        raise OptionError(f"render {{size}} {shown} is above the limit of {MAX_RENDER_SIDE} pixels a side", "size")
    return scaled_size(trained_w, trained_h, size)


def bands(model, width: int, height: int, backend, tile_points: int = TILE_POINTS, view=None):
    """Yield ``(row_start, pixels)`` with pixels ``(rows, width, channels)`` float32 in [0, 1] on the host.

    ``view`` ``(x0, y0, x1, y1)`` renders that region of the [-1, 1] square (default: all of it).

    Raises
    ------
    InputError
        The model draws NaN or inf somewhere: finite weights so large that its arithmetic
        overflows float32 (a damaged or hand-made file).  A picture of them would be black.
    """
    rows_per_band = max(1, tile_points // width)
    for start in range(0, height, rows_per_band):
        rows = slice(start, min(start + rows_per_band, height))
        coords = pixel_grid(width, height, rows, view)
        # Very wide images: split one row band into column chunks so a band stays near tile_points.
        with np.errstate(over="ignore", invalid="ignore"):  # checked below, in one line
            outputs = [backend.to_host(model.forward(backend.asarray(coords[i:i + tile_points])))
                       for i in range(0, len(coords), tile_points)]
        out = np.concatenate(outputs) if len(outputs) > 1 else outputs[0]
        if not np.isfinite(out).all():
            raise InputError("the model draws NaN or inf: its weights are so large that its arithmetic overflows "
                             "float32, so it cannot draw; use another copy or fit again")
        yield start, np.clip(out, 0.0, 1.0).reshape(rows.stop - rows.start, width, -1)


def render(model, width: int, height: int, backend, tile_points: int = TILE_POINTS, view=None) -> np.ndarray:
    """The whole picture (or ``view``) as a ``(height, width, channels)`` float32 array (for small sizes)."""
    parts = [pixels for _, pixels in bands(model, width, height, backend, tile_points, view)]
    return np.concatenate(parts, axis=0)


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def write_png_rows(file, width: int, height: int, channels: int, row_bands) -> None:
    """Write an 8-bit gray or RGB PNG from an iterable of ``(rows, width[, 3])`` uint8 bands.

    Pillow needs the whole image in memory to save it; this writes the format's
    three chunk types directly so that memory stays at one band.
    """
    color_type = {1: 0, 3: 2}[channels]
    file.write(b"\x89PNG\r\n\x1a\n")
    file.write(_chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, color_type, 0, 0, 0)))
    compressor = zlib.compressobj(6)
    for band in row_bands:
        rows = band.reshape(band.shape[0], -1)
        filtered = np.empty((rows.shape[0], rows.shape[1] + 1), np.uint8)
        filtered[:, 0] = 0  # filter type "None" for every scanline
        filtered[:, 1:] = rows
        data = compressor.compress(filtered.tobytes())
        if data:
            file.write(_chunk(b"IDAT", data))
    file.write(_chunk(b"IDAT", compressor.flush()))
    file.write(_chunk(b"IEND", b""))


#: Progress appears once a render has taken this long; as plain lines, at most this often.
PROGRESS_DELAY, LINE_SECONDS = 2.0, 10.0


def save_bands(path, width: int, height: int, channels: int, drawn, *, each=None, progress=False) -> None:
    """Stream ``drawn``, an iterable of ``(row_start, pixels)`` bands (float32 in [0, 1],
    ``(rows, width, channels)``, top to bottom, as :func:`bands` yields them), into the PNG at
    ``path`` (atomically): memory stays at one band.

    ``each(row_start, pixels)``, when given, sees every band on its way to the file (to score it
    against the picture, say).  ``progress`` shows, once the render has taken more than
    :data:`PROGRESS_DELAY` seconds, a bar on stderr (True or ``"bar"``: for a terminal) or a line
    every :data:`LINE_SECONDS` (``"lines"``: for a log, where a bar's redraws are carriage returns).
    """
    started, said = time.monotonic(), [0.0]

    def line(done: int) -> None:
        now = time.monotonic() - started
        if now >= PROGRESS_DELAY and now - said[0] >= LINE_SECONDS:
            said[0] = now
            print(f"rendering {width}x{height}: {done:,} of {height:,} rows, {now:.0f} s", file=sys.stderr,
                  flush=True)

    def encoded(bar):
        done = 0
        for start, pixels in drawn:
            if each is not None:
                each(start, pixels)
            bar.update(len(pixels))
            done += len(pixels)
            if progress == "lines":
                line(done)
            yield to_uint8(pixels)

    def write(file):
        with tqdm(total=height, unit="row", delay=PROGRESS_DELAY, disable=progress not in (True, "bar"),
                  leave=False, desc=f"rendering {width}x{height}") as bar:
            write_png_rows(file, width, height, channels, encoded(bar))

    atomic_write(os.fspath(path), write)


def render_png(model, path, width: int, height: int, backend, channels: int,
               tile_points: int = TILE_POINTS, *, each=None, progress: bool = False, view=None) -> None:
    """Render ``model`` at ``width x height`` straight into the PNG at ``path`` (atomically), a
    band at a time (:func:`save_bands`, which ``each`` and ``progress`` go to).  ``view``
    ``(x0, y0, x1, y1)`` renders that region of the [-1, 1] square instead of all of it.
    """
    save_bands(path, width, height, channels, bands(model, width, height, backend, tile_points, view),
               each=each, progress=progress)
