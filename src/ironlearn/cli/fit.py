"""``ironlearn fit``: one picture fitted into a run folder (its options in :mod:`.fit_options`)."""

from __future__ import annotations

import argparse
import signal
import sys
import textwrap

from ..fitting import Interrupted, UsageError, fit
from ..fitting.run import check_start
from ..fitting.regimes import REGIMES
from ..viewer.live import LiveServer
from ..viewer.serve import announce
from .argtypes import port_arg
from .common import report_fit, say
from .fit_options import add_fit_options, fit_options
from .status import ExitCode


def _default_models() -> str:
    """--help's account of what the default model is for each kind of picture (fitting.regimes)."""
    lines = ["The default model (hashgrid) is sized to the picture:"]
    for regime in REGIMES:
        lines += textwrap.wrap(f"{regime.when}: {regime.layout}", 96, initial_indent="  - ", subsequent_indent="    ")
    lines += textwrap.wrap("To watch a network learn from nothing, give --start random (or another --model); for a "
                           "small file of the picture, use `ironlearn compress`.", 96)
    return "\n".join(lines)


def add_parser(commands) -> None:
    fit_p = commands.add_parser(
        "fit", help="fit a network to an image or pixel CSV", formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Fit a network to an image (PNG, JPEG, WebP, BMP, TIFF, ...) or a pixel CSV (x,y,pixel_value; "
                    "binary 1 = black), writing a resumable run folder.",
        epilog="A fit writes only into an empty folder or over a run of its own (--resume, --force); other\n"
               "files there are never replaced without --force, and the picture being fitted never. Ctrl-C or\n"
               "SIGTERM saves a checkpoint and prints the command that resumes.\n\n"
               "  ironlearn fit photo.jpg                           # runs/photo/, about 40 s\n"
               "  ironlearn fit photo.jpg --size 256 --steps 3000   # resized first; a fixed number of steps\n"
               "  ironlearn fit drawing.png --mode binary --time-budget 120\n"
               "  ironlearn fit photo.jpg --resume --steps 6000     # continue runs/photo/ to step 6000\n"
               "  ironlearn fit photo.jpg --model siren --out runs/siren\n"
               "  ironlearn fit photo.jpg --live                    # watch it learn in a browser\n\n"
               + _default_models())
    fit_p.add_argument("input", help="image file or pixel CSV")
    fit_p.add_argument("--out", metavar="DIR", help="run folder (default: runs/<input name>)")
    add_fit_options(fit_p)
    fit_p.add_argument("--resume", action="store_true", help="continue the run in --out from its checkpoint")
    fit_p.add_argument("--force", action="store_true", help="start over, replacing the run in --out")
    fit_p.add_argument("--live", action="store_true",
                       help="watch the fit learn in a browser: a page on 127.0.0.1 redraws the network from its "
                            "latest weights (a large model: the region in view, rendered by the fit) beside the loss "
                            "and PSNR, then shows the final model; the URL goes to stdout. After the fit it serves "
                            "until Ctrl-C, or for 10 s when stdout is not a terminal")
    fit_p.add_argument("--port", type=port_arg, metavar="N",
                       help="port for --live (default 8000, or a free one when 8000 is taken)")
    fit_p.add_argument("--no-browser", action="store_true", help="with --live, do not open a browser")
    fit_p.set_defaults(func=cmd_fit)


def cmd_fit(args) -> int:
    if not args.live and (args.port is not None or args.no_browser):
        flag = "--port" if args.port is not None else "--no-browser"
        raise UsageError(f"{flag} is for the live page; add --live, or drop {flag}")
    options = fit_options(args)
    if not args.live:
        report_fit(fit(options, log=say), options.run_folder, quiet=options.quiet)
        return ExitCode.OK
    check_start(options)  # a folder that holds a run, say, is refused before the page is served
    with LiveServer(args.port) as live:  # a port in use is refused here, before the fit starts
        announce(live.url, not args.no_browser, say, "the live page")
        try:
            result = fit(options, log=say, live=live)
        except Interrupted as exc:
            how = "Ctrl-C" if exc.signal == signal.SIGINT else exc.signal.name
            live.stop(f"training stopped by {how} at step {exc.step:,}; its checkpoint is saved (--resume goes on)")
            raise
        live.finish(options.run_folder)
        report_fit(result, options.run_folder, quiet=options.quiet)
        live.serve_after_fit(say, interactive=sys.stdout.isatty())
    return ExitCode.OK
