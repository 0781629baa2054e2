"""``ironlearn encode`` and ``ironlearn decode``: the original project's image <-> pixel CSV converters."""

from __future__ import annotations

from ..api import MODES, csv_to_picture, picture_to_csv
from .argtypes import add_max_pixels, size_arg
from .common import say
from .status import ExitCode


def add_parser(commands) -> None:

    encode_p = commands.add_parser("encode", help="image -> pixel CSV (x,y,pixel_value)",
                                   description="The original project's encoder: one row per pixel; in binary mode "
                                               "1 = black, in gray mode 0-255, rgb as x,y,r,g,b.")
    encode_p.add_argument("image", help="the picture to encode")
    encode_p.add_argument("-o", "--output", required=True, metavar="pixels.csv", help="the CSV to write")
    encode_p.add_argument("--size", type=size_arg, metavar="N|WxH",
                          help="resize first: N for the longest side (aspect kept) or WxH")
    encode_p.add_argument("--mode", choices=MODES, help="binary (threshold at 128), gray or rgb "
                                                        "(default: rgb for colour images, else gray)")
    add_max_pixels(encode_p)
    encode_p.add_argument("--force", action="store_true", help="replace the output if it exists")
    encode_p.set_defaults(func=cmd_encode)

    decode_p = commands.add_parser("decode", help="pixel CSV -> image", description="The original project's decoder.")
    decode_p.add_argument("csv", help="a pixel CSV (x,y,pixel_value or x,y,r,g,b)")
    decode_p.add_argument("-o", "--output", required=True, metavar="image.png",
                          help="the image to write; its format follows the name (.png, .bmp, ...)")
    decode_p.add_argument("--force", action="store_true", help="replace the output if it exists")
    decode_p.set_defaults(func=cmd_decode)


def cmd_encode(args) -> int:
    picture = picture_to_csv(args.image, args.output, size=args.size, mode=args.mode, max_pixels=args.max_pixels,
                             force=args.force)
    say(f"wrote {args.output}: {picture.width}x{picture.height} {picture.mode}, "
        f"{picture.width * picture.height:,} rows")
    return ExitCode.OK


def cmd_decode(args) -> int:
    levels, mode = csv_to_picture(args.csv, args.output, force=args.force)
    say(f"wrote {args.output}: {levels.shape[1]}x{levels.shape[0]} {mode}")
    return ExitCode.OK
