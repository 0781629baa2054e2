"""Reading and writing pictures: image files (via Pillow) and the original project's pixel CSV.

Inside ironlearn a picture is a float32 array ``(height, width, channels)`` of
intensities in [0, 1] (1 = white), with ``channels`` 1 (gray, binary) or 3 (rgb).
The pixel CSV keeps the original project's convention instead: in binary mode
``pixel_value`` is 1 for black and 0 for white; in gray mode it is the 0-255
intensity; rgb files have ``r,g,b`` columns (0-255).
"""

from __future__ import annotations

import csv
import itertools
import math
import os
import re
from dataclasses import dataclass, field

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from ..files import atomic_write

MODES = ("binary", "gray", "rgb")
MIN_SIDE = 4
#: Declared sizes above this are refused before decoding (decompression bombs); ``--max-pixels`` raises it.
MAX_PIXELS = 100_000_000
CSV_SUFFIXES = (".csv", ".txt")
#: Pixels worked on at a time where temporaries of the whole picture would cost several times the
#: picture (a pixel CSV's text is about 20 bytes a pixel, read and written this many rows at a time).
PIECE_PIXELS = 1 << 16


class InputError(ValueError):
    """A file the user gave cannot be used; the message names it and says what to do."""


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


# -- images ------------------------------------------------------------------------------
def _megapixels(pixels: int) -> str:
    return f"{pixels / 1e6:.4g} MP"


def _over_limit(path: str, width: int, height: int, max_pixels: int, what: str = "declares",
                flag: str | None = "--max-pixels") -> InputError:
    """The error for a picture past ``max_pixels``; ``flag`` is the option that raises the limit
    (None: the command has none)."""
    if flag is None:
        return InputError(f"{path} {what} {width}x{height} pixels, more than this command takes "
                          f"({_megapixels(max_pixels)}); resize it first")
    if max_pixels == MAX_PIXELS:
        return InputError(f"{path} {what} {width}x{height} pixels, more than ironlearn reads "
                          f"({_megapixels(max_pixels)}); resize it first, or raise {flag}")
    return InputError(f"{path} {what} {width}x{height} pixels, over the limit you set ({flag} {max_pixels:,}); "
                      "raise it, or resize the picture first")


def _open(path: str, max_pixels: int = MAX_PIXELS, flag: str | None = "--max-pixels") -> tuple[Image.Image, list[str]]:
    """The image at ``path``, decoded once its declared size is known to be within ``max_pixels``,
    and the notes on how it was read (:func:`_notes`)."""
    if not os.path.exists(path):
        raise InputError(f"{path}: no such file")
    if os.path.isdir(path):
        raise InputError(f"{path} is a folder; give an image or pixel CSV file")
    if os.path.getsize(path) == 0:
        raise InputError(f"{path} is empty; give an image file (PNG, JPEG, WebP, BMP, ...)")
    guard = Image.MAX_IMAGE_PIXELS
    try:
        # Pillow's decompression-bomb guard is ours to apply: the declared size is checked below,
        # before anything is decoded, with a message that names the limit the user set.
        Image.MAX_IMAGE_PIXELS = None
        image = Image.open(path)
        width, height = image.size
        if width * height > max_pixels:
            raise _over_limit(path, width, height, max_pixels, flag=flag)
        notes = _notes(path, image)  # before load(), which forgets how the file stores its samples
        image.load()
    except InputError:
        raise
    except PermissionError:
        raise InputError(f"{path}: permission denied; make the file readable (chmod +r) or copy it") from None
    except UnidentifiedImageError:
        raise InputError(f"{path} is not an image Pillow can read; give a PNG, JPEG, WebP, BMP, ... "
                         "or a pixel CSV (.csv)") from None
    except (OSError, SyntaxError, ValueError) as exc:
        raise InputError(f"{path}: the image is truncated or corrupt ({exc}); re-export it") from None
    finally:
        Image.MAX_IMAGE_PIXELS = guard
    return image, notes


