"""The byte container of a compressed picture: signature, version, checked header, checked sections.

A file is, byte by byte (``uvarint`` is an unsigned LEB128 number, 1 byte below 128)::

    MAGIC                       4 bytes  b"\\x89ILC"
    version                     1 byte   VERSION
    header length               uvarint  0 .. MAX_HEADER_BYTES
    header                      that many bytes (fields written with Writer, read with Reader)
    header CRC32                4 bytes  little-endian, of the version byte followed by the header
    section count               uvarint  0 .. MAX_SECTIONS
    per section: length         uvarint  0 .. MAX_FILE_BYTES
                 CRC32          4 bytes  little-endian, of that section's payload
    the payloads, one after another, nothing after the last

The overhead is 11 bytes plus 5 or 6 per section (29 bytes for a 40-byte header and three
sections of 128 B to 16 KB).  Every byte is covered by a check or a length: the signature, the
version, a CRC32, or the rule that the section lengths add up to exactly the bytes left.

:func:`unpack` refuses any file it cannot read fully with one :class:`CodecError` whose message is
a single line for the user: what is wrong, then what to do, meant to follow ``"PATH: "``.  It
checks every length against the bytes actually present before it slices anything, so a
damaged or hostile file can make it allocate no more than the file's own size.  Nothing in a
file is ever run: the header is a flat sequence of numbers and bytes, read by :class:`Reader`.
"""

from __future__ import annotations

import math
import operator
import os
import stat
import struct
import zlib

#: The first bytes of every file.  The non-ASCII first byte catches transfers in text mode
#: (7-bit channels clear its top bit), as PNG's signature does.
MAGIC = b"\x89ILC"
#: The format this module writes.  It reads it, format 6 (the same without a learned context
#: model: :mod:`.context`), format 5 (the same, its scales computed with the
#: C library's exp and log instead of :mod:`.portable`'s), format 4 (format 5 with its grids
#: upsampled by Keys' a = -0.5 instead of -0.75) and format 3 (format 4 without the grids'
#: filters); formats 1 (the first codec, whose header had no grid steps) and 2 (one Laplace a
#: grid, no context model) are refused with a line that says to compress the picture again.
VERSION = 7
READABLE = (3, 4, 5, 6, 7)
MAX_HEADER_BYTES = 1 << 16
MAX_SECTIONS = 256
#: The largest file :func:`pack` writes and :func:`read_file` reads by default (256 MiB).
MAX_FILE_BYTES = 1 << 28
#: LEB128 takes 10 bytes for any 64-bit number; a longer one is damage, not data.
MAX_VARINT_BYTES = 10
CRC_BYTES = 4

TRUNCATED_HINT = "copy the whole file again"
CORRUPTED_HINT = "copy the file again, or compress the picture again"
FOREIGN_HINT = "give a file that `ironlearn compress` wrote"


class CodecError(ValueError):
    """A compressed file that cannot be read: the message is one line for the user."""


def _as_bytes(value, name: str) -> bytes:
    """``value`` as ``bytes``; ``TypeError`` for anything but bytes, bytearray or memoryview.

    ``bytes(5)`` is five zero bytes, so an int passed by mistake must be refused, not converted.
    """
    if not isinstance(value, (bytes, bytearray, memoryview)):
        raise TypeError(f"{name} must be bytes, not {type(value).__name__}")
    return bytes(value)


def _crc(data: bytes) -> bytes:
    """The CRC32 of ``data`` as 4 bytes, little-endian."""
    return zlib.crc32(data).to_bytes(CRC_BYTES, "little")


