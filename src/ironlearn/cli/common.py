"""What several commands share: messages on stderr, the model argument, and the report of a finished fit
(the checks on a file to write are ``files.check_output``)."""

from __future__ import annotations

import os
import shlex
import sys

from ..fitting.outputs import describe_result


def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


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
        f"      ironlearn render {folder} --scale 4 -o {shlex.quote(os.path.basename(os.path.normpath(out)))}-x4.png")
