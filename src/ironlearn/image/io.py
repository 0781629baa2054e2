"""Reading and writing pictures: image files (via Pillow) and the original project's pixel CSV.

Inside ironlearn a picture is a float32 array ``(height, width, channels)`` of
intensities in [0, 1] (1 = white), with ``channels`` 1 (gray, binary) or 3 (rgb).
The pixel CSV keeps the original project's convention instead: in binary mode
``pixel_value`` is 1 for black and 0 for white; in gray mode it is the 0-255
intensity; rgb files have ``r,g,b`` columns (0-255).
"""

from __future__ import annotations

import csv
import io
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
    image = ImageOps.exif_transpose(image)  # upright as the camera meant; frame 0 of an animation
    if image.mode == "F":
        values = np.array(image, dtype=np.float32)  # a copy: Pillow's buffer is read-only
        low, high = _float_range(values)
        if not (low >= 0 and high <= 1):  # a float file has no fixed white, as 255 is for 8 bits
            notes.append(f"float values from {low:.4g} to {high:.4g}, stretched to black..white")
            values -= np.float32(low)
            values /= np.float32(high - low if high > low else 1.0)
        return values[..., None]
    if image.mode in ("I;16", "I;16B", "I;16L", "I"):
        values = np.array(image, dtype=np.float32)  # a copy: Pillow's buffer is read-only
        peak = 65535.0 if image.mode.startswith("I;16") or values.max(initial=0) > 255 else 255.0
        values /= np.float32(peak)
        return np.clip(values, 0, 1, out=values)[..., None]
    has_alpha = image.mode in ("RGBA", "LA", "PA", "La", "RGBa") or "transparency" in image.info
    if has_alpha:
        rgba = image.convert("RGBA")
        background = Image.new("RGBA", rgba.size, (255, 255, 255, 255))
        image = Image.alpha_composite(background, rgba).convert("RGB")
    elif image.mode in ("1", "L"):
        return np.asarray(image.convert("L"))[..., None]
    else:
        image = image.convert("RGB")
    rgb = np.asarray(image)
    if np.array_equal(rgb[..., 0], rgb[..., 1]) and np.array_equal(rgb[..., 1], rgb[..., 2]):
        return rgb[..., :1].copy()
    return rgb


def _float_range(values: np.ndarray) -> tuple[float, float]:
    if not np.isfinite(values).all():
        raise ValueError("the float picture holds NaN or infinite values")
    return float(values.min()), float(values.max())


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
        values, csv_mode = read_pixel_csv(path)
        mode = mode or csv_mode
    else:
        image, notes = _open(path, max_pixels, flag)
        try:
            values = _decode(image, notes)
        except ValueError as exc:
            raise InputError(f"{path}: {exc}; re-export it with finite values") from None
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
    image = Image.fromarray(array)
    fmt = image_format(path) or "PNG"
    atomic_write(path, lambda file: image.save(file, format=fmt))


# -- the pixel CSV -------------------------------------------------------------------------
def write_pixel_csv(path, picture: Picture) -> None:
    """Write one row per pixel, row-major: ``x,y,pixel_value`` (binary: 1 = black; gray: 0-255)
    or ``x,y,r,g,b`` (rgb, 0-255)."""
    height, width = picture.height, picture.width
    ys, xs = np.divmod(np.arange(height * width), width)
    if picture.mode == "binary":
        header, values = "x,y,pixel_value", (picture.band()[..., 0] < 0.5).astype(np.int64).reshape(-1, 1)
    elif picture.mode == "gray":
        header, values = "x,y,pixel_value", to_uint8(picture.pixels).astype(np.int64).reshape(-1, 1)
    else:
        header, values = "x,y,r,g,b", to_uint8(picture.pixels).astype(np.int64).reshape(-1, 3)
    table = np.column_stack([xs, ys, values])
    buffer = io.StringIO()
    np.savetxt(buffer, table, fmt="%d", delimiter=",", header=header, comments="")
    atomic_write(path, lambda file: file.write(buffer.getvalue().encode()))