class Writer:
    """Builds a header (or any flat record) field by field; each method returns the writer.

    Examples
    --------
    >>> header = Writer().uint(512).sint(-3).float32(0.5).raw(b"rgb").getvalue()
    >>> len(header)
    10
    """

    def __init__(self):
        self._buffer = bytearray()

    def uint(self, value: int) -> Writer:
        """Append ``value`` (``0 <= value < 2**64``) as an unsigned LEB128 varint (1-10 bytes)."""
        value = operator.index(value)
        if not 0 <= value < 1 << 64:
            raise ValueError(f"uint takes 0 <= value < 2**64, not {value}")
        while value >= 0x80:
            self._buffer.append((value & 0x7F) | 0x80)  # 7 bits, and "more follow"
            value >>= 7
        self._buffer.append(value)
        return self

    def sint(self, value: int) -> Writer:
        """Append ``value`` (``-2**63 <= value < 2**63``) as a zigzag varint: 0, -1, 1, -2 -> 0, 1, 2, 3."""
        value = operator.index(value)
        if not -(1 << 63) <= value < 1 << 63:
            raise ValueError(f"sint takes -2**63 <= value < 2**63, not {value}")
        return self.uint(2 * value if value >= 0 else -2 * value - 1)

    def float32(self, value: float) -> Writer:
        """Append ``value`` rounded to an IEEE float32, 4 bytes little-endian."""
        try:
            self._buffer += struct.pack("<f", value)
        except OverflowError:
            raise ValueError(f"{value} is too large for a float32") from None
        return self

    def raw(self, data: bytes) -> Writer:
        """Append ``data`` as it is; the reader must know its length."""
        self._buffer += _as_bytes(data, "raw data")
        return self

    def getvalue(self) -> bytes:
        """The bytes written so far."""
        return bytes(self._buffer)


class Reader:
    """Reads back what a :class:`Writer` wrote, refusing anything unexpected with :class:`CodecError`.

    Parameters
    ----------
    data : bytes
        The record to read, e.g. the header :func:`unpack` returned.
    what : str
        The part being read, as messages name it: "the {what} ends inside {name}".

    Every read checks the bytes left before it takes any, and every number read is checked
    against the bounds the caller gives; call :meth:`done` at the end to refuse leftovers.
    """

    def __init__(self, data: bytes, what: str = "header"):
        self._data = _as_bytes(data, "data")
        self._position = 0
        self.what = what

    def _truncated(self, name: str, detail: str = "") -> CodecError:
        return CodecError(f"truncated: the {self.what} ends inside {name}{detail}; {TRUNCATED_HINT}")

    def _corrupted(self, problem: str) -> CodecError:
        return CodecError(f"corrupted: in the {self.what}, {problem}; {CORRUPTED_HINT}")

    def _take(self, size: int, name: str) -> bytes:
        left = len(self._data) - self._position
        if size > left:
            raise self._truncated(name, f" ({size} bytes needed, {left} left)" if size > 1 else "")
        start, self._position = self._position, self._position + size
        return self._data[start:self._position]

    def _varint(self, name: str) -> int:
        """An unsigned LEB128 number of at most MAX_VARINT_BYTES bytes, in its shortest form."""
        value = 0
        for index in range(MAX_VARINT_BYTES):
            byte = self._take(1, name)[0]
            value |= (byte & 0x7F) << (7 * index)
            if byte < 0x80:
                # A final zero byte adds nothing: the Writer never makes one, so it is damage.
                if byte == 0 and index > 0:
                    raise self._corrupted(f"{name} has a needless zero byte")
                return value
        raise self._corrupted(f"{name} runs over {MAX_VARINT_BYTES} bytes")

    def _in_bounds(self, value: int, low: int, high: int, name: str) -> int:
        if not low <= value <= high:
            raise self._corrupted(f"{name} is {value}, outside {low}..{high}")
        return value

    def uint(self, low: int = 0, high: int = 2**32 - 1, name: str = "a field") -> int:
        """An unsigned varint in ``[low, high]``."""
        return self._in_bounds(self._varint(name), low, high, name)

    def sint(self, low: int, high: int, name: str = "a field") -> int:
        """A zigzag varint in ``[low, high]``."""
        zigzag = self._varint(name)
        value = zigzag // 2 if zigzag % 2 == 0 else -(zigzag + 1) // 2
        return self._in_bounds(value, low, high, name)

    def float32(self, name: str = "a field", finite: bool = True) -> float:
        """A little-endian float32; NaN and infinities are refused unless ``finite`` is False."""
        (value,) = struct.unpack("<f", self._take(4, name))
        if finite and not math.isfinite(value):
            raise self._corrupted(f"{name} is {value}, not a finite number")
        return value

    def raw(self, size: int, name: str = "a field") -> bytes:
        """The next ``size`` bytes (``size >= 0``: the caller's own, already bounded, number)."""
        if size < 0:
            raise ValueError(f"raw takes a size >= 0, not {size}")
        return self._take(size, name)

    def done(self) -> None:
        """Refuse bytes left over after the last field."""
        left = len(self._data) - self._position
        if left:
            raise self._corrupted(f"{left} extra byte(s) at the end")


