"""``compress``, composed once for Python and for ``ironlearn compress``: the picture read (a file
or an array), the encode timed from when the caller started, the file written."""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import numpy as np

from .. import codec
from ..codec.search.encoder import MAX_BPP
from ..codec.search.leastwork import check_time
from ..errors import OptionError, UsageError
from ..files import check_output, write_bytes
from ..image.io import MODES, declared_size, load_picture, to_mode
from ..limits import MAX_SECONDS
from .arguments import checked, log_of

#: Seconds between the lines that say how far a long encode has got: large pictures take minutes.
PROGRESS_SECONDS = 10


@checked
def compress(picture, out=None, *, bpp: float | None = None, lmbda: float | None = None, seconds: float = 30.0,
             mode: str | None = None, force: bool = False, progress: bool | Callable = False,
             started: float | None = None):
    """Compress a picture (a path, or an array as :func:`ironlearn.codec.compress_array` takes)
    into a small file that decodes at any size, as ``ironlearn compress`` does; writes it to
    ``out`` (atomically) when given: a new file, or with ``force`` one that exists, never the
    picture itself.  Returns :class:`ironlearn.codec.Compressed`: the bytes, their bits per
    pixel, the PSNR and the time.

        result = ironlearn.compress("photo.png", "photo.ilc", bpp=0.5)
        pixels = ironlearn.decompress("photo.ilc", scale=2)    # (2H, 2W, C) float32 in [0, 1]

    An array is ``(H, W)`` or ``(H, W, C)``, ``C`` 1 or 3: uint8 (255 white), uint16 (65535
    white) or floats in [0, 1]; ``mode`` ("gray" or "rgb") converts it as it converts a file.

    ``seconds`` is the whole job's wall time, as ``ironlearn compress --seconds`` counts it:
    from ``started`` (a :func:`time.perf_counter` reading; default, when this call began), so
    reading the picture is part of it, and 30 s means the same from Python and from the command.
    What does not fit is left out, the MLP first.  ``progress`` True prints the picture's notes
    and a line every 10 s on stderr; a function gets those lines instead.

    Raises UsageError for an ``out`` that exists (without ``force``), is the picture, or lies in
    a missing or unwritable folder, for a ``bpp`` above 24 or ``seconds`` above 30 days, and
    ValueError for an array that is empty, not finite or of another type: before any work.
    """
    started = time.perf_counter() if started is None else started
    log = log_of(progress)
    is_path = isinstance(picture, (str, os.PathLike))
    if out is not None:
        check_output(os.fspath(out), force, reads=[os.fspath(picture)] if is_path else [])
    if bpp is not None and bpp > MAX_BPP:
        raise OptionError(f"{{bpp}} {bpp:g} is more than the {MAX_BPP} bits a pixel of 8-bit colour; give less", "bpp")
    if seconds > MAX_SECONDS:
        raise OptionError(f"{{seconds}} {seconds:g} is more than the {MAX_SECONDS:,} (30 days) an encode may take; "
                          "give less", "seconds")
    if is_path:
        _check_time(picture, mode, seconds, started)
        loaded = load_picture(picture, mode=mode, max_pixels=codec.MAX_PIXELS, option=None, plausible=True)
        for note in loaded.notes:
            log(f"note: {note}")
        values, name, mode = loaded.values, os.fspath(picture), loaded.mode
    else:
        values = _picture_array(picture, mode)
        name, mode = "the array", mode or ("rgb" if values.shape[2] == 3 else "gray")
    height, width = values.shape[:2]
    log(f"compressing {name} ({width}x{height} {mode}) in at most {seconds:g} s")
    # Reading the picture took some of the time; what is left is the encoder's (a sliver at least).
    left = max(seconds - (time.perf_counter() - started), 1e-3) if seconds > 0 else seconds
    try:
        result = codec.compress_array(values, bpp=bpp, lmbda=lmbda, seconds=left, progress=_every(log))
    except OptionError:
        raise  # worded with the command's flags where the command reports it
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    if out is not None:
        write_bytes(out, result.data)
    return result


def _check_time(path, mode: str | None, seconds: float, started: float) -> None:
    """Refuse a large picture whose least work, its reading counted, cannot end within the
    ``seconds`` left since ``started``: from the size its file declares, before it is decoded
    (a 16.8 MP picture's reading alone took 2.5 s and 0.9 GB before; :mod:`..codec.search.leastwork`)."""
    declared = declared_size(path)
    if declared is None or seconds <= 0:
        return
    width, height, channels = declared
    channels = channels if mode is None else 3 if mode == "rgb" else 1
    check_time(height, width, channels, seconds - (time.perf_counter() - started), given=seconds, reading=True)


def _every(log):
    """The encoder's progress callback: a line on ``log`` every :data:`PROGRESS_SECONDS`."""
    shown = [time.perf_counter()]

    def progress(what, done, total, psnr):
        if time.perf_counter() - shown[0] >= PROGRESS_SECONDS:
            shown[0] = time.perf_counter()
            log(f"  {what} {done}/{total}" + ("" if psnr is None else f": {psnr:.2f} dB"))
    return progress


def _picture_array(values, mode: str | None) -> np.ndarray:
    """An array given to :func:`compress`, checked and as a picture file would be read:
    ``(H, W, C)``, uint8 or float32 in [0, 1], converted to ``mode``.  ValueError for an array the
    codec would fail on deep inside (empty, NaN) or draw wrong (a 16-bit one came out white)."""
    values = np.asarray(values)
    if values.ndim == 2:
        values = values[:, :, None]
    if values.ndim != 3 or values.shape[2] not in (1, 3):
        raise ValueError(f"need a picture (H, W), (H, W, 1) or (H, W, 3) (got shape {values.shape})")
    if values.size == 0:
        raise ValueError(f"the picture is empty (shape {values.shape}); give one of at least 1x1 pixels")
    if values.dtype == np.uint16:  # as a 16-bit file is read: 65535 is white
        values = values.astype(np.float32) / np.float32(65535)
    elif values.dtype.kind == "f":
        if not np.isfinite(values).all():
            raise ValueError("the picture holds NaN or infinite values; give finite ones in [0, 1]")
        values = values.astype(np.float32, copy=False)
    elif values.dtype != np.uint8:
        raise ValueError(f"pixels of type {values.dtype} have no known white; give uint8 (0-255), uint16 "
                         "(0-65535) or floats in [0, 1]")
    if mode is not None and mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}: use one of {', '.join(MODES)}")
    return values if mode is None else to_mode(values, mode)
