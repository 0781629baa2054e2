"""``ironlearn to-csv`` and ``ironlearn from-csv``: the original project's image <-> pixel CSV converters
(``encode`` and ``decode`` there, names kept here as aliases: the codec's ``encode``/``decode`` are
compression)."""

from __future__ import annotations

from ..api import MODES, csv_to_picture, picture_to_csv
from .argtypes import add_max_pixels, size_arg
from .common import say
from .status import ExitCode


def add_parser(commands) -> None:

    to_csv_p = commands.add_parser("to-csv", aliases=["encode"], help="image -> pixel CSV (x,y,pixel_value)",
                                   description="The original project's encoder: one row per pixel; in binary mode "
                                               "1 = black, in gray mode 0-255, rgb as x,y,r,g,b.")
    to_csv_p.add_argument("image", help="the picture to encode")
    to_csv_p.add_argument("-o", "--output", required=True, metavar="pixels.csv", help="the CSV to write")
    to_csv_p.add_argument("--size", type=size_arg, metavar="N|WxH",
                          help="resize first: N for the longest side (aspect kept) or WxH")
    to_csv_p.add_argument("--mode", choices=MODES, help="binary (threshold at 128), gray or rgb "
                                                        "(default: rgb for colour images, else gray)")
    add_max_pixels(to_csv_p)
    to_csv_p.add_argument("--force", action="store_true", help="replace the output if it exists")
    to_csv_p.set_defaults(func=cmd_to_csv)

    from_csv_p = commands.add_parser("from-csv", aliases=["decode"], help="pixel CSV -> image",
                                   description="The original project's decoder.")
    from_csv_p.add_argument("csv", help="a pixel CSV (x,y,pixel_value or x,y,r,g,b)")
    from_csv_p.add_argument("-o", "--output", required=True, metavar="image.png",
                          help="the image to write; its format follows the name (.png, .bmp, ...)")
    from_csv_p.add_argument("--force", action="store_true", help="replace the output if it exists")
    from_csv_p.set_defaults(func=cmd_from_csv)


def cmd_to_csv(args) -> int:
    picture = picture_to_csv(args.image, args.output, size=args.size, mode=args.mode, max_pixels=args.max_pixels,
                             force=args.force)
    say(f"wrote {args.output}: {picture.width}x{picture.height} {picture.mode}, "
        f"{picture.width * picture.height:,} rows")
    return ExitCode.OK


def cmd_from_csv(args) -> int:
    levels, mode = csv_to_picture(args.csv, args.output, force=args.force)
    say(f"wrote {args.output}: {levels.shape[1]}x{levels.shape[0]} {mode}")
    return ExitCode.OK
