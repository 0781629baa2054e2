"""``ironlearn info``: what a model or checkpoint holds."""

from __future__ import annotations

import json

from ..api import describe, info
from .common import add_model_argument
from .status import ExitCode


def add_parser(commands) -> None:
    info_p = commands.add_parser("info", help="describe a model, checkpoint or compressed file",
                                 description="Print a model's layers, parameters, steps, training time, the picture "
                                             "it was fitted on and its PSNR (or, with --json, all of its metadata); "
                                             "for a file of 'ironlearn compress', its picture, size and rate.")
    add_model_argument(info_p)
    info_p.add_argument("--json", action="store_true", help="print the metadata as JSON")
    info_p.set_defaults(func=cmd_info)


def cmd_info(args) -> int:
    print(json.dumps(info(args.model), indent=2) if args.json else describe(args.model))
    return ExitCode.OK
