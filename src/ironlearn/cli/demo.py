"""``ironlearn demo``: the bundled line drawing fitted, rendered 4x and reported."""

from __future__ import annotations

from ..api import DEMO_SECONDS, DEVICES, demo
from .argtypes import positive_float, positive_int
from .common import report_fit, say
from .status import ExitCode


def add_parser(commands) -> None:
    demo_p = commands.add_parser("demo", help="fit the bundled line drawing into ./ironlearn-demo",
                                 description="Fit the bundled 200x200 line drawing (binary) and write every output, "
                                             "plus a 4x render, to ./ironlearn-demo. An earlier demo there is "
                                             "replaced; any other run or file is not, unless --force.")
    demo_p.add_argument("--out", default="ironlearn-demo", metavar="DIR", help="run folder (default ironlearn-demo)")
    demo_p.add_argument("--time-budget", type=positive_float, metavar="SECONDS", default=DEMO_SECONDS,
                        help=f"training time (default {DEMO_SECONDS:g} s)")
    demo_p.add_argument("--steps", type=positive_int, metavar="N", help="a fixed number of steps instead")
    demo_p.add_argument("--device", choices=DEVICES,
                        help="where to train (default: the GPU when CuPy sees one, else the CPU)")
    demo_p.add_argument("--quiet", action="store_true",
                        help="print only errors and the result: no progress, notices or notes")
    demo_p.add_argument("--force", action="store_true",
                        help="write into --out even if it holds another run or other files (a run there is "
                             "replaced; files of other names are kept)")
    demo_p.set_defaults(func=cmd_demo)


def cmd_demo(args) -> int:
    done = demo(args.out, time_budget=args.time_budget, steps=args.steps, device=args.device, quiet=args.quiet,
                force=args.force, progress=say)
    width, height = 4 * done.metrics["width"], 4 * done.metrics["height"]
    say(f"also: {done.render} ({width}x{height}) and {done.timelapse} (the network learning)")
    report_fit(done.metrics, args.out, quiet=args.quiet)
    return ExitCode.OK