def _notes(path: str, image: Image.Image) -> list[str]:
    """What is lost or chosen in reading ``image`` (opened, not yet loaded), said once to the user."""
    notes, rawmode = [], image.tile[0][3] if image.tile and isinstance(image.tile[0][3], str) else ""
    frames = getattr(image, "n_frames", 1)
    if frames > 1:
        notes.append(f"{os.path.basename(path)} has {frames} frames; ironlearn fits the first")
    if image.mode in ("RGB", "RGBA") and ";16" in rawmode:
        notes.append(f"{os.path.basename(path)} has 16 bits a colour channel; Pillow reads it as 8, so the fit "
                     "sees 8-bit colour (16-bit gray pictures keep their 16 bits)")
    return notes


def _decode(image: Image.Image, notes: list) -> np.ndarray:
    """Any Pillow image (palette, alpha, CMYK, 16-bit, animated) -> (h, w, 1 or 3): uint8 0-255
    for 8-bit images, float32 in [0, 1] for 16-bit and float ones (their precision kept)."""
    ImageOps.exif_transpose(image, in_place=True)  # upright as the camera meant, without a copy
    if image.mode == "F":
        values = _array(image, np.float32)
        low, high = _float_range(values)
        if not (low >= 0 and high <= 1):  # a float file has no fixed white, as 255 is for 8 bits
            notes.append(f"float values from {low:.4g} to {high:.4g}, stretched to black..white")
            _stretch(values, low, high)
        return values[..., None]
    if image.mode in ("I;16", "I;16B", "I;16L", "I"):
        values = _array(image, np.float32)
        peak = 65535.0 if image.mode.startswith("I;16") or values.max(initial=0) > 255 else 255.0
        values /= np.float32(peak)
        return np.clip(values, 0, 1, out=values)[..., None]
    has_alpha = image.mode in ("RGBA", "LA", "PA", "La", "RGBa") or "transparency" in image.info
    if has_alpha:
        rgba = image.convert("RGBA")
        background = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        image = Image.alpha_composite(background, rgba).convert("RGB")
    elif image.mode in ("1", "L"):
        return _array(image if image.mode == "L" else image.convert("L"))[..., None]
    elif image.mode != "RGB":
        image = image.convert("RGB")
    rgb = _array(image)
    if all(np.array_equal(band[..., 0], band[..., 1]) and np.array_equal(band[..., 1], band[..., 2])
           for band in map(rgb.__getitem__, row_bands(*rgb.shape[:2]))):
        return rgb[..., :1].copy()
    return rgb


def _array(image: Image.Image, dtype=None) -> np.ndarray:
    """``np.array(image, dtype)`` made a band of rows at a time: Pillow's own conversion of a whole
    picture holds the picture's bytes twice over, beside the image itself."""
    first = np.asarray(image.crop((0, 0, image.width, min(1, image.height))), dtype)
    values = np.empty((image.height, *first.shape[1:]), first.dtype)
    for rows in row_bands(image.height, image.width):
        values[rows] = np.asarray(image.crop((0, rows.start, image.width, rows.stop)), dtype)
    return values


def _float_range(values: np.ndarray) -> tuple[float, float]:
    if not np.isfinite(values).all():
        raise ValueError("the float picture holds NaN or infinite values")
    return float(values.min()), float(values.max())


def _stretch(values: np.ndarray, low: float, high: float) -> None:
    """Map finite float32 ``values`` from ``low..high`` to 0..1, in place.  The arithmetic is float64,
    a band of rows at a time: the span of a float32 picture can pass float32's largest value
    (3e38 - -3e38 is inf, and the picture came out NaN)."""
    span = high - low if high > low else 1.0  # Python floats: float64
    for rows in row_bands(*values.shape[:2]):
        values[rows] = (values[rows].astype(np.float64) - low) / span


def as_float(values: np.ndarray) -> np.ndarray:
    """uint8 0-255 -> float32 0-1 (a new array); float32 values are returned as they are."""
    return values.astype(np.float32) / np.float32(255.0) if values.dtype == np.uint8 else values


def _resize(values: np.ndarray, width: int, height: int) -> np.ndarray:
    if (width, height) == (values.shape[1], values.shape[0]):
        return values
    return resized_channels(values, width, height)


