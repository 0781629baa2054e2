"""Reading and writing pictures: image files (via Pillow), and pixel CSVs (:mod:`~ironlearn.image.pixel_csv`).

A picture inside ironlearn is a :class:`~ironlearn.image.picture.Picture`; the names of both
modules are importable from here, the one door to pictures on disk.
"""

from __future__ import annotations

import mmap
import os
import re
import struct
import zlib

import numpy as np
from PIL import Image, ImageOps, UnidentifiedImageError

from ..files import atomic_write

# The one door to pictures on disk: what the two modules below define is importable from here too.
from .picture import (MAX_PIXELS, MIN_SIDE, MODES, PIECE_PIXELS, InputError, Picture, as_float,  # noqa: F401
                      megapixels, parse_size, row_bands, scaled_size, to_uint8)
from .pixel_csv import CSV_SUFFIXES, read_pixel_csv, read_pixel_levels, write_pixel_csv  # noqa: F401


# -- images ------------------------------------------------------------------------------
#: The image formats ironlearn reads (Pillow's names; MPO is how Pillow opens many phones' JPEGs).
#: Pillow would open more, some through other programs (an EPS runs Ghostscript): none of them is
#: tried on a file from elsewhere.
READ_FORMATS = ("PNG", "JPEG", "MPO", "WEBP", "BMP", "TIFF", "GIF", "PPM")
#: How the formats are named to people.
READ_FORMATS_TEXT = "PNG, JPEG, WebP, BMP, TIFF, GIF or PPM"
#: A picture of up to this many pixels is read whatever the size of its file: it costs little.
PLAIN_PIXELS = 1 << 22
#: Past :data:`PLAIN_PIXELS`, the most pixels a byte of its file a picture may declare, by format
#: (:func:`_check_plausible`): a JPEG codes each 8x8 block in a bit at least, so a whole one holds
#: at most 512; a BMP's runs hold at most 127.5 (255 pixels in 2 bytes), a PPM's samples 8 (a bit
#: a pixel).  A PNG is not bounded: its image data is counted whole instead (:func:`_check_png_whole`).
PIXELS_PER_BYTE = {"JPEG": 512, "MPO": 512, "BMP": 256, "PPM": 16}
#: The same for the formats that code a flat area in next to nothing (GIF, WebP, TIFF): past the
#: densest real pictures measured (a drawing enlarged 8 times, as lossless WebP: 2,826 a byte),
#: short of flat ones (white 8000x8000 as lossless WebP: 25,539; as a G4 TIFF: 14,000), which the
#: user reads knowingly (``--max-pixels``; measured: docs/reliability.md, 'How a run stays safe').
FLAT_PIXELS_PER_BYTE = 8192
#: The most scans a JPEG may have: each decodes the whole picture again (2,000 copies of one scan made
#: a 48 KB file of 4 MP take 6.6 s; measured: docs/benchmark-log.md, 'reliability.md: what it held
#: before it became documentation'), and encoders write 1 to about 12 (Pillow's progressive: 10;
#: docs/reliability.md, 'How a run stays safe').
MAX_JPEG_SCANS = 100
#: A marker inside a JPEG's coded data: 0xFF then neither a stuffed 0, a restart marker nor fill.
_JPEG_MARKER = re.compile(rb"\xff[^\x00\xd0-\xd7\xff]")


def _formats() -> list[str]:
    """:data:`READ_FORMATS` that this Pillow has (a build may lack WebP)."""
    Image.init()
    return [name for name in READ_FORMATS if name in Image.OPEN]


def _inflated_bytes(file) -> tuple[int, dict]:
    """The bytes the image data of the PNG ``file`` (checked by Pillow) inflates to, counted a
    piece at a time (none held), and its IHDR fields."""
    file.seek(8)
    _, _, width, height, depth, colour, _, _, interlace = struct.unpack(">I4sIIBBBBB", file.read(21))
    header = dict(width=width, height=height, depth=depth, colour=colour, interlace=interlace)
    file.seek(8)
    inflate, total = zlib.decompressobj(), 0
    while not inflate.eof:
        head = file.read(8)
        if len(head) < 8:
            break
        length, kind = struct.unpack(">I4s", head)
        if kind == b"IDAT":
            for left in range(length, 0, -(1 << 20)):
                data = file.read(min(left, 1 << 20))
                while data and not inflate.eof:
                    total += len(inflate.decompress(data, 1 << 20))
                    data = inflate.unconsumed_tail
        else:
            file.seek(length, os.SEEK_CUR)
        file.seek(4, os.SEEK_CUR)  # the chunk's CRC (Pillow has checked it)
    return total, header


