"""``compress``, composed once for Python and for ``ironlearn compress``: the picture read (a file
or an array), the encode timed from when the caller started, the file written."""

from __future__ import annotations

import os
import time
from collections.abc import Callable

import numpy as np

from ..backend import get_backend
from ..codec.search.job import check_request, compress_path, encode
from ..files import check_output
from ..image.io import MODES, to_mode
from .arguments import checked, log_of


@checked
def compress(picture, out=None, *, bpp: float | None = None, lmbda: float | None = None, seconds: float = 30.0,
             mode: str | None = None, force: bool = False, progress: bool | Callable = False,
             started: float | None = None, device: str = "cpu"):
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
    and a line every 10 s on stderr; a function gets those lines instead.  ``device`` ("cpu",
    "cuda" or "auto") is where the synthesis MLP, the context model and the tuning train; the
    analysis runs on the CPU.

    Raises UsageError for an ``out`` that exists (without ``force``), is the picture, or lies in
    a missing or unwritable folder, for a ``bpp`` above 24 or ``seconds`` above 30 days, and
    ValueError for an array that is empty, not finite or of another type: before any work.
    """
    started = time.perf_counter() if started is None else started
    log = log_of(progress)
    is_path = isinstance(picture, (str, os.PathLike))
    if out is not None:
        check_output(os.fspath(out), force, reads=[os.fspath(picture)] if is_path else [])
    check_request(bpp, seconds)
    backend = get_backend(device, notify=log)
    if is_path:
        return compress_path(picture, out, bpp=bpp, lmbda=lmbda, seconds=seconds, mode=mode, started=started, log=log,
                             backend=backend)
    values = _picture_array(picture, mode)
    mode = mode or ("rgb" if values.shape[2] == 3 else "gray")
    return encode(values, "the array", mode, out, bpp=bpp, lmbda=lmbda, seconds=seconds, started=started, log=log,
                  backend=backend)


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
