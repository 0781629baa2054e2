"""A picture compressed into a file, as ``ironlearn compress`` and ``compress-many`` run it: the
request checked, the picture read (its time counted), the encode given what time is left, the
file written atomically.  The Python API (:func:`ironlearn.compress`) and a worker of
``compress-many`` both come here."""

from __future__ import annotations

import os
import time

from ...errors import OptionError, UsageError
from ...files import write_bytes
from ...image.io import declared_size, load_picture
from ...limits import MAX_SECONDS
from ..bitstream.header import MAX_PIXELS
from .encoder import MAX_BPP, compress_array
from .leastwork import check_time

#: Seconds between the lines that say how far a long encode has got: large pictures take minutes.
PROGRESS_SECONDS = 10


def check_request(bpp: float | None, seconds: float) -> None:
    """Refuse a ``bpp`` above what 8-bit colour holds, or ``seconds`` past 30 days, before any work."""
    if bpp is not None and bpp > MAX_BPP:
        raise OptionError(f"{{bpp}} {bpp:g} is more than the {MAX_BPP} bits a pixel of 8-bit colour; give less", "bpp")
    if seconds > MAX_SECONDS:
        raise OptionError(f"{{seconds}} {seconds:g} is more than the {MAX_SECONDS:,} (30 days) an encode may take; "
                          "give less", "seconds")


def compress_path(path, out=None, *, bpp: float | None = None, lmbda: float | None = None, seconds: float = 30.0,
                  mode: str | None = None, started: float | None = None, log=lambda line: None, backend=None):
    """The picture file at ``path`` compressed within ``seconds`` counted from ``started`` (a
    :func:`time.perf_counter` reading; default now), written to ``out`` when given: the
    :class:`~.encoder.Compressed` result.  A large picture whose least work cannot end in time is
    refused from the size its file declares, before it is decoded."""
    started = time.perf_counter() if started is None else started
    _check_time(path, mode, seconds, started)
    loaded = load_picture(path, mode=mode, max_pixels=MAX_PIXELS, option=None, plausible=True)
    for note in loaded.notes:
        log(f"note: {note}")
    return encode(loaded.values, os.fspath(path), loaded.mode, out, bpp=bpp, lmbda=lmbda, seconds=seconds,
                  started=started, log=log, backend=backend)


def encode(values, name: str, mode: str, out=None, *, bpp=None, lmbda=None, seconds: float = 30.0,
           started: float, log=lambda line: None, backend=None):
    """``values`` (``(H, W, C)``, read as ``name``) compressed in the time left of ``seconds`` since
    ``started``, its MLP trained on ``backend`` (default the CPU), written to ``out`` when given."""
    height, width = values.shape[:2]
    log(f"compressing {name} ({width}x{height} {mode}) in at most {seconds:g} s")
    # Reading the picture took some of the time; what is left is the encoder's (a sliver at least).
    left = max(seconds - (time.perf_counter() - started), 1e-3) if seconds > 0 else seconds
    try:
        result = compress_array(values, bpp=bpp, lmbda=lmbda, seconds=left, progress=_every(log), backend=backend)
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
    (reading a 16.8 MP picture alone takes seconds and most of a gigabyte; :mod:`.leastwork`)."""
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