def pack(header: bytes, sections: list[bytes]) -> bytes:
    """The file holding ``header`` and ``sections`` (layout in the module's docstring).

    Parameters
    ----------
    header : bytes
        At most MAX_HEADER_BYTES bytes, usually built with :class:`Writer`.
    sections : list of bytes
        At most MAX_SECTIONS entropy-coded payloads, each with its own CRC32.

    Raises
    ------
    ValueError
        When the header, the number of sections or the whole file is over its bound:
        nothing is returned that :func:`unpack` or :func:`read_file` would refuse.
    TypeError
        When the header or a section is not bytes.
    """
    header = _as_bytes(header, "the header")
    sections = [_as_bytes(section, f"section {index}") for index, section in enumerate(sections)]
    if len(header) > MAX_HEADER_BYTES:
        raise ValueError(f"the header has {len(header)} bytes, over the {MAX_HEADER_BYTES} a file may hold")
    if len(sections) > MAX_SECTIONS:
        raise ValueError(f"{len(sections)} sections, over the {MAX_SECTIONS} a file may hold")
    version = bytes([VERSION])
    prelude = MAGIC + version + Writer().uint(len(header)).getvalue() + header + _crc(version + header)
    table = Writer().uint(len(sections))
    for section in sections:
        table.uint(len(section)).raw(_crc(section))
    data = b"".join([prelude, table.getvalue(), *sections])
    if len(data) > MAX_FILE_BYTES:
        raise ValueError(f"the file would have {len(data)} bytes, over the {MAX_FILE_BYTES} ironlearn reads")
    return data


def _check_signature(data: bytes) -> None:
    if data[:len(MAGIC)] == MAGIC:
        return
    if data[1:len(MAGIC)] == MAGIC[1:]:
        raise CodecError("not an ironlearn compressed file as it stands: its first byte was changed, as a "
                         "text-mode transfer does; copy it again in binary mode")
    if len(data) < len(MAGIC):
        raise CodecError(f"not an ironlearn compressed file: it has only {len(data)} bytes; {FOREIGN_HINT}")
    raise CodecError(f"not an ironlearn compressed file (it does not start with the ironlearn signature); "
                     f"{FOREIGN_HINT}")


def _check_version(version: int) -> None:
    if version in READABLE:
        return
    if version > VERSION:
        raise CodecError(f"made by a newer ironlearn (format {version}); upgrade ironlearn to read it")
    if 1 <= version < VERSION:
        raise CodecError(f"made by an earlier ironlearn (format {version}; this one reads formats {READABLE[0]} to {VERSION}); "
                         "compress the picture again")
    if version < 1:
        raise CodecError(f"unknown format version {version} (formats start at 1): the file is damaged; "
                         f"{CORRUPTED_HINT}")


def unpack(data: bytes) -> tuple[bytes, list[bytes]]:
    """The header and sections of a file :func:`pack` wrote, every byte checked: those of
    :func:`unpack_with_version`."""
    return unpack_with_version(data)[1:]


