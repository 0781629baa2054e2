"""What several commands share: messages on stderr, the checks on a file to write, and the report of a
finished fit."""

from __future__ import annotations

import os
import shlex
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


def check_output(path: str, force: bool) -> None:
    if os.path.isdir(path):
        raise UsageError(f"output {path} is a folder; give a file name")
    if os.path.exists(path) and not force:
        raise UsageError(f"{path} already exists; use --force to replace it or choose another name")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise UsageError(f"the folder {folder} does not exist; create it first")
    if not os.access(folder, os.W_OK):
        raise UsageError(f"cannot write to {folder}; choose another output path")


def report_fit(result: dict, out: str) -> None:
    say(f"done: {describe_result(result)}; outputs in {out}/")
    folder = shlex.quote(out)
    say(f"next: ironlearn view {folder}   (zoom into the network live, in a browser)\n"
        f"      ironlearn render {folder} --scale 4 -o {shlex.quote(os.path.basename(os.path.normpath(out)))}-x4.png")
