"""Benchmark (c): fit camera at 256x256, render at 512x512, PSNR against the true 512x512,
beside Pillow's bicubic upscaling of the same 256x256 input.

    python benchmarks/upscale.py [--seconds 60] [--presets hashgrid siren] [--option finest=128 ...]
"""

from __future__ import annotations

import argparse
import datetime

import numpy as np
from PIL import Image

from common import machine, timed_fit

from ironlearn.backend import Backend
from ironlearn.image import psnr, render
from ironlearn.image.io import Picture


def main():
    import skimage.data

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--presets", nargs="+", default=["hashgrid", "siren", "fourier"])
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                        help="a preset option, e.g. finest=128 (numbers only)")
    args = parser.parse_args()
    options = {k: float(v) if "." in v else int(v) for k, v in (o.split("=", 1) for o in args.option)}
    truth_image = Image.fromarray(skimage.data.camera())  # 512x512
    truth = np.asarray(truth_image, np.float32)[..., None] / 255
    small_image = truth_image.resize((256, 256), Image.LANCZOS)
    small = Picture(np.asarray(small_image, np.float32)[..., None] / 255, "gray", "camera")
    bicubic = np.asarray(small_image.resize((512, 512), Image.BICUBIC), np.float32)[..., None] / 255
    print(f"# {datetime.date.today()}, {machine()}")
    print("| method | PSNR at 256 (fit) | PSNR at 512 vs truth |")
    print("| --- | --- | --- |")
    print(f"| Pillow bicubic | - | {psnr(bicubic, truth):.2f} |")
    for preset in args.presets:
        model, reached, steps, _ = timed_fit(preset, small, args.seconds, [args.seconds], options=options)
        big = render(model, 512, 512, Backend("cpu"))
        label = " ".join([preset] + args.option)
        print(f"| ironlearn {label}, {args.seconds:g} s | {reached[args.seconds][0]:.2f} | {psnr(big, truth):.2f} |",
              flush=True)


if __name__ == "__main__":
    main()
