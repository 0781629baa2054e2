"""``ironlearn render``: a fitted model, or a compressed picture, redrawn at any size, as a PNG."""

from __future__ import annotations

from ..api import DEVICES, render_file
from .argtypes import add_max_pixels, positive_float, size_arg, view_arg
from .common import add_model_argument, progress_style, say
from .status import ExitCode


def add_parser(commands) -> None:
    render_p = commands.add_parser("render", help="redraw a fitted model or a compressed picture at any size",
                                   description="Redraw a fitted model (model.npz or checkpoint.npz), or a file "
                                               "of 'ironlearn compress', at any size or a region of it at any "
                                               "zoom, in tiles so memory stays bounded.")
    add_model_argument(render_p)
    how_big = render_p.add_mutually_exclusive_group()
    how_big.add_argument("--size", type=size_arg, metavar="N|WxH",
                         help="N for the longest side (the training aspect kept) or WxH; default: the "
                              "picture's own size")
    how_big.add_argument("--scale", type=positive_float, metavar="F",
                         help="F times the training size, or a compressed picture's (2: twice as wide and tall)")
    render_p.add_argument("--view", type=view_arg, metavar="X0,Y0,X1,Y1",
                          help="render only this region of the [-1, 1] square, which the picture spans (y grows "
                               "downward; write --view=-0.5,... when it starts with a minus; a compressed "
                               "picture's view stays inside the square); default: the whole picture")
    add_max_pixels(render_p, draws=True)
    render_p.add_argument("-o", "--output", required=True, metavar="OUT.png", help="image to write")
    render_p.add_argument("--device", choices=DEVICES,
                          help="where to render a model (default: the GPU when CuPy sees one, else the CPU); "
                               "a compressed picture draws on the CPU")
    render_p.add_argument("--force", action="store_true", help="replace OUT if it exists")
    render_p.set_defaults(func=cmd_render)


def cmd_render(args) -> int:
    width, height = render_file(args.model, args.output, args.size, scale=args.scale, view=args.view,
                                device=args.device, max_pixels=args.max_pixels, force=args.force,
                                progress=progress_style(), log=say)
    say(f"wrote {args.output} ({width}x{height})")
    return ExitCode.OK