def read_pixel_csv(path) -> tuple[np.ndarray, str]:
    """Read a pixel CSV; returns ``(pixels (h, w, c) in [0, 1], mode)``.

    A ``pixel_value`` column holding only 0 and 1 is binary (1 = black);
    otherwise gray 0-255.  Every pixel of the ``(max x + 1) x (max y + 1)``
    grid must appear exactly once.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise InputError(f"{path}: no such file")
    try:
        with open(path, newline="", encoding="utf-8-sig") as file:
            rows = list(csv.reader(file))
    except PermissionError:
        raise InputError(f"{path}: permission denied; make the file readable (chmod +r) or copy it") from None
    except (UnicodeDecodeError, csv.Error) as exc:
        raise InputError(f"{path} is not a text CSV ({exc}); give a pixel CSV with header x,y,pixel_value") from None
    if not rows:
        raise InputError(f"{path} is empty; a pixel CSV starts with the header x,y,pixel_value")
    header = [name.strip().lower() for name in rows[0]]
    if header[:3] == ["x", "y", "pixel_value"] and len(header) == 3:
        value_columns = ["pixel_value"]
    elif header == ["x", "y", "r", "g", "b"]:
        value_columns = ["r", "g", "b"]
    else:
        missing = [c for c in ("x", "y", "pixel_value") if c not in header]
        what = f"missing column(s) {', '.join(missing)}" if missing and len(header) >= 2 else f"header is {','.join(header)}"
        raise InputError(f"{path}: {what}; a pixel CSV needs the header x,y,pixel_value (or x,y,r,g,b)")
    body = rows[1:]
    if not body:
        raise InputError(f"{path} has a header but no pixels")
    ncols = len(header)
    ragged = next((i for i, row in enumerate(body, start=2) if row and len(row) != ncols), None)
    if ragged is not None:
        raise InputError(f"{path}, line {ragged}: expected {ncols} values per row")
    try:
        table = np.array([[float(v) for v in row] for row in body if row], np.float64).reshape(-1, ncols)
    except ValueError:
        line = next(i for i, row in enumerate(body, start=2) if row and not _all_numeric(row))
        raise InputError(f"{path}, line {line}: a non-numeric value; every cell must be a number") from None
    if not np.isfinite(table).all():
        line = int(np.argmax(~np.isfinite(table).all(axis=1))) + 2
        raise InputError(f"{path}, line {line}: NaN or infinite value; every cell must be a finite number")
    coords = table[:, :2]
    if (coords < 0).any() or (coords != np.round(coords)).any():
        line = int(np.argmax(((coords < 0) | (coords != np.round(coords))).any(axis=1))) + 2
        raise InputError(f"{path}, line {line}: coordinates must be whole numbers from 0")
    width, height = coords.max(axis=0) + 1  # still floats: 1e20 must not overflow an integer
    if width * height > MAX_PIXELS:
        raise InputError(f"{path}: coordinates reach {width:.0f}x{height:.0f} pixels, more than ironlearn reads "
                         f"({_megapixels(MAX_PIXELS)}); check the x and y columns")
    xs, ys = coords[:, 0].astype(np.int64), coords[:, 1].astype(np.int64)
    width, height = int(width), int(height)
    counts = np.bincount(ys * width + xs, minlength=width * height)
    if (counts > 1).any():
        flat = int(np.argmax(counts > 1))
        raise InputError(f"{path}: pixel x={flat % width}, y={flat // width} appears more than once")
    if (counts == 0).any():
        flat = int(np.argmax(counts == 0))
        raise InputError(f"{path}: {int((counts == 0).sum())} pixel(s) of the {width}x{height} grid are missing "
                         f"(first: x={flat % width}, y={flat // width}); every pixel needs a row")
    values = table[:, 2:]
    grid = np.empty((height, width, len(value_columns)), np.float32)
    if value_columns == ["pixel_value"] and np.isin(values, (0, 1)).all():
        grid[ys, xs] = 1.0 - values  # 1 = black in the file, 1 = white inside
        return grid, "binary"
    if values.min() < 0 or values.max() > 255:
        raise InputError(f"{path}: pixel values must lie in 0-255 (or be 0/1 for a binary drawing)")
    grid[ys, xs] = values / 255.0
    return grid, ("gray" if len(value_columns) == 1 else "rgb")


def _all_numeric(row) -> bool:
    try:
        [float(v) for v in row]
    except ValueError:
        return False
    return True
