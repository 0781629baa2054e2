"""The ``ironlearn`` command: fit, fit-many, render, view, encode, decode, info, demo.

Bad input of any kind ends with one line on stderr (what is wrong, what to do)
and exit code 2; Ctrl-C during a fit saves a checkpoint and exits with 130, SIGTERM likewise with 143.
:class:`ExitCode` lists every code; :func:`main` maps exceptions to them in one place.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import enum
import json
import os
import shlex
import signal
import sys
import threading
from importlib import resources

from . import __version__
from .backend import DEVICES, BackendError, get_backend
from .fitting import DEFAULT_PRESET, OPTIONS, PRESETS, FitOptions, Interrupted, UsageError, fit
from .fitting.many import ManyInterrupted, fit_many
from .fitting.options import SCHEDULES
from .files import is_generated_page
from .fitting.plan import fingerprint
from .fitting.outputs import describe_result
from .fitting.presets import option_help
from .image.coords import parse_view
from .image.io import (MAX_PIXELS, MODES, InputError, load_picture, parse_size, read_pixel_csv, save_image, scaled_size,
                       write_pixel_csv)
from .image.render import MAX_RENDER_SIDE, render_png
from .image.sampling import FILTERS
from .train import CheckpointError, DivergenceError, load_checkpoint
from .train.checkpoint import read_meta
from .viewer import ViewerError, serve, write_viewer
from .viewer.run import locate_model


class ExitCode(enum.IntEnum):
    """What ``ironlearn`` exits with."""

    OK = 0
    FAILED = 1  # the work itself failed (training diverged); the last good checkpoint is kept
    USAGE = 2  # bad input: options, files, devices; nothing the user had was changed
    INTERRUPTED = 130  # Ctrl-C; a fit saved its checkpoint and printed how to resume
    TERMINATED = 143  # SIGTERM (preemption by Ray, Slurm, Kubernetes, timeout): as Ctrl-C, checkpoint saved


class Terminated(KeyboardInterrupt):
    """SIGTERM outside a fit's training loop (which handles it itself): unwinds like Ctrl-C, so
    locks are released and half-written files removed on the way out."""


@contextlib.contextmanager
def _terminate_cleanly():
    """While inside: SIGTERM raises :class:`Terminated` in the main thread instead of killing the process."""
    def on_sigterm(signum, frame):
        raise Terminated

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGTERM, on_sigterm)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


#: What to try when a command runs out of memory.
MEMORY_ADVICE = {
    "fit": "fit a smaller picture (--size), train on smaller batches (--batch-size) or a smaller model, "
           "or free memory",
    "render": "render a smaller --size, or free memory",
    "view": "free memory, or view a smaller model",
}
MEMORY_ADVICE["fit-many"] = MEMORY_ADVICE["fit"] + "; or run fewer at once (--workers)"
DEMO_SECONDS = 20.0  # the drawing passes 50 dB within 5 s; the rest makes a longer time-lapse


# -- argument types: each turns bad text into argparse's one-line error ----------------------
def _number(kind, low, inclusive=True, what="a number"):
    def convert(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
        if value != value or value in (float("inf"), float("-inf")) or (value < low if inclusive else value <= low):
            raise argparse.ArgumentTypeError(f"{text!r} must be {'at least' if inclusive else 'above'} {low}")
        return value
    convert.__name__ = what
    return convert


positive_int = _number(int, 1, what="a whole number")
count = _number(int, 0, what="a whole number")
positive_float = _number(float, 0, inclusive=False)
non_negative_float = _number(float, 0)


def size_arg(text):
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def port_arg(text):
    port = count(text)
    if port > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port (0-65535)")
    return port


def view_arg(text):
    try:
        return parse_view(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit 2) instead of a usage block."""

    def error(self, message):
        if message.endswith("expected one argument"):  # argparse takes "-0.5,..." for an option
            message += "; a value that starts with '-' goes after '=' (--view=-0.5,-0.5,0.5,0.5)"
        self.exit(ExitCode.USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def add_fit_options(parser: argparse.ArgumentParser) -> None:
    """The options of one fit (picture, network, training, device), shared by ``fit`` and ``fit-many``;
    :func:`fit_options` turns them back into :class:`FitOptions`."""
    models = "; ".join(f"{name}: {p.summary}" + (" (default)" if name == DEFAULT_PRESET else "")
                       for name, p in PRESETS.items())
    parser.add_argument("--mode", choices=MODES, help="binary (threshold at 128), gray or rgb "
                                                      "(default: rgb for colour images, else gray)")
    parser.add_argument("--size", type=size_arg, metavar="N|WxH",
                        help="resize first: N for the longest side (aspect kept) or WxH")
    parser.add_argument("--max-pixels", type=positive_int, metavar="N",
                        help=f"refuse pictures larger than this (default {MAX_PIXELS:,}: a guard against "
                             "decompression bombs)")
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
                        help="stop after this much training time (default, without --steps: 40 s); alone, it "
                             "sizes the learning-rate schedule to the steps that fit, revised as the run goes")
    parser.add_argument("--lr", type=positive_float, help="peak learning rate (default: the preset's)")
    parser.add_argument("--lr-min", type=non_negative_float,
                        help="final learning rate of the cosine schedule, at most the peak (default: the preset's, "
                             "a hundredth of its --lr)")
    parser.add_argument("--schedule", choices=SCHEDULES, help="learning-rate schedule (default cosine)")
    parser.add_argument("--batch-size", type=count, metavar="N",
                        help="points per step; 0 = the whole picture every step (default: the preset's; a "
                             "picture no larger trains whole)")
    parser.add_argument("--filter", choices=FILTERS,
                        help="how training reads the picture between pixel centres: lanczos (default), bicubic, "
                             "bilinear, or centres (pixel centres only: the sharpest fit, the roughest renders "
                             "larger; the default for a colour thumbnail's detail level, which needs no samples "
                             "between)")
    parser.add_argument("--seed", type=count, help="random seed (default 0)")
    parser.add_argument("--device", choices=DEVICES,
                        help="where to train (default: the GPU when CuPy sees one, else the CPU; naming auto "
                             "also says which it chose)")
    parser.add_argument("--checkpoint-every", type=positive_int, metavar="N",
                        help="steps between checkpoints (default: a twentieth of the run, at least 50; a checkpoint "
                             "is also written after each 60 s of training)")
    parser.add_argument("--snapshot-every", type=positive_int, metavar="N",
                        help="steps between time-lapse frames (default: 100 frames spaced geometrically, most of "
                             "them early, where the learning shows)")
    parser.add_argument("--quiet", action="store_true", help="plain progress lines instead of a progress bar")