def resized_channels(values: np.ndarray, width: int, height: int, *, in_8_bits: bool = False) -> np.ndarray:
    """``(h, w, c)`` values (uint8 or float32) resized to ``width x height`` with Lanczos, as float32
    in [0, 1], a channel at a time: a 100 MP picture never exists whole as floats.  With
    ``in_8_bits`` a uint8 channel is resized as it is, in a quarter of the memory (within a level or
    two of the float resize: far under what resizing loses)."""
    in_8_bits = in_8_bits and values.dtype == np.uint8
    out = np.empty((height, width, values.shape[2]), np.float32)
    for c in range(values.shape[2]):
        channel = np.ascontiguousarray(values[..., c] if in_8_bits else as_float(values[..., c]))
        out[..., c] = np.asarray(Image.fromarray(channel).resize((width, height), Image.LANCZOS), np.float32)
    if in_8_bits:
        out *= np.float32(1 / 255)
    return np.clip(out, 0, 1, out=out)


def to_mode(values: np.ndarray, mode: str) -> np.ndarray:
    """Convert ``(h, w, c)`` values (uint8 or float32) to ``mode``, keeping uint8 where no arithmetic
    is needed; binary thresholds at 128/255 like the original (and is stored as uint8 0 or 255)."""
    if mode == "rgb":
        return values if values.shape[2] == 3 else np.repeat(values, 3, axis=2)
    gray = values if values.shape[2] == 1 else \
        (as_float(values) @ np.array([0.299, 0.587, 0.114], np.float32))[..., None]
    if mode == "binary":
        return np.where(as_float(gray) >= np.float32(128 / 255), np.uint8(255), np.uint8(0))
    return gray


def load_picture(path, *, mode: str | None = None, size=None, max_pixels: int = MAX_PIXELS,
                 flag: str | None = "--max-pixels") -> Picture:
    """Read an image or pixel CSV, resized to ``size`` and converted to ``mode``.

    ``mode`` None means rgb for colour images, gray otherwise (binary for a
    binary CSV).  ``size`` is N (longest side, aspect kept) or (W, H).  Files that
    declare more than ``max_pixels`` are refused before they are decoded, with a message that
    says to raise ``flag`` (None: a command without one).
    """
    path = os.fspath(path)
    if mode is not None and mode not in MODES:
        raise InputError(f"unknown mode {mode!r}: use one of {', '.join(MODES)}")
    notes = []
    if path.lower().endswith(CSV_SUFFIXES):
        values, csv_mode = read_pixel_levels(path)
        mode = mode or csv_mode
    else:
        image, notes = _open(path, max_pixels, flag)
        try:
            values = _decode(image, notes)
        except ValueError as exc:
            raise InputError(f"{path}: {exc}; re-export it with finite values") from None
        finally:
            image.close()  # frees Pillow's copy of the picture: only ``values`` is kept
        mode = mode or ("rgb" if values.shape[2] == 3 else "gray")
    height, width = values.shape[:2]
    if min(width, height) < MIN_SIDE:
        raise InputError(f"{path} is {width}x{height} pixels; ironlearn needs at least {MIN_SIDE}x{MIN_SIDE}")
    target_w, target_h = scaled_size(width, height, size)
    if min(target_w, target_h) < MIN_SIDE:
        raise InputError(f"--size gives {target_w}x{target_h} pixels; use at least {MIN_SIDE} on each side")
    if target_w * target_h > max_pixels:
        raise InputError(f"--size gives {target_w}x{target_h} pixels, more than ironlearn reads "
                         f"({_megapixels(max_pixels)}); choose a smaller size or raise --max-pixels")
    values = to_mode(_resize(values, target_w, target_h), mode)
    return Picture(values=np.ascontiguousarray(values), mode=mode, source=path, notes=notes)


