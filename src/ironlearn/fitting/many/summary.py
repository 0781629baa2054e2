"""``summary.csv``, one row per picture, rewritten atomically as each one finishes; and the
table printed at the end."""

from __future__ import annotations

import csv
import io

from ...files import write_bytes
from .task import DONE, FAILED, INTERRUPTED, Outcome

COLUMNS = ("picture", "width", "height", "mode", "model", "params", "steps", "seconds", "psnr_db", "accuracy",
           "status", "error")
PENDING = "pending"  # not started (yet, or before a Ctrl-C)
_FROM_METRICS = ("width", "height", "mode", "model", "params", "steps", "seconds", "psnr_db", "accuracy")


def row(name: str, outcome: Outcome | None = None) -> dict:
    """The summary row of picture ``name`` (its run folder's name); pending without an ``outcome``.
    Columns a picture has no value for (accuracy outside binary mode, all but the error of a
    failure) are None, written as empty cells."""
    entry = dict.fromkeys(COLUMNS)
    entry.update(picture=name, status=PENDING, error="")
    if outcome is not None:
        entry.update(status=outcome.status, error=outcome.error)
        entry.update({key: (outcome.metrics or {}).get(key) for key in _FROM_METRICS})
    return entry


def write(path, rows) -> None:
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=COLUMNS, lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    write_bytes(path, buffer.getvalue().encode())


def read(path) -> list[dict]:
    """The rows of a summary.csv, as text (empty cells as "")."""
    with open(path, newline="") as file:
        return list(csv.DictReader(file))


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
