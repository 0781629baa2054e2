"""``summary.csv``, one row per picture, rewritten atomically as each one finishes; and the
table printed at the end."""

from __future__ import annotations

import csv
import io
import os

from ...errors import OptionError
from ...files import write_bytes
from .inputs import BESIDE
from .task import DONE, FAILED, INTERRUPTED, Outcome

COLUMNS = ("picture", "input", "width", "height", "mode", "model", "params", "steps", "seconds", "psnr_db",
           "accuracy", "status", "error")
#: The header rows fit-many writes, and wrote before summaries recorded each picture's input.
HEADERS = (",".join(COLUMNS), ",".join(c for c in COLUMNS if c != "input"))
PENDING = "pending"  # not started (yet, or before a Ctrl-C)
#: How the summary's text meets bytes: a file name that is not UTF-8 (``caf\xe9.png`` from an older
#: system) is a str with surrogates on POSIX, written back as the same bytes and read back as the
#: same str, so the rerun finds the file it names.
ENCODING, ERRORS = "utf-8", "surrogateescape"
#: The columns every summary has, filled by the engine rather than from a picture's metrics.
_OWN = ("picture", "input", "status", "error")


def row(name: str, input: str, outcome: Outcome | None = None, columns: tuple = COLUMNS) -> dict:
    """The summary row of picture ``name`` (its run folder's name) whose file is ``input`` (as
    :func:`input_cell` gives it); pending without an ``outcome``.  Its ``columns`` besides the
    picture, input, status and error come from the outcome's metrics; those a picture has no
    value for (accuracy outside binary mode, all but the error of a failure) are None, written
    as empty cells."""
    entry = dict.fromkeys(columns)
    entry.update(picture=name, input=input, status=PENDING, error="")
    if outcome is not None:
        entry.update(status=outcome.status, error=outcome.error)
        entry.update({key: (outcome.metrics or {}).get(key) for key in columns if key not in _OWN})
    return entry


def input_cell(path, out) -> str:
    """How the summary in ``out`` names the picture file ``path``: relative to ``out``, so that the
    record holds whatever folder the command runs from, and when both folders move together."""
    try:
        return os.path.relpath(os.path.realpath(path), os.path.realpath(out))
    except ValueError:  # on another drive (Windows)
        return os.path.realpath(path)


def recorded_names(rows, out) -> dict:
    """``{real path: run folder name}`` of the pictures that ``rows`` (of the summary in ``out``)
    record and that are still there.  A row of an older summary (no input), or of a picture no
    longer where it was, records nothing: its name goes, as before, to the picture named so."""
    found = {}
    for entry in rows:
        path = os.path.realpath(os.path.join(os.path.realpath(out), entry.get("input") or ""))
        name = entry.get("picture") or ""
        # A name from an edited file must still be a run folder's: never a path out of ``out``.
        plain = name not in ("", ".", "..", *BESIDE) and os.path.basename(name) == name
        if entry.get("input") and plain and os.path.isfile(path):
            found.setdefault(path, name)
    return found


def write(path, rows, columns: tuple = COLUMNS) -> None:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    write_bytes(path, buffer.getvalue().encode(ENCODING, ERRORS))


def read(path) -> list[dict]:
    """The rows of a summary.csv, as text (empty cells as "")."""
    with open(path, newline="", encoding="utf-8-sig", errors=ERRORS) as file:
        return list(csv.DictReader(file))


def earlier(path, headers=HEADERS, command: str = "fit-many") -> list[dict]:
    """The rows of the summary that ``command`` wrote at ``path`` before (as :func:`read` gives
    them), or [] when there is nothing there.

    A summary is the command's when its first line is one of the ``headers`` it writes (or
    wrote).  Anything else at ``path`` (a user's file, a folder, another command's summary) is a
    UsageError: a command replaces only its own summary, ``--force`` or not.
    """
    if not os.path.lexists(path):
        return []
    try:
        with open(path, newline="", encoding="utf-8-sig", errors=ERRORS) as file:
            if file.readline().rstrip("\r\n") in headers:
                file.seek(0)
                return list(csv.DictReader(file))
    except (OSError, UnicodeDecodeError):  # a folder, a dangling link, unreadable or binary
        pass
    raise OptionError(f"{path} is not a summary that {command} wrote, and {command} does not replace it (not even "
                      "with {force}); move it away or choose another {out}", "out", force="force=True")


def mean_psnr(rows) -> float | None:
    values = [r["psnr_db"] for r in rows if r["status"] == DONE and r["psnr_db"] is not None]
    return sum(values) / len(values) if values else None


def table(rows, seconds: float, fitted: int) -> str:
    """The closing table: how many pictures ended how, their mean PSNR, the total time and the
    time per picture fitted by this run (``fitted``: the pictures it finished, done or failed)."""
    counts = {status: sum(r["status"] == status for r in rows) for status in (DONE, FAILED, INTERRUPTED, PENDING)}
    psnr = mean_psnr(rows)
    lines = [("pictures", ", ".join(f"{n} {status}" for status, n in counts.items() if n) or "none"),
             ("mean PSNR", f"{psnr:.2f} dB over {counts[DONE]} done" if psnr is not None else "-"),
             ("total time", f"{seconds:.1f} s"),
             ("per picture", f"{seconds / fitted:.1f} s ({60 * fitted / seconds:.1f} pictures a minute)"
              if fitted and seconds > 0 else "- (this run finished none)")]
    width = max(len(name) for name, _ in lines)
    return "\n".join(f"  {name:<{width}}  {value}" for name, value in lines)