def unpack_with_version(data: bytes) -> tuple[int, bytes, list[bytes]]:
    """The format version, header and sections of a file :func:`pack` wrote, every byte checked.

    Parameters
    ----------
    data : bytes
        The whole file, e.g. from :func:`read_file`.

    Returns
    -------
    version : int
        The format it was written in, one of :data:`READABLE`: what its header's fields are.
    header : bytes
        Read its fields with ``Reader(header)``.
    sections : list of bytes
        The payloads, in the order they were packed.

    Raises
    ------
    CodecError
        For a file that is not ours, from a newer format, truncated, corrupted, or followed by
        extra bytes; checked in that order, and lengths before any slicing.
    """
    data = _as_bytes(data, "data")
    _check_signature(data)
    reader = Reader(data, what="file")
    reader.raw(len(MAGIC), "the signature")
    version = reader.raw(1, "the format version")
    _check_version(version[0])
    header_size = reader.uint(0, MAX_HEADER_BYTES, "the header length")
    header = reader.raw(header_size, "the header")
    if reader.raw(CRC_BYTES, "the header checksum") != _crc(version + header):
        raise CodecError(f"corrupted: the header fails its checksum; {CORRUPTED_HINT}")
    count = reader.uint(0, MAX_SECTIONS, "the section count")
    table = []
    for index in range(count):
        size = reader.uint(0, MAX_FILE_BYTES, f"section {index}'s length")
        table.append((size, reader.raw(CRC_BYTES, f"section {index}'s checksum")))
    # raw() checks the sum against the bytes left before slicing; done() refuses extra bytes.
    payloads = reader.raw(sum(size for size, _ in table), "the sections")
    reader.done()
    sections, start = [], 0
    for index, (size, crc) in enumerate(table):
        section = payloads[start:start + size]
        if _crc(section) != crc:
            raise CodecError(f"section {index} is corrupted (it fails its checksum); {CORRUPTED_HINT}")
        sections.append(section)
        start += size
    return version[0], header, sections


def read_file(path, limit: int = MAX_FILE_BYTES) -> bytes:
    """The bytes of the file at ``path``, refused with :class:`CodecError` rather than read when
    it is missing, unreadable, not a regular file, or over ``limit`` bytes.

    The size is checked before reading, and the read stops one byte past ``limit`` in case the
    file grew in between, so no more than ``limit + 1`` bytes are ever held.
    """
    path = os.fspath(path)
    try:
        info = os.stat(path)
        if stat.S_ISDIR(info.st_mode):
            raise CodecError(f"{path} is a folder; {FOREIGN_HINT}")
        if not stat.S_ISREG(info.st_mode):
            raise CodecError(f"{path} is not a regular file; {FOREIGN_HINT}")
        if info.st_size > limit:
            raise CodecError(f"{path} has {info.st_size:,} bytes, over the {limit:,} ironlearn reads: "
                             f"it is not a compressed picture; {FOREIGN_HINT}")
        with open(path, "rb") as file:
            data = file.read(limit + 1)
    except FileNotFoundError:
        raise CodecError(f"{path}: no such file; check the path") from None
    except OSError as exc:
        raise CodecError(f"cannot read {path} ({exc.strerror or exc}); check that you may read it") from None
    if len(data) > limit:
        raise CodecError(f"{path} grew past {limit:,} bytes while being read; {FOREIGN_HINT}")
    return data


def is_compressed(path) -> bool:
    """Whether ``path`` is a regular file that starts with :data:`MAGIC` (whatever follows): what
    the commands that also read models check to tell a compressed picture from a model."""
    if not os.path.isfile(path):  # a folder, or a pipe that open() would wait on
        return False
    try:
        with open(path, "rb") as file:
            return file.read(len(MAGIC)) == MAGIC
    except OSError:
        return False
