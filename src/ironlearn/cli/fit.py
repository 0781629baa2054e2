"""``ironlearn fit``, and the fit options it shares with ``fit-many``."""

from __future__ import annotations

import argparse
import dataclasses
import signal
import sys
import textwrap

from ..backend import DEVICES
from ..fitting import DEFAULT_PRESET, OPTIONS, PRESETS, FitOptions, Interrupted, UsageError, fit
from ..fitting.options import PROGRESS, SCHEDULES, STARTS
from ..fitting.presets import option_help
from ..fitting.run import check_start
from ..fitting.regimes import REGIMES
from ..image.io import MODES
from ..image.sampling import FILTERS
from ..viewer.live import LiveServer
from ..viewer.serve import announce
from .argtypes import add_max_pixels, count, non_negative_float, port_arg, positive_float, positive_int, size_arg
from .common import report_fit, say
from .status import ExitCode


#: --filter's help: which filter each kind of picture gets by default, and why.
FILTER_HELP = ("how training reads the picture between pixel centres: lanczos (default), bicubic, "
               "bilinear, spline (a B-spline halfway between passing through the pixels and "
               "smoothing them: the default for a binary drawing up to 256 px, which redraws it "
               "larger above bicubic), "
               "or centres (pixel centres only: the sharpest fit, the roughest renders larger; the "
               "default for a photograph's level of a vertex per pixel and a colour thumbnail's "
               "detail level, which the pixels pin)")
#: --start's help.
START_HELP = ("how a new fit's network begins: picture (default) sets the hash grid's level of a "
              "vertex per pixel (pictures past 256 px, and binary drawings) to the picture's "
              "B-spline, so the fit starts where training would end; random (the default for a "
              "binary drawing up to 256 px) starts every layer random, to watch the network learn "
              "in the time-lapse (it needs many steps there)")


def add_fit_options(parser: argparse.ArgumentParser) -> None:
    """The options of one fit (picture, network, training, device), shared by ``fit`` and ``fit-many``;
    :func:`fit_options` turns them back into :class:`FitOptions`."""
    models = "; ".join(f"{name}: {p.summary}" + (" (default)" if name == DEFAULT_PRESET else "")
                       for name, p in PRESETS.items())
    parser.add_argument("--mode", choices=MODES, help="binary (threshold at 128), gray or rgb "
                                                      "(default: rgb for colour images, else gray)")
    parser.add_argument("--size", type=size_arg, metavar="N|WxH",
                        help="resize first: N for the longest side (aspect kept) or WxH")
    add_max_pixels(parser)
    parser.add_argument("--model", choices=list(PRESETS), metavar="NAME", help=f"network preset: {models}")
    for option in OPTIONS.values():
        if option.type is str:
            parser.add_argument(option.flag, choices=option.choices, dest=option.name, help=option_help(option.name))
            continue
        convert = (count if option.zero else positive_int) if option.type is int else positive_float
        parser.add_argument(option.flag, type=convert, dest=option.name, metavar=option.metavar,
                            help=option_help(option.name))
    parser.add_argument("--steps", type=positive_int, metavar="N",
                        help="total steps of the run (with --resume: continue to step N)")
    parser.add_argument("--time-budget", type=positive_float, metavar="SECONDS",
                        help="stop after this much training time, its checkpoints and time-lapse frames included "
                             "(default, without --steps: 40 s; writing the outputs afterwards is not counted); "
                             "alone, it sizes the learning-rate schedule to the steps that fit, revised as the run "
                             "goes; a total across resumes, like --steps (with --resume: train to this much "
                             "in all, the rest planned afresh)")
    parser.add_argument("--lr", type=positive_float, help="peak learning rate (default: the preset's)")
    parser.add_argument("--lr-min", type=non_negative_float,
                        help="final learning rate of the cosine schedule, at most the peak (default: a hundredth "
                             "of the peak, --lr or the preset's)")
    parser.add_argument("--schedule", choices=SCHEDULES, help="learning-rate schedule (default cosine)")
    parser.add_argument("--batch-size", type=count, metavar="N",
                        help="points per step; 0 = the whole picture every step (default: the preset's; a "
                             "picture no larger trains whole)")
    parser.add_argument("--filter", choices=FILTERS,
                        help=FILTER_HELP)
    parser.add_argument("--start", choices=STARTS,
                        help=START_HELP)
    parser.add_argument("--seed", type=count, help="random seed (default 0)")
    parser.add_argument("--device", choices=DEVICES,
                        help="where to train (default: the GPU when CuPy sees one, else the CPU; naming auto "
                             "also says which it chose)")
    parser.add_argument("--checkpoint-every", type=positive_int, metavar="N",
                        help="steps between checkpoints (default: a twentieth of the run, at least 50, put off "
                             "while saving would take over a tenth of the training time; a checkpoint is also "
                             "written after each 60 s of training)")
    parser.add_argument("--snapshot-every", type=positive_int, metavar="N",
                        help="steps between time-lapse frames (default: 100 frames spaced geometrically, most of "
                             "them early, where the learning shows)")
    parser.add_argument("--quiet", action="store_true",
                        help="print only errors and the result: no progress, notices or notes")
    parser.add_argument("--progress", choices=PROGRESS,
                        help="how training shows its progress (default: a bar on a terminal, plain lines "
                             "elsewhere, none with --quiet)")


def fit_options(args: argparse.Namespace, **fields) -> FitOptions:
    """:class:`FitOptions` from the parsed options of :func:`add_fit_options` (and any other
    :class:`FitOptions` field the parser has), with ``fields`` given explicitly."""
    names = {f.name for f in dataclasses.fields(FitOptions)} - {"model_options"}
    given = {name: getattr(args, name) for name in names if hasattr(args, name)}
    model_options = {name: getattr(args, name) for name in OPTIONS if getattr(args, name, None) is not None}
    return FitOptions(**{**given, **fields}, model_options=model_options)


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