def fit_options(args: argparse.Namespace, **fields) -> FitOptions:
    """:class:`FitOptions` from the parsed options of :func:`add_fit_options` (and any other
    :class:`FitOptions` field the parser has), with ``fields`` given explicitly."""
    names = {f.name for f in dataclasses.fields(FitOptions)} - {"model_options"}
    given = {name: getattr(args, name) for name in names if hasattr(args, name)}
    model_options = {name: getattr(args, name) for name in OPTIONS if getattr(args, name, None) is not None}
    return FitOptions(**{**given, **fields}, model_options=model_options)


def build_parser() -> Parser:
    parser = Parser(prog="ironlearn", description="Teach a neural network to be an image, then redraw it at any size.",
                    epilog="Run 'ironlearn demo' for a one-minute tour, or 'ironlearn COMMAND --help'.")
    parser.add_argument("--version", action="version", version=f"ironlearn {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)

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
               "  ironlearn fit photo.jpg --model siren --out runs/siren")
    fit_p.add_argument("input", help="image file or pixel CSV")
    fit_p.add_argument("--out", metavar="DIR", help="run folder (default: runs/<input name>)")
    add_fit_options(fit_p)
    fit_p.add_argument("--resume", action="store_true", help="continue the run in --out from its checkpoint")
    fit_p.add_argument("--force", action="store_true", help="start over, replacing the run in --out")
    fit_p.set_defaults(func=cmd_fit)

    many_p = commands.add_parser(
        "fit-many", help="fit many pictures, on this machine or a Ray cluster",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Fit every picture named by INPUT (files, folders' images and .csv pixel files, globs), each into "
                    "its own run folder DIR/<name>/ exactly as 'ironlearn fit' writes it, with every fit option "
                    "applied to each. DIR/summary.csv gets one row per picture as each finishes, with its file's "
                    "path (relative to DIR); a rerun gives each file the name it had, a new picture a name of its "
                    "own, and keeps the rows of pictures it does not name.",
        epilog="Running the same command again skips pictures done before and resumes interrupted ones from their "
               "checkpoints (--force redoes them all). A picture that fails is listed with its error and the others "
               "go on; the exit code is then 1. Ctrl-C stops cleanly: finished runs are kept and running ones save "
               "a checkpoint (exit code 130); SIGTERM (Slurm, Kubernetes, timeout, kill) does the same with exit code "
               "143. A SIGTERM to one local worker process stops its picture alone, saved and listed as interrupted; "
               "on Ray, a task stopped so (its node preempted) goes on once more from the checkpoint it saved.\n\n"
               "  ironlearn fit-many photos/ --out runs/photos --steps 2000\n"
               "  ironlearn fit-many 'kodak/*.png' --out runs/kodak --workers 2 --time-budget 30\n"
               "  ironlearn fit-many data/ --out runs/data --engine ray --address auto --gpus-per-fit 0.25")
    many_p.add_argument("inputs", nargs="+", metavar="INPUT", help="image, pixel CSV, folder or glob (quote globs)")
    many_p.add_argument("--out", required=True, metavar="DIR",
                        help="folder for the run folders and summary.csv (refused if DIR/summary.csv is a file "
                             "fit-many did not write)")
    many_p.add_argument("--workers", type=positive_int, metavar="N",
                        help="fits at once (default: local, one per two cores; ray, as many as the cluster holds)")
    many_p.add_argument("--engine", choices=["local", "ray"], default="local",
                        help="local: worker processes on this machine (default); ray: Ray tasks, on a local Ray "
                             "instance or the cluster at --address (pip install 'ironlearn[ray]')")
    many_p.add_argument("--address", metavar="ADDR",
                        help="with --engine ray: the cluster to join, 'auto' (this node's) or ray://HOST:PORT")
    many_p.add_argument("--cpus-per-fit", type=positive_float, metavar="C",
                        help="BLAS threads of each local worker (default: the cores shared among the workers); "
                             "on ray, the CPUs each task declares (default 1)")
    many_p.add_argument("--gpus-per-fit", type=non_negative_float, default=0.0, metavar="G",
                        help="with --engine ray: the GPUs each task declares (a fraction shares one; default 0: "
                             "fits run on CPUs)")
    many_p.add_argument("--force", action="store_true",
                        help="fit every picture anew, replacing its run (never files fit-many does not write: "
                             "another summary.csv, a run folder's other files)")
    add_fit_options(many_p)
    many_p.set_defaults(func=cmd_fit_many)

    render_p = commands.add_parser("render", help="redraw a fitted model at any size",
                                   description="Redraw a fitted model (model.npz or checkpoint.npz) at any size, "
                                               "in tiles so memory stays bounded.")
    render_p.add_argument("model", metavar="RUN_DIR|MODEL.npz",
                          help="run folder of 'ironlearn fit' (its model.npz, else checkpoint.npz) or a model file")
    how_big = render_p.add_mutually_exclusive_group(required=True)
    how_big.add_argument("--size", type=size_arg, metavar="N|WxH",
                         help="N for the longest side (the training aspect kept) or WxH")
    how_big.add_argument("--scale", type=positive_float, metavar="F",
                         help="F times the training size (2: twice as wide and tall)")
    render_p.add_argument("--view", type=view_arg, metavar="X0,Y0,X1,Y1",
                          help="render only this region of the [-1, 1] square (y grows downward; "
                               "write --view=-0.5,... when it starts with a minus); default: the whole picture")
    render_p.add_argument("-o", "--output", required=True, metavar="OUT.png", help="image to write")
    render_p.add_argument("--device", choices=DEVICES,
                          help="where to render (default: the GPU when CuPy sees one, else the CPU)")
    render_p.add_argument("--force", action="store_true", help="replace OUT if it exists")
    render_p.set_defaults(func=cmd_render)

    view_p = commands.add_parser("view", help="write a web page that redraws the model at any zoom",
                                 description="Write one self-contained HTML page (weights embedded, no network, "
                                             "opens from file://) that evaluates the model per screen pixel with "
                                             "WebGL2: drag to pan, wheel, pinch or +/- to zoom, beside the "
                                             "training picture, time-lapse and metrics of the run.")
    view_p.add_argument("source", metavar="RUN_DIR|MODEL.npz", help="run folder of 'ironlearn fit', or a model file")
    view_p.add_argument("-o", "--output", metavar="PAGE.html",
                        help="page to write (default: viewer.html in the run folder, or beside the model file)")
    view_p.add_argument("--serve", action="store_true", help="also serve the page on 127.0.0.1 until Ctrl-C")
    view_p.add_argument("--port", type=port_arg, metavar="N", help="port for --serve (default 8000, or a free "
                                                                    "one when 8000 is taken)")
    view_p.add_argument("--no-browser", action="store_true", help="with --serve, do not open a browser")
    view_p.add_argument("--force", action="store_true",
                        help="replace the page at -o if it exists (the default page beside the model is "
                             "rewritten anyway when ironlearn made it)")
    picture_p = view_p.add_mutually_exclusive_group()
    picture_p.add_argument("--with-picture", dest="with_picture", action="store_const", const=True,
                           help="embed the training picture the model names also for a bare model file (one not "
                                "named model.npz or checkpoint.npz); a run's is embedded by default. Either way "
                                "only if it is the picture the model was fitted on")
    picture_p.add_argument("--without-picture", dest="with_picture", action="store_const", const=False,
                           help="leave the training picture out, also for a run (a page to share)")
    view_p.set_defaults(func=cmd_view)

    encode_p = commands.add_parser("encode", help="image -> pixel CSV (x,y,pixel_value)",
                                   description="The original project's encoder: one row per pixel; in binary mode "
                                               "1 = black, in gray mode 0-255, rgb as x,y,r,g,b.")
    encode_p.add_argument("image", help="the picture to encode")
    encode_p.add_argument("-o", "--output", required=True, metavar="pixels.csv", help="the CSV to write")
    encode_p.add_argument("--size", type=size_arg, metavar="N|WxH",
                          help="resize first: N for the longest side (aspect kept) or WxH")
    encode_p.add_argument("--mode", choices=MODES, help="binary (threshold at 128), gray or rgb "
                                                        "(default: rgb for colour images, else gray)")
    encode_p.add_argument("--force", action="store_true", help="replace the output if it exists")
    encode_p.set_defaults(func=cmd_encode)

    decode_p = commands.add_parser("decode", help="pixel CSV -> image", description="The original project's decoder.")
    decode_p.add_argument("csv", help="a pixel CSV (x,y,pixel_value or x,y,r,g,b)")
    decode_p.add_argument("-o", "--output", required=True, metavar="image.png",
                          help="the image to write; its format follows the name (.png, .bmp, ...)")
    decode_p.add_argument("--force", action="store_true", help="replace the output if it exists")
    decode_p.set_defaults(func=cmd_decode)

    info_p = commands.add_parser("info", help="describe a model or checkpoint",
                                 description="Print a model's layers, parameters, steps, training time, the picture "
                                             "it was fitted on and its PSNR (or, with --json, all of its metadata).")
    info_p.add_argument("model", metavar="RUN_DIR|MODEL.npz",
                        help="run folder of 'ironlearn fit' (its model.npz, else checkpoint.npz) or a model file")
    info_p.add_argument("--json", action="store_true", help="print the metadata as JSON")
    info_p.set_defaults(func=cmd_info)

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
    demo_p.add_argument("--quiet", action="store_true", help="plain progress lines instead of a progress bar")
    demo_p.add_argument("--force", action="store_true",
                        help="write into --out even if it holds another run or other files (a run there is "
                             "replaced; files of other names are kept)")
    demo_p.set_defaults(func=cmd_demo)
    return parser


# -- commands -----------------------------------------------------------------------------
def say(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def _check_output(path: str, force: bool) -> None:
    if os.path.isdir(path):
        raise UsageError(f"output {path} is a folder; give a file name")
    if os.path.exists(path) and not force:
        raise UsageError(f"{path} already exists; use --force to replace it or choose another name")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise UsageError(f"the folder {folder} does not exist; create it first")
    if not os.access(folder, os.W_OK):
        raise UsageError(f"cannot write to {folder}; choose another output path")


def cmd_fit(args) -> int:
    options = fit_options(args)
    result = fit(options, log=say)
    _report(result, options.run_folder)
    return ExitCode.OK


def cmd_fit_many(args) -> int:
    options = fit_options(args, input="", out=None)
    rows = fit_many(args.inputs, args.out, options=options, workers=args.workers, engine=args.engine,
                    address=args.address, cpus_per_fit=args.cpus_per_fit, gpus_per_fit=args.gpus_per_fit,
                    log=say)
    unfinished = [row for row in rows if row["status"] != "done"]
    if not unfinished:
        return ExitCode.OK
    stopped = any(row["status"] == "interrupted" for row in unfinished)
    say(f"ironlearn fit-many: error: {len(unfinished)} of {len(rows)} pictures "
        + ("did not finish (the same command again resumes the stopped ones):" if stopped else "failed:"))
    for row in unfinished:
        say(f"  {row['picture']}: {row['error']}")
    return ExitCode.FAILED


def _report(result: dict, out: str) -> None:
    say(f"done: {describe_result(result)}; outputs in {out}/")
    folder = shlex.quote(out)
    say(f"next: ironlearn view {folder}   (zoom into the network live, in a browser)\n"
        f"      ironlearn render {folder} --scale 4 -o {shlex.quote(os.path.basename(os.path.normpath(out)))}-x4.png")


def _render_size(size, settings: dict, view=None, scale=None) -> tuple[int, int]:
    trained_w, trained_h = settings.get("size", (1, 1))
    if view is not None:  # the region's own size in training pixels: its aspect is kept
        trained_w, trained_h = trained_w * (view[2] - view[0]) / 2, trained_h * (view[3] - view[1]) / 2
    if scale is not None:
        if "size" not in settings:
            raise UsageError("this model does not record its training size, so --scale has nothing to scale; "
                             "give --size")
        width, height = max(1, round(trained_w * scale)), max(1, round(trained_h * scale))
    else:
        width, height = scaled_size(trained_w, trained_h, size)
    if max(width, height) > MAX_RENDER_SIDE:
        raise UsageError(f"render size {width}x{height} is above the limit of {MAX_RENDER_SIDE} pixels a side")
    if isinstance(size, tuple) and "size" in settings and abs(width / height - trained_w / trained_h) > 0.01 * (
            trained_w / trained_h):
        say(f"note: {width}x{height} changes the aspect ratio of the {trained_w:g}x{trained_h:g} picture; "
            "give --size N (the longest side) or --scale to keep it")
    return width, height


def cmd_render(args) -> int:
    _check_output(args.output, args.force)
    if not args.output.lower().endswith(".png"):
        raise UsageError(f"{args.output}: render writes PNG; give a name ending in .png")
    saved = load_checkpoint(locate_model(args.model))
    width, height = _render_size(args.size, saved.settings, args.view, args.scale)
    backend = get_backend(args.device or "auto", notify=say if args.device == "auto" else None)
    model = saved.model.to(backend)
    render_png(model, args.output, width, height, backend, saved.channels, progress=True, view=args.view)
    say(f"wrote {args.output} ({width}x{height})")
    return ExitCode.OK


def cmd_view(args) -> int:
    model_path = locate_model(args.source)
    output = args.output or os.path.join(os.path.dirname(os.path.abspath(model_path)), "viewer.html")
    # The page ironlearn made beside the model is ironlearn's to rewrite; a path the user named is theirs.
    _check_output(output, args.force or (args.output is None and is_generated_page(output)))
    if not output.lower().endswith((".html", ".htm")):
        raise UsageError(f"{output}: view writes an HTML page; give a name ending in .html")
    write_viewer(model_path, output, with_picture=args.with_picture)
    say(f"wrote {output} ({os.path.getsize(output) / 2**20:.1f} MB): open it in a browser, no server needed")
    if args.serve:
        serve(output, args.port, open_browser=not args.no_browser, log=say)
    return ExitCode.OK


def cmd_encode(args) -> int:
    _check_output(args.output, args.force)
    picture = load_picture(args.image, mode=args.mode, size=args.size)
    write_pixel_csv(args.output, picture)
    say(f"wrote {args.output}: {picture.width}x{picture.height} {picture.mode}, "
        f"{picture.width * picture.height:,} rows")
    return ExitCode.OK


def cmd_decode(args) -> int:
    _check_output(args.output, args.force)
    pixels, mode = read_pixel_csv(args.csv)
    save_image(args.output, pixels)
    say(f"wrote {args.output}: {pixels.shape[1]}x{pixels.shape[0]} {mode}")
    return ExitCode.OK


def cmd_info(args) -> int:
    saved = load_checkpoint(locate_model(args.model))
    if args.json:
        print(json.dumps(saved.meta, indent=2))
        return ExitCode.OK
    settings = saved.settings
    # Only numbers are formatted as such: the loader checks the metrics are a mapping, not what they hold.
    found = {k: v for k, v in settings.get("metrics", {}).items() if isinstance(v, (int, float))}
    lines = [f"{args.model}", repr(saved.model), f"parameters: {saved.model.num_parameters:,}",
             f"steps: {saved.step:,}"]
    if "train_seconds" in settings:
        lines.append(f"training time: {settings['train_seconds']:.1f} s")
    if settings.get("model"):
        lines.append(f"preset: {settings['model']} {settings.get('model_options', {})}")
    if settings.get("size"):
        lines.append(f"trained on: {settings.get('input')} ({settings['size'][0]}x{settings['size'][1]} "
                     f"{settings.get('mode')}) on {settings.get('device')}")
    if "psnr_db" in found:
        lines.append(f"PSNR: {found['psnr_db']:.2f} dB" +
                     (f", accuracy {found['accuracy']:.2%}" if "accuracy" in found else ""))
    memory = {k: v for k, v in found.items() if k.startswith("pool_")}
    if memory:
        lines.append("GPU memory pool: " + ", ".join(f"{k} {v / 2**20:.1f} MiB" for k, v in memory.items()))
    print("\n".join(lines))
    return ExitCode.OK


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
    _report(result, args.out)
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


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.print_help()
        return ExitCode.USAGE
    try:
        with _terminate_cleanly():
            return args.func(args)
    except (InputError, UsageError, CheckpointError, BackendError, ViewerError) as exc:
        say(f"ironlearn {args.command}: error: {exc}")
        return ExitCode.USAGE
    except (Interrupted, ManyInterrupted) as exc:
        say(str(exc))
        return ExitCode.TERMINATED if getattr(exc, "signal", None) == signal.SIGTERM else ExitCode.INTERRUPTED
    except DivergenceError as exc:
        say(f"ironlearn {args.command}: error: training diverged at step {exc.step}: loss {exc.loss:.4g} at "
            f"learning rate {exc.lr:.3g}; try a lower one, e.g. --lr {exc.lr / 10:.2g}; the last good checkpoint is kept")
        return ExitCode.FAILED
    except MemoryError:  # NumPy's says how much it wanted; the user needs to know what to change
        say(f"ironlearn {args.command}: error: out of memory; {MEMORY_ADVICE.get(args.command, MEMORY_ADVICE['fit'])} "
            "(files written before are intact)")
        return ExitCode.USAGE
    except OSError as exc:  # disk full, permissions, a folder vanished: no traceback, nothing half-written
        where = f" {exc.filename}" if exc.filename else ""
        say(f"ironlearn {args.command}: error: could not write{where}: {exc.strerror or exc} "
            "(files written before are intact)")
        return ExitCode.USAGE
    except KeyboardInterrupt as exc:
        what = "stopped by SIGTERM" if isinstance(exc, Terminated) else "interrupted"
        say(f"{what}; the last checkpoint written is kept")
        return ExitCode.TERMINATED if isinstance(exc, Terminated) else ExitCode.INTERRUPTED


if __name__ == "__main__":
    sys.exit(main())
