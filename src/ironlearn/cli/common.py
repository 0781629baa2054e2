"""What several commands share: messages on stderr, the model argument, and the report of a finished fit."""

from __future__ import annotations

import os
import shlex
import sys

from ..errors import Note
from ..fitting.options import flag
from ..fitting.outputs import describe_result


def say(message: str) -> None:
    """``message`` on stderr; a :class:`~ironlearn.errors.Note` worded with the command's flags.
    A file name that is not UTF-8 (``caf\\xe9.png``: a str with a surrogate) is written as ``\\udce9``
    whatever stream stderr is, as Python's own stderr writes it, never a UnicodeEncodeError."""
    text = message.worded(flag) if isinstance(message, Note) else str(message)
    print(text.encode("utf-8", "backslashreplace").decode("utf-8"), file=sys.stderr, flush=True)


def progress_style() -> str:
    """How a long render shows its progress: a bar on a terminal, plain lines in a log (a bar's
    redraws would fill it with carriage returns)."""
    return "bar" if sys.stderr.isatty() else "lines"


def add_model_argument(parser) -> None:
    """The positional ``model`` of a command that reads a fitted model or a compressed picture
    (render, info)."""
    parser.add_argument("model", metavar="RUN_DIR|MODEL.npz|FILE",
                        help="run folder of 'ironlearn fit' (its model.npz, else checkpoint.npz), a model file, "
                             "or a file 'ironlearn compress' wrote")


def report_fit(result: dict, out: str, *, quiet: bool = False) -> None:
    """The result of a fit, and (unless ``quiet``) what to run next."""
    say(f"done: {describe_result(result)}; outputs in {out}/")
    if quiet:
        return
    folder = shlex.quote(out)
    say(f"next: ironlearn view {folder}   (zoom into the network live, in a browser)\n"
        f"      {render_hint(folder, os.path.basename(os.path.normpath(out)), result['width'], result['height'])}")


#: The largest render the "next:" hint suggests, in pixels: a 16-megapixel PNG takes seconds and
#: tens of megabytes, and a 4096x4096 picture's 4x render (16384x16384) far more of both (measured:
#: docs/benchmark-log.md, 'Measurements the code's comments quoted').
HINT_PIXELS = 1 << 24


def render_hint(folder: str, name: str, width: int, height: int) -> str:
    """A render of the run in ``folder`` worth suggesting: 4x or 2x the picture where that stays
    within :data:`HINT_PIXELS`, else its top-left corner at 2x, the largest that does (a half,
    a quarter, ... of each side)."""
    for scale in (4, 2):
        if width * height * scale * scale <= HINT_PIXELS:
            return f"ironlearn render {folder} --scale {scale} -o {shlex.quote(f'{name}-x{scale}.png')}"
    part = 2
    while width * height * 4 > HINT_PIXELS * part * part:
        part *= 2
    corner = f"{-1 + 2 / part:g}"
    return (f"ironlearn render {folder} --view=-1,-1,{corner},{corner} --scale 2 -o "
            f"{shlex.quote(f'{name}-corner-x2.png')}   (the top-left 1/{part} of each side, at 2x)")
