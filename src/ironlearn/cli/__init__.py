"""The ``ironlearn`` command: fit, fit-many, render, view, compress, decompress, to-csv, from-csv, info, demo.

Bad input of any kind ends with one line on stderr (what is wrong, what to do)
and exit code 2; Ctrl-C during a fit saves a checkpoint and exits with 130, SIGTERM likewise with 143.
:class:`ExitCode` lists every code; :func:`~ironlearn.cli.status.run` maps exceptions to them in one place.

One module per command (``fit``, ``many``, ``render``, ``view``, ``compress`` for compress and
decompress, ``pixels`` for to-csv and from-csv,
``info``, ``demo``), each with its ``add_parser`` and its ``cmd_*``; ``argtypes`` holds the argument
types and :class:`Parser`, ``status`` the exit codes, ``common`` what several commands share.
"""

from __future__ import annotations

import importlib
import signal
import sys

from ..signals import Terminated, terminate_cleanly
from ..version import __version__

__all__ = ["ExitCode", "MEMORY_ADVICE", "Parser", "Terminated", "add_fit_options", "build_parser", "fit_options",
           "main"]

#: Where the names this package offers are defined: imported when first asked for, so that
#: :func:`main` takes SIGTERM before the commands load (about half a second of NumPy and the codec).
_HOMES = {"ExitCode": "status", "MEMORY_ADVICE": "status", "run": "status", "Parser": "argtypes",
          "add_fit_options": "fit", "fit_options": "fit"}
#: The commands' modules, in the order ``--help`` lists them.
COMMANDS = ("fit", "many", "render", "view", "compress", "pixels", "info", "demo")


def __getattr__(name: str):
    if name in _HOMES:
        return getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
    if name in COMMANDS:
        return importlib.import_module(f".{name}", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def build_parser():
    """The command's :class:`~.argtypes.Parser`, every command's module loaded."""
    from .argtypes import Parser

    parser = Parser(prog="ironlearn", description="Teach a neural network to be an image, then redraw it at any size.",
                    epilog="Run 'ironlearn demo' for a one-minute tour, or 'ironlearn COMMAND --help'.")
    parser.add_argument("--version", action="version", version=f"ironlearn {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for name in COMMANDS:
        importlib.import_module(f".{name}", __name__).add_parser(commands)
    return parser


def main(argv=None) -> int:
    # SIGTERM is taken from here on, before the commands load: a job stopped while it starts ends as
    # one stopped a moment later would (exit 143 and one line), not killed by the signal.
    try:
        with terminate_cleanly():
            from .status import ExitCode, run

            parser = build_parser()
            args = parser.parse_args(argv)
            if args.command is None:
                parser.print_help()
                return ExitCode.USAGE
            return run(args)
    except Terminated:  # while starting: run() answers it once a command runs
        print("stopped by SIGTERM while starting; nothing was written", file=sys.stderr)
        return 128 + signal.SIGTERM
