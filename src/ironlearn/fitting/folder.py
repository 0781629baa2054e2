"""The run folder: the checks before ``ironlearn fit`` writes there, and its lock (its files are
named in :mod:`ironlearn.run_files`)."""

from __future__ import annotations

import os
import stat
import tempfile

from ..files import TMP_SUFFIX, is_generated_page, is_stale_temporary, remove_stale_temporaries
# The fitting layer names the run folder's files through this module.
from ..run_files import (CHECKPOINT, FILES, FRAMES, HISTORY, LOCK, LOSS_PLOT, METRICS, MODEL,  # noqa: F401
                         RECONSTRUCTION, TIMELAPSE, VIEWER)
from ..errors import OptionError
from .options import UsageError



def check_resumable(out: str) -> str:
    """The checkpoint path of the run in ``out``; UsageError when there is none."""
    if os.path.exists(out) and not os.path.isdir(out):
        raise OptionError(f"{{out}} {out} is a file; give a folder for the run's outputs", "out")
    path = os.path.join(out, CHECKPOINT)
    if not os.path.isfile(path):
        running = holder(out)
        if running is not None:
            raise OptionError(f"a fit is running in {out} (process {running}) and has not saved its first checkpoint "
                              "yet; wait for it, or choose another {out}", "out")
        raise OptionError(f"nothing to resume: {path} does not exist (drop {{resume}} to start a new run)", "resume")
    return path


def _leftovers(out: str) -> list[str]:
    """What ``out`` holds besides a fit's housekeeping (its lock and the temporaries of a killed
    fit), sorted: empty for a folder a new fit may use without asking."""
    if not os.path.isdir(out):
        return []
    return sorted(entry for entry in os.listdir(out) if entry != LOCK and not is_stale_temporary(entry, FILES)
                  and not (entry == VIEWER and is_generated_page(os.path.join(out, entry))))


def check_new(out: str, *, force: bool, input: str | None = None) -> None:
    """UsageError unless a new run can be started in ``out`` (created later, by :func:`create`).

    A fit writes only into an empty folder, or over a run of its own with ``force``; any other
    file there needs ``force`` too, and even then only the names in :data:`FILES` are replaced.
    The picture ``input`` is never written over, whatever the options.
    """
    if os.path.exists(out) and not os.path.isdir(out):
        raise OptionError(f"{{out}} {out} is a file; give a folder for the run's outputs", "out")
    check_not_input(out, input)
    holds_run = os.path.exists(os.path.join(out, CHECKPOINT))
    if holds_run and not force:
        raise OptionError(f"{out} already holds a run; use {{resume}} to continue it, {{force}} to start over, "
                          "or {out} for another folder", out="out=", force="force=True", resume="resume=True")
    found = [] if holds_run or force else _leftovers(out)
    if found:
        listed = ", ".join(found[:3]) + (f" and {len(found) - 3} more" if len(found) > 3 else "")
        raise OptionError(f"{out} is not empty and holds no run ({listed}); give an empty or new folder with "
                          "{out}, or {force} to write the run's files beside these (files of other names are kept)",
                          out="out=", force="force=True")
    parent = os.path.abspath(out)
    while not os.path.exists(parent):
        parent = os.path.dirname(parent)
    if not os.path.isdir(parent):
        raise UsageError(f"cannot create the output folder {out}: {parent} is a file")
    if not os.access(parent, os.W_OK | os.X_OK):
        raise OptionError(f"cannot create the output folder {out}: {parent} is not writable; "
                          "choose another with {out}", "out")


def check_not_input(out: str, input: str | None) -> None:
    """UsageError when the picture ``input`` is one of the files a fit in ``out`` writes."""
    if input is None or not os.path.isfile(input):
        return
    for name in FILES:
        path = os.path.join(out, name)
        if os.path.exists(path) and os.path.samefile(path, input):
            raise OptionError(f"{input} is where the run writes its {name}; move the picture, or choose "
                              "another {out}", "out")


def check_writable(out: str) -> None:
    """UsageError when files cannot be created in the existing folder ``out`` (checked before
    training, so that a resume does not train for nothing)."""
    try:
        # Named as atomic_write names a checkpoint's temporary, so that clean() removes a leftover.
        fd, probe = tempfile.mkstemp(dir=out, prefix=f".{CHECKPOINT}.", suffix=TMP_SUFFIX)
    except OSError as exc:
        reason = "permission denied" if isinstance(exc, PermissionError) else (exc.strerror or str(exc))
        raise UsageError(f"cannot write in {out}: {reason}; make it writable, or copy the run to another "
                         "folder and resume there") from None
    os.close(fd)
    os.unlink(probe)


def start_over(out: str) -> list[str]:
    """Remove the outputs of an earlier run in ``out`` (the names in :data:`FILES`), before a forced
    fit starts: a forced fit killed before it writes its own would otherwise leave the old run's
    model, metrics and time-lapse beside its new checkpoint, and ``render`` or ``view`` would show
    the old run as if it were the new one.  Returns the names removed; nothing else is touched."""
    removed = []
    for name in FILES:
        path = os.path.join(out, name)
        if os.path.isfile(path) or os.path.islink(path):
            os.unlink(path)
            removed.append(name)
    if is_generated_page(os.path.join(out, VIEWER)):  # it would show the old run
        os.unlink(os.path.join(out, VIEWER))
        removed.append(VIEWER)
    return removed