def to_uint8(pixels: np.ndarray) -> np.ndarray:
    """[0, 1] floats -> 0-255 bytes (rounded, clipped), dropping a single channel axis."""
    out = np.clip(np.asarray(pixels, np.float32) * 255.0 + 0.5, 0, 255).astype(np.uint8)
    return out[..., 0] if out.ndim == 3 and out.shape[2] == 1 else out


def image_format(path) -> str | None:
    """The format Pillow writes for the suffix of ``path`` (``"PNG"`` for ``.png``); None when it
    writes none."""
    fmt = Image.registered_extensions().get(os.path.splitext(os.fspath(path))[1].lower())
    return fmt if fmt in Image.SAVE else None


def save_image(path, pixels: np.ndarray) -> None:
    """Write ``(h, w, c)`` [0, 1] pixels (or uint8) atomically; the format follows the suffix
    (PNG for a suffix no format has)."""
    array = pixels if pixels.dtype == np.uint8 else to_uint8(pixels)
    image = Image.fromarray(array[..., 0] if array.ndim == 3 and array.shape[2] == 1 else array)
    fmt = image_format(path) or "PNG"
    atomic_write(path, lambda file: image.save(file, format=fmt))


# -- the pixel CSV -------------------------------------------------------------------------
# A CSV row costs about 20 bytes of text and a picture's pixel 1 to 3, so both directions work
# PIECE_PIXELS rows at a time: what they hold beyond the picture does not grow with it.

def write_pixel_csv(path, picture: Picture) -> None:
    """Write one row per pixel, row-major: ``x,y,pixel_value`` (binary: 1 = black; gray: 0-255)
    or ``x,y,r,g,b`` (rgb, 0-255)."""
    header = b"x,y,r,g,b\n" if picture.mode == "rgb" else b"x,y,pixel_value\n"

    def write(file):
        file.write(header)
        for rows in row_bands(picture.height, picture.width):
            file.write(_csv_rows(picture, rows))

    atomic_write(path, write)


def _csv_rows(picture: Picture, rows: slice) -> bytes:
    """The CSV text of the pixels in ``rows`` of ``picture``."""
    band = picture.values[rows]
    levels = (band if band.dtype == np.uint8 else to_uint8(band)).reshape(-1, picture.channels)
    if picture.mode == "binary":
        levels = (levels < 128).view(np.uint8)  # 1 = black; as band() < 0.5, level for level
    ys, xs = np.divmod(np.arange(rows.start * picture.width, rows.stop * picture.width), picture.width)
    columns = [xs, ys, *levels.T]
    text = np.concatenate([_decimal(column, b"," if k < len(columns) - 1 else b"\n")
                           for k, column in enumerate(columns)], axis=1)
    return text[text != 0].tobytes()


