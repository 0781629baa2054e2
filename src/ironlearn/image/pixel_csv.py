"""The original project's pixel CSV: one row per pixel, ``x,y,pixel_value`` (binary: 1 = black; gray:
0-255 intensity) or ``x,y,r,g,b`` (rgb, 0-255), read and written in pieces."""

from __future__ import annotations

import csv
import itertools
import math
import os

import numpy as np

from ..files import atomic_write
from .picture import MAX_PIXELS, PIECE_PIXELS, InputError, Picture, as_float, megapixels, row_bands, to_uint8

CSV_SUFFIXES = (".csv", ".txt")


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
    numbers written as such (NumPy parses those several times as fast as floats; measured:
    docs/benchmark-log.md, 'Measurements the code's comments quoted'), else float64."""
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
        # Python's integers: x = 2**63 - 1 plus one wrapped int64 round to a width of 0 or below
        width, height = max(width, int(coords[:, 0].max()) + 1), max(height, int(coords[:, 1].max()) + 1)
        binary = binary and bool(np.isin(values, (0, 1)).all())
        low, high = min(low, values.min()), max(high, values.max())
    if not rows:
        raise InputError(f"{path} has a header but no pixels")
    if float(width) * float(height) > MAX_PIXELS:  # floats: 1e20 must not overflow an integer
        raise InputError(f"{path}: coordinates reach {width:.0f}x{height:.0f} pixels, more than ironlearn reads "
                         f"({megapixels(MAX_PIXELS)}); check the x and y columns")
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