def _png_data_bytes(width: int, height: int, depth: int, colour: int, interlace: int) -> int:
    """The bytes a PNG of these IHDR fields inflates to: each row's filter byte and samples, over
    the seven passes of an interlaced one."""
    bits = depth * {0: 1, 2: 3, 3: 1, 4: 2, 6: 4}.get(colour, 4)
    passes = ([(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]
              if interlace else [(0, 0, 1, 1)])
    total = 0
    for x0, y0, dx, dy in passes:
        columns, rows = -(-(width - x0) // dx), -(-(height - y0) // dy)
        if columns > 0 and rows > 0:
            total += rows * (1 + -(-columns * bits // 8))
    return total


def _check_png_whole(path: str) -> None:
    """Refuse a PNG whose image data stops before its last row: Pillow draws the rows it never
    got black and says nothing (a 167-byte file declaring 10000x10000 read as a picture)."""
    with open(path, "rb") as file:
        got, header = _inflated_bytes(file)
    expected = _png_data_bytes(**header)
    if got < expected:
        raise InputError(f"{path}: the image is truncated or corrupt (its pixel data stops after {got:,} of "
                         f"{expected:,} bytes); re-export it")


def _check_plausible(path: str, image: Image.Image, option: str | None) -> None:
    """Refuse a picture that declares more pixels than its file plausibly holds (:data:`PIXELS_PER_BYTE`),
    before it is decoded: Pillow decodes a truncated or crafted file whole, the pixels it never got
    drawn black (files of 35 to 1,389 bytes declaring 10000x10000 became 1.1 to 2.2 GB of CSV;
    measured: docs/benchmark-log.md, 'reliability.md: what it held before it became documentation')."""
    if image.format == "PNG":
        return
    width, height = image.size
    size, most = os.path.getsize(path), PIXELS_PER_BYTE.get(image.format, FLAT_PIXELS_PER_BYTE)
    if width * height <= max(PLAIN_PIXELS, most * size):
        return
    name = {"WEBP": "WebP", "MPO": "JPEG"}.get(image.format, image.format)
    anyway = f", or give {{{option}}} {width * height} to read it as it is" if option else ""
    raise InputError(f"{path} declares {width}x{height} pixels in {size:,} bytes, more than real {name} pictures hold "
                     f"({most:,} pixels a byte past {megapixels(PLAIN_PIXELS)}): it is truncated or crafted "
                     f"(re-export it), or flat (save it as PNG{anyway})", *[option] if option else [])


def _jpeg_scans(data) -> int:
    """How many scans (start-of-scan markers) the first picture in the JPEG ``data`` has, walking
    its segments by their lengths and its coded data to the next marker."""
    scans, at = 0, 2
    while at + 4 <= len(data) and data[at] == 0xFF:
        kind, length = data[at + 1], struct.unpack(">H", data[at + 2:at + 4])[0]
        if kind == 0xD9:  # the end of the picture (an MPO's next one follows)
            break
        if kind == 0xFF:  # fill before a marker
            at += 1
            continue
        at += 2 + length
        if kind == 0xDA:
            scans += 1
            found = _JPEG_MARKER.search(data, at)
            at = found.start() if found else len(data)
    return scans


def _check_jpeg_scans(path: str) -> None:
    """Refuse a JPEG of more than :data:`MAX_JPEG_SCANS` scans, before it is decoded."""
    with open(path, "rb") as file, mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as data:
        scans = _jpeg_scans(data)
    if scans > MAX_JPEG_SCANS:
        raise InputError(f"{path} is a JPEG of {scans:,} scans, more than encoders write ({MAX_JPEG_SCANS}), and "
                         "each decodes the whole picture again; re-export it")


def _over_limit(path: str, width: int, height: int, max_pixels: int, what: str = "declares",
                option: str | None = "max_pixels") -> InputError:
    """The error for a picture past ``max_pixels``; ``option`` is the option that raises the limit
    (None: the caller has none)."""
    if option is None:
        return InputError(f"{path} {what} {width}x{height} pixels, more than this command takes "
                          f"({megapixels(max_pixels)}); resize it first")
    if max_pixels == MAX_PIXELS:
        return InputError(f"{path} {what} {width}x{height} pixels, more than ironlearn reads "
                          f"({megapixels(max_pixels)}); resize it first, or raise {{{option}}}", option)
    return InputError(f"{path} {what} {width}x{height} pixels, over the limit you set ({{{option}}} {max_pixels:,}); "
                      "raise it, or resize the picture first", option)


def _open(path: str, max_pixels: int = MAX_PIXELS, option: str | None = "max_pixels",
          plausible: bool = True) -> tuple[Image.Image, list[str]]:
    """The image at ``path``, decoded once its declared size is known to be within ``max_pixels``
    (and, with ``plausible``, within what its file holds: :func:`_check_plausible`), and the notes
    on how it was read (:func:`_notes`)."""
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
        image = Image.open(path, formats=_formats())
        width, height = image.size
        if width * height > max_pixels:
            raise _over_limit(path, width, height, max_pixels, option=option)
        if plausible:
            _check_plausible(path, image, option)
        notes = _notes(path, image)  # before load(), which forgets how the file stores its samples
        if image.format == "PNG":
            _check_png_whole(path)
        elif image.format in ("JPEG", "MPO"):
            _check_jpeg_scans(path)
        image.load()
    except InputError:
        raise
    except PermissionError:
        raise InputError(f"{path}: permission denied; make the file readable (chmod +r) or copy it") from None
    except UnidentifiedImageError:
        raise InputError(f"{path} is not a picture ironlearn reads; give a {READ_FORMATS_TEXT} file, "
                         "or a pixel CSV (.csv)") from None
    except (OSError, SyntaxError, ValueError) as exc:
        raise InputError(f"{path}: the image is truncated or corrupt ({exc}); re-export it") from None
    finally:
        Image.MAX_IMAGE_PIXELS = guard
    return image, notes


#: Pillow's modes that decode to one channel (``_decode``); the rest decode to three, or to one
#: where all three are equal.
_GRAY_MODES = ("1", "L", "LA", "La", "I", "I;16", "I;16B", "I;16L", "F")


def declared_size(path) -> tuple[int, int, int] | None:
    """``(width, height, channels)`` as an image file declares them, read from its header without
    decoding it (for a refusal by size before any work); None for a pixel CSV or a file Pillow
    does not open (:func:`load_picture` then says what is wrong with it)."""
    path = os.fspath(path)
    if path.lower().endswith(CSV_SUFFIXES):
        return None
    guard = Image.MAX_IMAGE_PIXELS
    try:
        Image.MAX_IMAGE_PIXELS = None  # the size is what is asked for, however large
        with Image.open(path, formats=_formats()) as image:
            return (*image.size, 1 if image.mode in _GRAY_MODES else 3)
    except (OSError, SyntaxError, ValueError):  # UnidentifiedImageError among them
        return None
    finally:
        Image.MAX_IMAGE_PIXELS = guard


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


def load_picture(path, *, mode: str | None = None, size=None, max_pixels: int | None = None,
                 option: str | None = "max_pixels", max_enlarged: int | None = None,
                 plausible: bool | None = None) -> Picture:
    """Read an image or pixel CSV, resized to ``size`` and converted to ``mode``.

    ``mode`` None means rgb for colour images, gray otherwise (binary for a
    binary CSV).  ``size`` is N (longest side, aspect kept) or (W, H).  Files that
    declare more than ``max_pixels`` (None: :data:`MAX_PIXELS`) are refused before they are
    decoded, with a message that says to raise ``option`` (None: a caller without one).  With ``max_enlarged``, a ``size`` of
    more pixels than both the file's own and ``max_enlarged`` is refused before any resize (for
    a size read from a file from elsewhere: a model's settings claiming 100 MP made ``view``
    resize any picture to it, 2.3 GB; measured: the same log section as :func:`_check_plausible`'s).
    With ``plausible`` (by default, unless ``max_pixels`` is given: a limit the user raised
    knowingly), a file that declares more pixels than it plausibly holds is refused too, before
    it is decoded (:data:`PIXELS_PER_BYTE`).
    """
    path = os.fspath(path)
    plausible = max_pixels is None if plausible is None else plausible
    max_pixels = MAX_PIXELS if max_pixels is None else max_pixels
    if mode is not None and mode not in MODES:
        raise InputError(f"unknown mode {mode!r}: use one of {', '.join(MODES)}")
    notes = []
    if path.lower().endswith(CSV_SUFFIXES):
        values, csv_mode = read_pixel_levels(path)
        mode = mode or csv_mode
    else:
        image, notes = _open(path, max_pixels, option, plausible)
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
    if isinstance(size, int) and size > max_pixels:  # and 10**400 is past what scaled_size's float division takes
        raise InputError(f"{{size}} {size} is a longer side than ironlearn reads ({megapixels(max_pixels)} in all); "
                         "choose a smaller size or raise {max_pixels}", "size", "max_pixels")
    target_w, target_h = scaled_size(width, height, size)
    if min(target_w, target_h) < MIN_SIDE:
        raise InputError(f"{{size}} gives {target_w}x{target_h} pixels; use at least {MIN_SIDE} on each side", "size")
    if max_enlarged is not None and target_w * target_h > max(width * height, max_enlarged):
        raise InputError(f"{path}: a size of {target_w}x{target_h} enlarges its {width}x{height} pixels past "
                         f"{megapixels(max_enlarged)}")
    if target_w * target_h > max_pixels:
        raise InputError(f"{{size}} gives {target_w}x{target_h} pixels, more than ironlearn reads "
                         f"({megapixels(max_pixels)}); choose a smaller size or raise {{max_pixels}}", "size", "max_pixels")
    values = to_mode(_resize(values, target_w, target_h), mode)
    return Picture(values=np.ascontiguousarray(values), mode=mode, source=path, notes=notes)


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