def _decimal(numbers: np.ndarray, end: bytes) -> np.ndarray:
    """``(n,)`` whole numbers >= 0 -> ``(n, k)`` uint8: each one's decimal digits, then ``end``, with
    NUL bytes in place of its leading zeros (for the caller to drop).  The digits of each number
    in the range are worked out once, then looked up: a piece's columns span few numbers."""
    low, high = (int(numbers.min()), int(numbers.max())) if numbers.size else (0, 0)
    span = np.arange(low, high + 1, dtype=np.int64)[:, None]
    powers = 10 ** np.arange(len(str(high)) - 1, -1, -1, dtype=np.int64)
    digits = (span // powers % 10 + ord("0")).astype(np.uint8)
    digits[(span < powers) & (powers > 1)] = 0
    table = np.column_stack([digits, np.full(len(digits), ord(end), np.uint8)])
    return table[numbers - low]


def read_pixel_csv(path) -> tuple[np.ndarray, str]:
    """Read a pixel CSV; returns ``(pixels (h, w, c) in [0, 1], mode)``.

    A ``pixel_value`` column holding only 0 and 1 is binary (1 = black);
    otherwise gray 0-255, rounded to whole levels.  Every pixel of the
    ``(max x + 1) x (max y + 1)`` grid must appear exactly once.
    """
    levels, mode = read_pixel_levels(path)
    return as_float(levels), mode


def read_pixel_levels(path) -> tuple[np.ndarray, str]:
    """:func:`read_pixel_csv`'s picture as levels: ``(h, w, c)`` uint8, 0-255 (255 = white).

    The file is read twice, :data:`PIECE_PIXELS` rows at a time: once to check it and find the
    picture's size and mode, then to fill the picture.  Besides the picture it holds one byte a
    pixel (which pixels were seen) and one piece; rows too few or too many for the grid their
    coordinates span are refused holding no more than the rows (a file of two rows can declare
    a 10000x10000 grid).
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise InputError(f"{path}: no such file")
    try:
        with open(path, newline="", encoding="utf-8-sig") as file:
            columns = _csv_columns(path, file.readline())
            width, height, rows, mode = _survey_csv(path, file, len(columns))
            file.seek(0)
            file.readline()
            if rows != width * height:
                raise _misfit_rows(path, file, width, height, len(columns))
            return _fill_grid(path, file, width, height, len(columns) - 2, mode), mode
    except PermissionError:
        raise InputError(f"{path}: permission denied; make the file readable (chmod +r) or copy it") from None
    except (UnicodeDecodeError, csv.Error) as exc:
        raise InputError(f"{path} is not a text CSV ({exc}); give a pixel CSV with header x,y,pixel_value") from None


def _csv_columns(path: str, first_line: str) -> list[str]:
    """The columns the header ``first_line`` names, checked."""
    if not first_line:
        raise InputError(f"{path} is empty; a pixel CSV starts with the header x,y,pixel_value")
    header = [name.strip().lower() for name in next(csv.reader([first_line]), [])]
    if header in (["x", "y", "pixel_value"], ["x", "y", "r", "g", "b"]):
        return header
    missing = [c for c in ("x", "y", "pixel_value") if c not in header]
    what = f"missing column(s) {', '.join(missing)}" if missing and len(header) >= 2 else f"header is {','.join(header)}"
    raise InputError(f"{path}: {what}; a pixel CSV needs the header x,y,pixel_value (or x,y,r,g,b)")


def _csv_pieces(path: str, file, ncols: int):
    """``(lines, first line's number, numbers (n, ncols))`` for each piece of the rows after the header."""
    number = 2
    while lines := list(itertools.islice(file, PIECE_PIXELS)):
        yield lines, number, _parse_rows(path, lines, number, ncols)
        number += len(lines)


def _blank(line: str) -> bool:
    return not line.strip("\r\n")


def _parse_rows(path: str, lines: list, first: int, ncols: int) -> np.ndarray:
    """The numbers of the rows in ``lines`` (blank lines skipped) as ``(n, ncols)``: int64 for whole
    numbers written as such (NumPy parses those 4x as fast as floats), else float64."""
    filled = [line for line in lines if not _blank(line)]
    if not filled:
        return np.empty((0, ncols), np.int64)
    try:
        table = np.loadtxt(filled, delimiter=",", dtype=np.int64, comments=None, ndmin=2)
        if table.shape == (len(filled), ncols):
            return table
    except ValueError:
        pass
    rows = []  # what loadtxt does not take as it is: decimals, or an error to name by its line
    for number, row in enumerate(csv.reader(lines), start=first):
        if not row:
            continue
        if len(row) != ncols:
            raise InputError(f"{path}, line {number}: expected {ncols} values per row")
        try:
            rows.append([float(value) for value in row])
        except ValueError:
            raise InputError(f"{path}, line {number}: a non-numeric value; every cell must be a number") from None
    return np.array(rows, np.float64).reshape(-1, ncols)


def _line_number(lines: list, first: int, row: int) -> int:
    """The file's line number of the ``row``-th row (blank lines skipped) of the piece ``lines``."""
    return first + [i for i, line in enumerate(lines) if not _blank(line)][row]


def _survey_csv(path: str, file, ncols: int) -> tuple[int, int, int, str]:
    """The first reading: every row checked; returns the picture's ``(width, height, rows, mode)``."""
    rows, width, height, binary, low, high = 0, 0, 0, ncols == 3, math.inf, -math.inf
    for lines, first, table in _csv_pieces(path, file, ncols):
        if not len(table):
            continue
        bad = ~np.isfinite(table).all(axis=1)
        if bad.any():
            raise InputError(f"{path}, line {_line_number(lines, first, int(np.argmax(bad)))}: NaN or infinite "
                             "value; every cell must be a finite number")
        coords, values = table[:, :2], table[:, 2:]
        bad = ((coords < 0) | (coords != np.round(coords))).any(axis=1)
        if bad.any():
            raise InputError(f"{path}, line {_line_number(lines, first, int(np.argmax(bad)))}: coordinates must "
                             "be whole numbers from 0")
        rows += len(table)
        width, height = max(width, coords[:, 0].max() + 1), max(height, coords[:, 1].max() + 1)
        binary = binary and bool(np.isin(values, (0, 1)).all())
        low, high = min(low, values.min()), max(high, values.max())
    if not rows:
        raise InputError(f"{path} has a header but no pixels")
    if float(width) * float(height) > MAX_PIXELS:  # floats: 1e20 must not overflow an integer
        raise InputError(f"{path}: coordinates reach {width:.0f}x{height:.0f} pixels, more than ironlearn reads "
                         f"({_megapixels(MAX_PIXELS)}); check the x and y columns")
    if not binary and (low < 0 or high > 255):
        raise InputError(f"{path}: pixel values must lie in 0-255 (or be 0/1 for a binary drawing)")
    return int(width), int(height), rows, "binary" if binary else ("gray" if ncols == 3 else "rgb")


def _fill_grid(path: str, file, width: int, height: int, channels: int, mode: str) -> np.ndarray:
    """The second reading: the picture ``(height, width, channels)`` as levels, every pixel once."""
    grid = np.empty((height, width, channels), np.uint8)
    seen = np.zeros(height * width, bool)
    for _, _, table in _csv_pieces(path, file, channels + 2):
        xs, ys = table[:, 0].astype(np.int64), table[:, 1].astype(np.int64)
        if len(table) and (xs.max() >= width or ys.max() >= height):
            raise InputError(f"{path} changed while it was read; read it again once it is written")
        flat = ys * width + xs
        twice = _first_repeat(flat, seen)
        if twice is not None:
            raise InputError(f"{path}: pixel x={twice % width}, y={twice // width} appears more than once")
        seen[flat] = True
        values = table[:, 2:]
        grid.reshape(-1, channels)[flat] = (1 - values) * 255 if mode == "binary" else np.floor(values + 0.5)
    if not seen.all():  # as many rows as pixels, none twice: only a file changed since the first reading
        raise InputError(f"{path} changed while it was read; read it again once it is written")
    return grid


def _misfit_rows(path: str, file, width: int, height: int, ncols: int) -> InputError:
    """The error for rows that cannot cover the grid once each (there are not ``width x height``),
    naming the first pixel given twice, else the first missing; it holds 8 bytes a row."""
    flat = np.sort(np.concatenate([table[:, 1].astype(np.int64) * width + table[:, 0].astype(np.int64)
                                   for _, _, table in _csv_pieces(path, file, ncols)]))
    twice = flat[1:] == flat[:-1]
    if twice.any():
        pixel = int(flat[1:][np.argmax(twice)])
        return InputError(f"{path}: pixel x={pixel % width}, y={pixel // width} appears more than once")
    gaps = flat != np.arange(len(flat))
    pixel = int(np.argmax(gaps)) if gaps.any() else len(flat)
    return InputError(f"{path}: {width * height - len(flat)} pixel(s) of the {width}x{height} grid are missing "
                      f"(first: x={pixel % width}, y={pixel // width}); every pixel needs a row")


def _first_repeat(flat: np.ndarray, seen: np.ndarray) -> int | None:
    """A pixel index of ``flat`` already ``seen`` or twice in ``flat``; None when there is none."""
    again = seen[flat]
    if again.any():
        return int(flat[np.argmax(again)])
    ordered = np.sort(flat)
    twice = ordered[1:] == ordered[:-1]
    return int(ordered[1:][np.argmax(twice)]) if twice.any() else None
