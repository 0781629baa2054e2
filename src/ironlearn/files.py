"""Writing files so that a crash never leaves half of one.

Every file ironlearn writes goes through :func:`atomic_write`: a temporary file
in the same folder (``.<name>.<random>.tmp``), flushed and synced, then moved
into place with ``os.replace``.  A process killed mid-write leaves the previous
file intact and, at worst, its temporary, which the next write to that name
removes (:func:`remove_stale_temporaries`).

A writer holds an advisory lock on its temporary until the file is in place, and
the operating system drops the lock when the process ends, however it ends: an
unlocked temporary is a killed writer's, a locked one a live writer's, left alone.
"""

from __future__ import annotations

import errno
import os
import re
import stat
import tempfile

from .errors import OptionError, UsageError

try:
    import fcntl
except ImportError:  # not a POSIX system: no locks, so no temporary is ever taken for stale
    fcntl = None

TMP_SUFFIX = ".tmp"


def _tmp_prefix(name: str) -> str:
    return f".{name}."


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def _lock(fd: int) -> bool | None:
    """Take an exclusive advisory lock on the open file ``fd`` without waiting: True when taken,
    False when another process holds it, None where there are no locks to take."""
    if fcntl is None:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return True
    except BlockingIOError:
        return False
    except OSError:  # a file system without locks
        return None


def _is_at(fd: int, path: str) -> bool:
    """Whether the open file ``fd`` is still the file at ``path``."""
    try:
        here, there = os.fstat(fd), os.stat(path, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return (here.st_dev, here.st_ino) == (there.st_dev, there.st_ino)


def _new_temporary(folder: str, name: str) -> tuple[int, str]:
    """A new temporary for ``name`` in ``folder``, open and locked: ``(fd, path)``."""
    for _ in range(10):
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=_tmp_prefix(name), suffix=TMP_SUFFIX)
        locked = _lock(fd)
        # Until it is locked, another write to this name may take it for a killed writer's and
        # remove it: then make another.
        if locked is None or (locked and _is_at(fd, tmp)):
            return fd, tmp
        os.close(fd)
    raise OSError(errno.EAGAIN, "other writes to this name kept removing its temporary file")


def atomic_write(path, write) -> None:
    """Call ``write(file)`` on a temporary file beside ``path``, then move it into place.

    On any failure the temporary file is removed and ``path`` is untouched; an
    ``OSError`` names ``path`` (the file the user knows), not the temporary.  The
    temporaries of ``path`` that killed writers left are removed first.
    """
    path = os.fspath(path)
    folder, name = os.path.split(os.path.abspath(path))
    remove_stale_temporaries(folder, [name])
    try:
        fd, tmp = _new_temporary(folder, name)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, path) from None
    try:
        with os.fdopen(fd, "wb") as file:
            write(file)
            file.flush()
            os.fsync(file.fileno())
            os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual permissions
            os.replace(tmp, path)  # while the file, and so its lock, is still open
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        if isinstance(exc, OSError) and exc.filename is None:  # name the file; keep the reason
            raise OSError(exc.errno, exc.strerror or str(exc), path) from None
        raise


def write_bytes(path, data: bytes) -> None:
    """:func:`atomic_write` of ``data``."""
    atomic_write(path, lambda file: file.write(data))


def is_stale_temporary(entry: str, names) -> bool:
    """Whether the file name ``entry`` is a temporary :func:`atomic_write` makes for one of ``names``
    (stale, unless its writer is still at it: see :func:`remove_stale_temporaries`)."""
    if not (entry.startswith(".") and entry.endswith(TMP_SUFFIX)):
        return False
    name, dot, random = entry[1:-len(TMP_SUFFIX)].rpartition(".")  # mkstemp's random part holds no dot
    return bool(dot and random) and name in names


def _remove_if_stale(path: str) -> bool:
    """Remove the temporary at ``path`` unless a live writer holds its lock; whether it was removed."""
    try:
        fd = os.open(path, os.O_RDWR | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:  # gone already, a link, or not ours to open
        return False
    try:
        if not (stat.S_ISREG(os.fstat(fd).st_mode) and _lock(fd) and _is_at(fd, path)):
            return False
        os.unlink(path)  # under its lock, so no writer is using it
        return True
    except OSError:
        return False
    finally:
        os.close(fd)


def remove_stale_temporaries(folder, names) -> list[str]:
    """Delete the temporaries of ``names`` that killed processes left in ``folder``.

    Only files :func:`atomic_write` could have made for one of ``names`` are
    touched, and only those no live writer holds; returns the names removed.
    A folder that cannot be listed has none to remove.
    """
    try:
        entries = os.listdir(folder)
    except OSError:
        return []
    return [entry for entry in entries
            if is_stale_temporary(entry, names) and _remove_if_stale(os.path.join(folder, entry))]


#: The mark every HTML page ironlearn writes carries in its head: such a page in a run folder is
#: ironlearn's to rewrite, while any other file there is the user's.
PAGE_GENERATOR = '<meta name="generator" content="ironlearn">'
#: The second mark of a page written at a path the user named (``view -o``): the page is theirs,
#: and no later command rewrites it without ``--force``, even where it would put its own page.
NAMED_PAGE = '<meta name="ironlearn-page" content="named by the user">'


def is_generated_page(path) -> bool:
    """Whether ``path`` is an HTML page that ironlearn wrote at a place of its own choosing, and so
    may rewrite: its head carries :data:`PAGE_GENERATOR` (or, for pages written before the mark, the
    viewer's title) and not :data:`NAMED_PAGE`."""
    try:
        with open(path, "rb") as file:
            head = file.read(4096).decode("utf-8", "replace")
    except OSError:
        return False
    if NAMED_PAGE in head:
        return False
    return PAGE_GENERATOR in head or re.search(r"<title>[^<]*: ironlearn viewer</title>", head) is not None


def check_output(path: str, force: bool, reads=()) -> None:
    """UsageError unless the file ``path`` may be written: a new name in a writable folder, or, with
    ``force``, a plain file (or link) that is none of the files the command ``reads``.

    ``force`` replaces what is at the name, never what a link there points at, and never a
    device, pipe or socket (``-o /dev/stdout`` would be swapped for a plain file).
    """
    if os.path.isdir(path):
        raise UsageError(f"output {path} is a folder; give a file name")
    for source in reads:
        if os.path.isfile(source) and os.path.exists(path) and os.path.samefile(path, source):
            raise UsageError(f"{path} is the input {source}; choose another output name")
    if os.path.exists(path) and not stat.S_ISREG(os.stat(path).st_mode):
        raise UsageError(f"{path} is not a plain file (a device, pipe or socket); ironlearn writes files "
                         "only: give a file name")
    if os.path.lexists(path) and not force:  # a link to nowhere exists too: it is the user's
        raise OptionError(f"{path} already exists; use {{force}} to replace it or choose another name", force="force=True")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise UsageError(f"the folder {folder} does not exist; create it first")
    if not os.access(folder, os.W_OK):
        raise UsageError(f"cannot write to {folder}; choose another output path")
