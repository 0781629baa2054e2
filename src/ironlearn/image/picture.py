"""A picture inside ironlearn, and the sizes it is read and worked on at.

A picture is a float32 array ``(height, width, channels)`` of intensities in [0, 1] (1 = white),
with ``channels`` 1 (gray, binary) or 3 (rgb), kept as compactly as its mode allows
(:class:`Picture`).  Image files and pixel CSVs are read into one by :mod:`~ironlearn.image.io`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

from ..errors import OptionError

MODES = ("binary", "gray", "rgb")
MIN_SIDE = 4
#: Declared sizes above this are refused before decoding (decompression bombs); ``--max-pixels`` raises it.
MAX_PIXELS = 100_000_000
#: Pixels worked on at a time where temporaries of the whole picture would cost several times the
#: picture (a pixel CSV's text is about 20 bytes a pixel, read and written this many rows at a time).
PIECE_PIXELS = 1 << 16


class InputError(OptionError):
    """A file the user gave cannot be used; the message names it and says what to do (an option
    it names, by its Python name, or by its flag where the command reports it)."""


@dataclass
class Picture:
    """A picture ready to fit, kept as compactly as its mode allows.

    ``values`` is ``(h, w, c)``: uint8 (0-255) for an 8-bit file used as it is, float32
    (0-1) where resizing, a colour conversion or a 16-bit file needs the precision.
    :attr:`pixels` and :meth:`band` give float32 intensities in [0, 1] (1 = white).
    """

    values: np.ndarray
    mode: str
    source: str
    #: What the user should know about how the file was read (frame 0 of an animation, ...).
    notes: list = field(default_factory=list)

    @property
    def height(self) -> int:
        return self.values.shape[0]

    @property
    def width(self) -> int:
        return self.values.shape[1]

    @property
    def channels(self) -> int:
        return self.values.shape[2]

    def band(self, rows: slice = slice(None)) -> np.ndarray:
        """Rows ``rows`` as float32 intensities in [0, 1]: ``(n_rows, w, c)``."""
        return as_float(self.values[rows])

    @property
    def pixels(self) -> np.ndarray:
        """The whole picture as float32 in [0, 1] (a copy for uint8 pictures: mind large ones)."""
        return self.band()


# -- sizes -----------------------------------------------------------------------------
def parse_size(text: str) -> tuple[int, int] | int:
    """``"256"`` -> 256 (longest side); ``"640x480"`` -> (640, 480). Raises ValueError."""
    match = re.fullmatch(r"([0-9]+)(?:[xX]([0-9]+))?", text)
    if match is None:
        raise ValueError(f"size {text!r} is not N or WxH (whole numbers)")
    values = [int(v) for v in match.groups() if v is not None]
    if min(values) < 1:
        raise ValueError(f"size {text!r} must be N or WxH with positive whole numbers")
    return values[0] if len(values) == 1 else (values[0], values[1])


def scaled_size(width: int, height: int, size, *, enlarge: bool = True) -> tuple[int, int]:
    """The ``(width, height)`` that ``size`` asks for: N scales the longest side to N, aspect kept;
    ``(W, H)`` is taken as it is; None keeps the size.  With ``enlarge=False``, N never scales up."""
    if size is None:
        return width, height
    if isinstance(size, tuple):
        return size
    scale = size / max(width, height)
    if not enlarge:
        scale = min(scale, 1.0)
    return max(1, round(width * scale)), max(1, round(height * scale))


def row_bands(height: int, width: int):
    """Slices of whole rows of a ``height x width`` picture, about :data:`PIECE_PIXELS` pixels each
    (one row at least), top to bottom."""
    step = max(1, PIECE_PIXELS // max(width, 1))
    return (slice(top, min(top + step, height)) for top in range(0, height, step))


def as_float(values: np.ndarray) -> np.ndarray:
    """uint8 0-255 -> float32 0-1 (a new array); float32 values are returned as they are."""
    return values.astype(np.float32) / np.float32(255.0) if values.dtype == np.uint8 else values


def to_uint8(pixels: np.ndarray) -> np.ndarray:
    """[0, 1] floats -> 0-255 bytes (rounded, clipped), dropping a single channel axis."""
    out = np.clip(np.asarray(pixels, np.float32) * 255.0 + 0.5, 0, 255).astype(np.uint8)
    return out[..., 0] if out.ndim == 3 and out.shape[2] == 1 else out


def megapixels(pixels: int) -> str:
    return f"{pixels / 1e6:.4g} MP"
