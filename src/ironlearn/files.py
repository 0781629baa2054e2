"""Writing files so that a crash never leaves half of one.

Every file ironlearn writes goes through :func:`atomic_write`: a temporary file
in the same folder (``.<name>.<random>.tmp``), flushed and synced, then moved
into place with ``os.replace``.  A process killed mid-write leaves the previous
file intact and, at worst, a temporary that :func:`remove_stale_temporaries`
clears later.
"""

from __future__ import annotations

import os
import re
import tempfile

TMP_SUFFIX = ".tmp"


def _tmp_prefix(name: str) -> str:
    return f".{name}."


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def atomic_write(path, write) -> None:
    """Call ``write(file)`` on a temporary file beside ``path``, then move it into place.

    On any failure the temporary file is removed and ``path`` is untouched; an
    ``OSError`` names ``path`` (the file the user knows), not the temporary.
    """
    path = os.fspath(path)
    folder = os.path.dirname(os.path.abspath(path))
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=_tmp_prefix(os.path.basename(path)), suffix=TMP_SUFFIX)
    except OSError as exc:
        raise OSError(exc.errno, exc.strerror, path) from None
    try:
        with os.fdopen(fd, "wb") as file:
            write(file)
            file.flush()
            os.fsync(file.fileno())
        os.chmod(tmp, 0o666 & ~_umask())  # mkstemp makes 0600; give the usual permissions
        os.replace(tmp, path)
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
    """Whether the file name ``entry`` is a temporary :func:`atomic_write` makes for one of ``names``."""
    return entry.endswith(TMP_SUFFIX) and entry.startswith(tuple(_tmp_prefix(name) for name in names))


def remove_stale_temporaries(folder, names) -> list[str]:
    """Delete the temporaries of ``names`` that a killed process left in ``folder``.

    Only files :func:`atomic_write` could have made for one of ``names`` are
    touched; returns the names removed.
    """
    removed = []
    for entry in os.listdir(folder):
        if is_stale_temporary(entry, names):
            try:
                os.unlink(os.path.join(folder, entry))
                removed.append(entry)
            except OSError:
                pass
    return removed


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