def create(out: str) -> None:
    """Make the folder ``out`` (and its parents); UsageError when that cannot be done."""
    if os.path.exists(out) and not os.path.isdir(out):
        raise OptionError(f"{{out}} {out} is a file; give a folder for the run's outputs", "out")
    if os.path.islink(out) and not os.path.exists(out):
        raise OptionError(f"{{out}} {out} is a link to {os.readlink(out)}, which does not exist; create that "
                          "folder, or choose another {out}", "out")
    try:
        os.makedirs(out, exist_ok=True)
    except OSError as exc:
        raise UsageError(f"cannot create the output folder {out}: {exc.strerror}") from None


def clean(out: str) -> None:
    """Remove what a killed fit left half-written in ``out``."""
    remove_stale_temporaries(out, FILES)


def busy(out: str, process: str) -> OptionError:
    """The refusal of a fit in ``out``, whose lock ``process`` holds."""
    where = os.path.dirname(os.path.join(out, LOCK))  # the folder as its lock's path names it ("runs/a/": runs/a)
    return OptionError(f"another fit is running in {where} (process {process}); wait for it to finish, or choose "
                       "another {out}", "out")


class RunLock:
    """An exclusive advisory lock on ``out/.lock`` while a fit runs there, removed when it ends.

    The operating system drops the lock when the process ends, however it ends, so a killed
    fit never leaves the folder locked (only, at worst, an unlocked ``.lock`` file).  A second
    fit gets a UsageError naming the process that holds it.
    """

    def __init__(self, out: str):
        self.path = os.path.join(out, LOCK)
        self.file = None

    def __enter__(self) -> "RunLock":
        try:
            import fcntl
        except ImportError:  # not a POSIX system: no lock, as before
            return self
        while True:
            file = self._open()
            try:
                fcntl.flock(file, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                file.seek(0)
                holder = file.read().strip() or "another process"
                file.close()
                raise busy(os.path.dirname(self.path), holder) from None
            # The holder before us may have removed the file between our open and our lock: then
            # we locked a file no one else can see, and must lock the one at the path instead.
            try:
                if os.stat(self.path).st_ino == os.fstat(file.fileno()).st_ino:
                    break
            except FileNotFoundError:
                pass
            file.close()
        file.seek(0)
        if not _is_lock_text(file.read()):  # a user's file of that name: never truncate or remove it
            file.close()
            raise OptionError(f"{self.path} is not a lock of ironlearn's (it holds other text); move it, "
                              "or choose another {out}", "out")
        try:  # unbuffered: a write that fails must leave nothing for close() to try again
            os.ftruncate(file.fileno(), 0)
            os.pwrite(file.fileno(), str(os.getpid()).encode(), 0)
        except OSError as exc:  # a full disk takes the lock's name but not its one line
            os.unlink(self.path)  # ours and locked: no other fit is using it
            file.close()
            raise OptionError(f"cannot write {self.path}: {exc.strerror or exc}; free some space, or choose "
                              "another {out}", "out") from None
        self.file = file
        return self

    def _open(self):
        """The lock file, opened for reading and writing and created if missing.  A link, a folder
        or anything but a plain file at that name is a user's, and gets a UsageError."""
        elsewhere = OptionError(f"{self.path} is not a plain file, where ironlearn keeps its lock; move it, "
                                "or choose another {out}", "out")
        try:
            file = _open_plain(self.path, os.O_RDWR | os.O_CREAT)
        except OSError as exc:
            if os.path.islink(self.path) or os.path.isdir(self.path):
                raise elsewhere from None
            raise OptionError(f"cannot open {self.path}: {exc.strerror}; make the folder writable, "
                              "or choose another {out}", "out") from None
        if file is None:
            raise elsewhere
        return file

    def __exit__(self, *exc) -> None:
        if self.file is not None:
            try:
                os.unlink(self.path)  # while still locked, so no other fit is using this file
            except OSError:
                pass
            self.file.close()  # closing releases the lock
            self.file = None


def _open_plain(path: str, flags: int):
    """``path`` opened as text with ``os.open`` ``flags``, never following a link nor blocking on a
    pipe; None when it is not a plain file.  A user's file of the lock's name may hold any bytes."""
    fd = os.open(path, flags | os.O_NONBLOCK | getattr(os, "O_NOFOLLOW", 0), 0o644)
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    return os.fdopen(fd, "r+" if flags & os.O_RDWR else "r", encoding="ascii", errors="replace")


def _is_lock_text(text: str) -> bool:
    """Whether ``text`` is what a RunLock writes: a process id, or nothing (a lock just created)."""
    return text.strip() == "" or text.strip().isdigit()


def holder(out: str) -> str | None:
    """The process id of the fit running in ``out``, or None when none is."""
    try:
        import fcntl
    except ImportError:
        return None
    try:  # only a plain file is a lock
        file = _open_plain(os.path.join(out, LOCK), os.O_RDONLY)
    except OSError:
        return None
    if file is None:
        return None
    with file:
        try:
            fcntl.flock(file, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            return file.read().strip() or "unknown"
    return None
