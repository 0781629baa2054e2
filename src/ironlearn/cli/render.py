"""``ironlearn render``: a fitted model, or a compressed picture, redrawn at any size, as a PNG."""

from __future__ import annotations

from .. import drawable
from ..backend import DEVICES, get_backend
from ..files import check_output
from ..fitting import UsageError
from ..image.render import region_size, render_png, render_size
from .argtypes import positive_float, size_arg, view_arg
from .common import add_model_argument, progress_style, say, save_drawing
from .status import ExitCode


def add_parser(commands) -> None:
    render_p = commands.add_parser("render", help="redraw a fitted model or a compressed picture at any size",
                                   description="Redraw a fitted model (model.npz or checkpoint.npz), or a file "
                                               "of 'ironlearn compress', at any size or a region of it at any "
                                               "zoom, in tiles so memory stays bounded.")
    add_model_argument(render_p)
    how_big = render_p.add_mutually_exclusive_group(required=True)
    how_big.add_argument("--size", type=size_arg, metavar="N|WxH",
                         help="N for the longest side (the training aspect kept) or WxH")
    how_big.add_argument("--scale", type=positive_float, metavar="F",
                         help="F times the training size, or a compressed picture's (2: twice as wide and tall)")
    render_p.add_argument("--view", type=view_arg, metavar="X0,Y0,X1,Y1",
                          help="render only this region of the [-1, 1] square, which the picture spans (y grows "
                               "downward; write --view=-0.5,... when it starts with a minus; a compressed "
                               "picture's view stays inside the square); default: the whole picture")
    render_p.add_argument("-o", "--output", required=True, metavar="OUT.png", help="image to write")
    render_p.add_argument("--device", choices=DEVICES,
                          help="where to render a model (default: the GPU when CuPy sees one, else the CPU); "
                               "a compressed picture draws on the CPU")
    render_p.add_argument("--force", action="store_true", help="replace OUT if it exists")
    render_p.set_defaults(func=cmd_render)


def _render_size(size, settings: dict, view=None, scale=None) -> tuple[int, int]:
    trained = tuple(settings["size"]) if "size" in settings else None
    width, height = render_size(trained, size, scale, view)
    if isinstance(size, tuple) and trained is not None:
        trained_w, trained_h = region_size(trained, view)
        if abs(width / height - trained_w / trained_h) > 0.01 * (trained_w / trained_h):
            say(f"note: {width}x{height} changes the aspect ratio of the {trained_w:g}x{trained_h:g} picture; "
                "give --size N (the longest side) or --scale to keep it")
    return width, height


def cmd_render(args) -> int:
    check_output(args.output, args.force, reads=[args.model])
    if not args.output.lower().endswith(".png"):
        raise UsageError(f"{args.output}: render writes PNG; give a name ending in .png")
    picture = drawable.open(args.model)
    if isinstance(picture, drawable.CompressedFile):
        return _render_compressed(args, picture.decoded)
    width, height = _render_size(args.size, picture.settings, args.view, args.scale)
    backend = get_backend(args.device or "auto", notify=say if args.device == "auto" else None)
    model = picture.model.to(backend)
    # A bar only on a terminal: in a log, its redraws are kilobytes of carriage returns.
    render_png(model, args.output, width, height, backend, picture.channels, progress=progress_style(),
               view=args.view)
    say(f"wrote {args.output} ({width}x{height})")
    return ExitCode.OK


def _render_compressed(args, decoded) -> int:
    """``render`` of a file of ``ironlearn compress``: sized as a model whose training size is
    the picture's."""
    decoded.region(args.view)  # a view that leaves the picture: one line, worded with --view
    width, height = _render_size(args.size, {"size": list(decoded.size)}, args.view, args.scale)
    save_drawing(decoded, args.output, width, height, args.view)
    return ExitCode.OK
