"""The ``ironlearn`` command: fit, fit-many, render, view, compress, decompress, encode, decode, info, demo.

Bad input of any kind ends with one line on stderr (what is wrong, what to do)
and exit code 2; Ctrl-C during a fit saves a checkpoint and exits with 130, SIGTERM likewise with 143.
:class:`ExitCode` lists every code; :func:`~ironlearn.cli.status.run` maps exceptions to them in one place.

One module per command (``fit``, ``many``, ``render``, ``view``, ``compress`` for compress and
decompress, ``pixels`` for encode and decode,
``info``, ``demo``), each with its ``add_parser`` and its ``cmd_*``; ``argtypes`` holds the argument
types and :class:`Parser`, ``status`` the exit codes, ``common`` what several commands share.
"""

from __future__ import annotations

from ..version import __version__
from . import compress, demo, fit, info, many, pixels, render, view
from .argtypes import Parser
from .fit import add_fit_options, fit_options
from .status import MEMORY_ADVICE, ExitCode, Terminated, run

__all__ = ["ExitCode", "MEMORY_ADVICE", "Parser", "Terminated", "add_fit_options", "build_parser", "fit_options",
           "main"]

#: The commands in the order ``ironlearn --help`` lists them.
COMMANDS = (fit, many, render, view, compress, pixels, info, demo)


def build_parser() -> Parser:
    parser = Parser(prog="ironlearn", description="Teach a neural network to be an image, then redraw it at any size.",
                    epilog="Run 'ironlearn demo' for a one-minute tour, or 'ironlearn COMMAND --help'.")
    parser.add_argument("--version", action="version", version=f"ironlearn {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)
    for command in COMMANDS:
        command.add_parser(commands)
    return parser


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return ExitCode.USAGE
    return run(args)
