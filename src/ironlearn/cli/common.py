"""What several commands share: messages on stderr, the checks on a file to write, and the report of a
finished fit."""

from __future__ import annotations

import os
import shlex
import stat
import sys

from ..fitting import UsageError
from ..fitting.outputs import describe_result


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def add_model_argument(parser) -> None:
    """The positional ``model`` of a command that reads a fitted model or a compressed picture
    (render, info)."""
    parser.add_argument("model", metavar="RUN_DIR|MODEL.npz|FILE",
                        help="run folder of 'ironlearn fit' (its model.npz, else checkpoint.npz), a model file, "
                             "or a file 'ironlearn compress' wrote")


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
        raise UsageError(f"{path} already exists; use --force to replace it or choose another name")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise UsageError(f"the folder {folder} does not exist; create it first")
    if not os.access(folder, os.W_OK):
        raise UsageError(f"cannot write to {folder}; choose another output path")


def report_fit(result: dict, out: str, *, quiet: bool = False) -> None:
    """The result of a fit, and (unless ``quiet``) what to run next."""
    say(f"done: {describe_result(result)}; outputs in {out}/")
    if quiet:
        return
    folder = shlex.quote(out)
    say(f"next: ironlearn view {folder}   (zoom into the network live, in a browser)\n"
        f"      ironlearn render {folder} --scale 4 -o {shlex.quote(os.path.basename(os.path.normpath(out)))}-x4.png")
