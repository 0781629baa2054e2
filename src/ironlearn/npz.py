"""Reading ``.npz`` archives from elsewhere: every array's size is checked before its data is read.

An ``.npy`` header states a shape, and NumPy allocates that much before it finds the data
missing; a deflated member expands up to :data:`MAX_DEFLATE_RATIO` times.  So ``np.load`` of
a crafted archive of a few megabytes can ask for gigabytes, and spend a minute filling them.
:func:`open_npz` reads each member's header alone and checks it first:

* the member is an ``.npy`` of plain numbers (no pickle, no objects);
* the data its shape declares fill the member exactly;
* the member is no larger than its stored bytes can hold: as large for a plain (stored)
  member, at most :data:`MAX_DEFLATE_RATIO` times for a deflated one;
* the members' stored bytes fit in the file.

The caller then compares the shapes with what it expects (a model's architecture, a time-lapse's
frame size and count) before it reads anything with :meth:`Archive.read`.  Every damage ends in
one :class:`ArchiveError`; none of NumPy's or zipfile's own messages reach the user (NumPy's
suggests loading a file "unsafely" with ``allow_pickle``, which ironlearn must never advise).
"""

from __future__ import annotations

import contextlib
import math
import os
import reprlib
import struct
import zipfile
from dataclasses import dataclass

import numpy as np

#: Deflate's best: one 258-byte match coded in 2 bits, so 1 byte of stream gives at most 1032.
MAX_DEFLATE_RATIO = 1032

_HEADER_READERS = {(1, 0): np.lib.format.read_array_header_1_0, (2, 0): np.lib.format.read_array_header_2_0}
#: What reading a damaged archive raises, from zipfile (a bad CRC, a short or oddly compressed
#: member) or from NumPy (a bad array header).
_DAMAGE = (zipfile.BadZipFile, zipfile.LargeZipFile, ValueError, EOFError, OSError, RuntimeError,
           NotImplementedError, struct.error)


class ArchiveError(ValueError):
    """An archive that cannot be read safely; ``why`` says how, in words for the user."""

    def __init__(self, why: str = "truncated or corrupt"):
        super().__init__(why)
        self.why = why


@dataclass(frozen=True)
class Member:
    """One array of an archive, as its header declares it."""

    info: zipfile.ZipInfo
    shape: tuple
    dtype: np.dtype


class Archive:
    """An open archive whose members' headers were checked: :attr:`members` maps each array's
    name (without ``.npy``) to its :class:`Member`."""

    def __init__(self, archive: zipfile.ZipFile, members: dict):
        self._archive, self.members = archive, members

    def read(self, name: str) -> np.ndarray:
        """The array ``name`` in full; its size is the header's, which :func:`open_npz` checked."""
        try:
            with self._archive.open(self.members[name].info) as member:  # read to the end: zipfile checks the CRC
                return np.lib.format.read_array(member, allow_pickle=False)
        except _DAMAGE:
            raise ArchiveError() from None


@contextlib.contextmanager
def open_npz(path, *, deflated: bool):
    """The archive at ``path``, open, its members' headers checked (see the module's docstring).

    ``deflated`` allows deflated members (``np.savez_compressed``); without it every member must
    be stored plain (``np.savez``), so nothing read is larger than the file.

    Raises
    ------
    ArchiveError
        The file is not a zip archive, or a member is not a plain ``.npy`` that fits its
        stored bytes.
    OSError
        The file cannot be opened (missing, permissions).
    """
    path = os.fspath(path)
    try:
        archive = zipfile.ZipFile(path)
    except (zipfile.BadZipFile, ValueError, EOFError, NotImplementedError, struct.error):
        raise ArchiveError("not a zip archive: another kind of file, or truncated or corrupt") from None
    with archive:
        try:
            members = _members(archive, os.path.getsize(path), deflated)
        except ArchiveError:
            raise
        except _DAMAGE:
            raise ArchiveError() from None
        yield Archive(archive, members)


def _members(archive: zipfile.ZipFile, room: int, deflated: bool) -> dict:
    """``{name: Member}`` of every array in ``archive``, from its header alone; ``room`` is the
    file's size, which the members' stored bytes must fit in."""
    members = {}
    allowed = (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED) if deflated else (zipfile.ZIP_STORED,)
    for info in archive.infolist():
        if not info.filename.endswith(".npy"):
            raise ArchiveError(f"it holds {reprlib.repr(info.filename)}, which is not an array")
        if info.compress_type not in allowed:
            raise ArchiveError("its arrays are compressed, where this kind of file stores them plain"
                               if not deflated else "its arrays are compressed in a way ironlearn does not write")
        room -= info.compress_size
        ratio = MAX_DEFLATE_RATIO if info.compress_type == zipfile.ZIP_DEFLATED else 1
        if room < 0 or info.file_size > info.compress_size * ratio \
                or (info.compress_type == zipfile.ZIP_STORED and info.file_size != info.compress_size):
            raise ArchiveError()
        with archive.open(info) as member:
            read_header = _HEADER_READERS.get(np.lib.format.read_magic(member))
            if read_header is None:
                raise ArchiveError()
            shape, _, dtype = read_header(member)
            if (dtype.kind not in "biuf" or min(shape, default=0) < 0
                    or member.tell() + dtype.itemsize * math.prod(shape) != info.file_size):
                raise ArchiveError()
        members[info.filename[:-4]] = Member(info, tuple(shape), dtype)
    return members
