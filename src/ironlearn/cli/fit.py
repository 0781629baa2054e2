"""``ironlearn fit``: one picture fitted into a run folder (its options in :mod:`.fit_options`)."""

from __future__ import annotations

import argparse
import sys

from ..api import fit_run
from ..errors import UsageError
from .argtypes import port_arg
from .common import flag, report_fit, say
from .fit_options import add_fit_options, default_models, fit_options
from .status import ExitCode


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
               + default_models())
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
    if not args.live and args.no_browser and args.port is None:
        raise UsageError("--no-browser is for the live page; add --live, or drop --no-browser")
    options = fit_options(args)
    fit_run(options, log=say, port=args.port, open_browser=not args.no_browser, name_of=flag,
            done=lambda result: report_fit(result, options.run_folder, quiet=options.quiet),
            linger=sys.stdout.isatty() if args.live else None)
    return ExitCode.OK
