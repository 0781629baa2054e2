"""``ironlearn demo``: the bundled line drawing fitted, rendered 4x and reported."""

from __future__ import annotations

import os
from importlib import resources

from ..backend import DEVICES, get_backend
from ..fitting import FitOptions, UsageError, fit
from ..image.fingerprint import fingerprint
from ..image.io import load_picture
from ..image.render import render_png
from ..train import CheckpointError, load_checkpoint
from ..train.checkpoint import read_meta
from .argtypes import positive_float, positive_int
from .common import report_fit, say
from .status import ExitCode

DEMO_SECONDS = 20.0  # every pixel of the drawing is right within 5 s; the rest makes a longer time-lapse


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
    with resources.as_file(resources.files("ironlearn") / "data" / "sample.png") as sample:
        force = args.force or _holds_a_demo(args.out, sample)
        if not force and os.path.exists(os.path.join(args.out, "checkpoint.npz")):
            raise UsageError(f"{args.out} holds a run that is not a demo; give the demo another --out, or --force "
                             "to replace that run")
        options = FitOptions(input=str(sample), out=args.out, mode="binary", steps=args.steps,
                             time_budget=args.time_budget, device=args.device, quiet=args.quiet, force=force)
        result = fit(options, log=say)
    saved = load_checkpoint(os.path.join(args.out, "model.npz"))
    backend = get_backend(args.device or "auto")
    big = os.path.join(args.out, "render_4x.png")
    render_png(saved.model.to(backend), big, 4 * result["width"], 4 * result["height"], backend, 1)
    say(f"also: {big} ({4 * result['width']}x{4 * result['height']}) and {os.path.join(args.out, 'timelapse.gif')} "
        "(the network learning)")
    report_fit(result, args.out, quiet=args.quiet)
    return ExitCode.OK


def _holds_a_demo(out: str, sample) -> bool:
    """Whether ``out`` holds a run of the bundled drawing (an earlier demo, which a demo replaces)."""
    try:
        saved = read_meta(os.path.join(out, "checkpoint.npz"))
    except CheckpointError:
        return False
    settings = saved.get("settings")
    drawing = load_picture(sample, mode="binary")
    return isinstance(settings, dict) and settings.get("fingerprint") == fingerprint(drawing)
