"""``ironlearn compress`` and ``ironlearn decompress``: a picture as a small file that decodes at any size."""

from __future__ import annotations

import time

from .. import codec
from ..codec.search.encoder import DEFAULT_BPP, MAX_BPP
from ..codec.bitstream.header import MAX_PIXELS as CODEC_MAX_PIXELS
from ..limits import MAX_SECONDS
from ..errors import OptionError
from ..files import check_output, write_bytes
from ..fitting import UsageError
from ..image.io import load_picture
from .argtypes import positive_float, size_arg, view_arg
from .common import save_drawing, say
from .status import ExitCode


def add_parser(commands) -> None:
    compress_p = commands.add_parser(
        "compress", help="store a picture as a small file that redraws at any size",
        description="Store a picture in FILE as a pyramid of quantised latent grids (and, when it pays for "
                    "its bits, a small MLP that refines them), entropy-coded; 'ironlearn decompress' redraws "
                    "it at any size. Prints the file's real bits per pixel (every byte counted), its PSNR "
                    "and the time taken. Design and measurements: docs/compression.md.")
    compress_p.add_argument("picture", metavar="PICTURE", help="image file (PNG, JPEG, ...) or pixel CSV")
    compress_p.add_argument("-o", "--output", required=True, metavar="FILE", help="compressed file to write")
    rate = compress_p.add_mutually_exclusive_group()
    rate.add_argument("--bpp", type=positive_float, metavar="B",
                      help="target bits per pixel of the whole file (default 0.5; the file lands within 3%% "
                           "under it)")
    rate.add_argument("--lmbda", type=positive_float, metavar="L",
                      help="rate-distortion weight instead of a target: mean squared error (pixels in 0..1) "
                           "plus L times bits per pixel; higher, smaller files (useful from about 1e-5 to 1e-2)")
    compress_p.add_argument("--seconds", type=positive_float, default=30.0, metavar="S",
                            help="time for the whole encode, wall clock, reading the picture included (default "
                                 "30): what does not fit is left out, the MLP first; the first analysis and one "
                                 "file checked are done whatever it says")
    compress_p.add_argument("--mode", choices=("gray", "rgb"), help="gray or rgb (default: as the picture)")
    compress_p.add_argument("--force", action="store_true", help="replace FILE if it exists")
    compress_p.set_defaults(func=cmd_compress)

    decompress_p = commands.add_parser(
        "decompress", help="redraw a compressed file as a PNG, at its size or any other",
        description="Decode a file of 'ironlearn compress' to a PNG, at the picture's own size or any other, "
                    "or a region of it (--view); 'ironlearn render FILE' does the same with render's options.")
    decompress_p.add_argument("file", metavar="FILE", help="a file 'ironlearn compress' wrote")
    decompress_p.add_argument("-o", "--output", required=True, metavar="OUT.png", help="image to write")
    how_big = decompress_p.add_mutually_exclusive_group()
    how_big.add_argument("--size", type=size_arg, metavar="N|WxH",
                         help="N for the longest side (the aspect kept) or WxH; default: the picture's own size")
    how_big.add_argument("--scale", type=positive_float, metavar="F", help="F times the picture's size")
    decompress_p.add_argument("--view", type=view_arg, metavar="X0,Y0,X1,Y1",
                              help="only this region of the picture, which spans the [-1, 1] square (y grows "
                                   "downward; write --view=-0.5,... when it starts with a minus); sized at the "
                                   "picture's own pixel pitch unless --size or --scale says otherwise")
    decompress_p.add_argument("--force", action="store_true", help="replace OUT if it exists")
    decompress_p.set_defaults(func=cmd_decompress)


def cmd_compress(args) -> int:
    started = time.perf_counter()  # --seconds counts from here
    check_output(args.output, args.force, reads=[args.picture])
    if args.bpp is not None and args.bpp > MAX_BPP:
        raise UsageError(f"--bpp {args.bpp:g} is more than the {MAX_BPP} bits a pixel of 8-bit colour; give less")
    if args.seconds > MAX_SECONDS:
        raise UsageError(f"--seconds {args.seconds:g} is more than the {MAX_SECONDS:,} (30 days) an encode may "
                         "take; give less")
    picture = load_picture(args.picture, mode=args.mode, max_pixels=CODEC_MAX_PIXELS, option=None)
    for note in picture.notes:
        say(f"note: {note}")
    values = picture.values
    height, width = values.shape[:2]
    say(f"compressing {args.picture} ({width}x{height} {picture.mode}) in at most {args.seconds:g} s")
    shown = [time.perf_counter()]

    def progress(what, done, total, psnr):
        if time.perf_counter() - shown[0] >= 10:  # a line every 10 s: large pictures take minutes
            shown[0] = time.perf_counter()
            say(f"  {what} {done}/{total}" + ("" if psnr is None else f": {psnr:.2f} dB"))

    try:
        # Reading the picture took some of the time; what is left is the encoder's (a sliver at least).
        seconds = args.seconds - (time.perf_counter() - started)
        result = codec.compress_array(values, bpp=args.bpp, lmbda=args.lmbda, seconds=max(seconds, 1e-3),
                                      progress=progress)
    except OptionError:
        raise  # worded with the command's flags where the command reports it
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    write_bytes(args.output, result.data)
    if result.steps:
        kept = f"pyramid and MLP ({result.steps} steps)"
    elif result.mlp_tried:
        kept = "pyramid alone (the MLP did not pay for its bits)"
    else:
        kept = ("pyramid alone (no MLP was trained: too little time left, or too small a picture; "
                "more --seconds may help)")
    say(f"wrote {args.output}: {len(result.data):,} bytes, {result.bpp:.4f} bpp, {result.psnr:.2f} dB PSNR, "
        f"{result.seconds:.1f} s; {kept}")
    target = (args.bpp or DEFAULT_BPP) if args.lmbda is None else None
    if target is not None and result.bpp > target:
        say(f"note: {result.bpp:.4f} bpp is over the target of {target:g}, which this picture "
            "cannot reach: this is the smallest of the files tried")
    return ExitCode.OK


def cmd_decompress(args) -> int:
    check_output(args.output, args.force, reads=[args.file])
    if not args.output.lower().endswith(".png"):
        raise UsageError(f"{args.output}: decompress writes PNG; give a name ending in .png")
    _, decoded = codec.read_path(args.file)
    decoded.region(args.view)  # a view that leaves the picture: one line, worded with --view
    width, height = decoded.draw_size(args.size, args.scale, args.view)
    save_drawing(decoded, args.output, width, height, args.view)
    return ExitCode.OK
