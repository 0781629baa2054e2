"""``ironlearn compress`` and ``ironlearn decompress``: a picture as a small file that decodes at any size."""

from __future__ import annotations

import time

from ..api import DEFAULT_BPP, DEVICES, compress, decompress_file
from .argtypes import positive_float, size_arg, view_arg
from .common import progress_style, say
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
                      help="target bits per pixel of the whole file (default 0.5; the file lands at 0.9 to 1.0 "
                           "of it, never over, when the picture and the time can reach it)")
    rate.add_argument("--lmbda", type=positive_float, metavar="L",
                      help="rate-distortion weight instead of a target: mean squared error (pixels in 0..1) "
                           "plus L times bits per pixel; higher, smaller files (useful from about 1e-5 to 1e-2)")
    compress_p.add_argument("--seconds", type=positive_float, default=30.0, metavar="S",
                            help="time for the whole encode, wall clock, reading the picture included (default "
                                 "30): what does not fit is left out, the MLP first; the first analysis and one "
                                 "file checked are done whatever it says")
    compress_p.add_argument("--mode", choices=("gray", "rgb"), help="gray or rgb (default: as the picture)")
    compress_p.add_argument("--device", choices=DEVICES, default="cpu",
                            help="where the MLP, the context model and the tuning train (default cpu; auto: the GPU "
                                 "when CuPy sees one); the analysis runs on the CPU")
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
    result = compress(args.picture, args.output, bpp=args.bpp, lmbda=args.lmbda, seconds=args.seconds,
                      mode=args.mode, force=args.force, progress=say, started=started, device=args.device)
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
    width, height = decompress_file(args.file, args.output, args.size, scale=args.scale, view=args.view,
                                   force=args.force, progress=progress_style())
    say(f"wrote {args.output} ({width}x{height})")
    return ExitCode.OK
