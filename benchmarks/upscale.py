"""Benchmark (c): fit camera (or astronaut) at 256x256, render at 512x512, PSNR against the true
512x512, beside Pillow's nearest, bilinear, bicubic and Lanczos upscaling of the same 256x256 input.

    python benchmarks/upscale.py [--picture camera] [--seconds 30] [--presets hashgrid siren] [--option finest=128 ...]
                                 [--setting filter=centres --setting batch_size=0]
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


def _number_or_text(value: str):
    for kind in (int, float):
        try:
            return kind(value)
        except ValueError:
            pass
    return value


def main():
    import skimage.data

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--picture", choices=("camera", "astronaut"), default="camera",
                        help="a 512x512 scikit-image photograph: camera (gray) or astronaut (rgb)")
    parser.add_argument("--seconds", type=float, default=30)
    parser.add_argument("--presets", nargs="+", default=["hashgrid", "siren"])
    parser.add_argument("--option", action="append", default=[], metavar="KEY=VALUE",
                        help="a preset option, e.g. finest=128")
    parser.add_argument("--setting", action="append", default=[], metavar="KEY=VALUE",
                        help="a fit setting, e.g. filter=bilinear or batch_size=0")
    args = parser.parse_args()
    options = {k: _number_or_text(v) for k, v in (o.split("=", 1) for o in args.option)}
    settings = {k: _number_or_text(v) for k, v in (o.split("=", 1) for o in args.setting)}
    truth_image = Image.fromarray(getattr(skimage.data, args.picture)())  # 512x512
    mode = "rgb" if truth_image.mode == "RGB" else "gray"

    def as_array(image):
        array = np.asarray(image)
        return array if mode == "rgb" else array[..., None]

    truth = as_array(truth_image).astype(np.float32) / 255
    small_image = truth_image.resize((256, 256), Image.LANCZOS)
    small = Picture(as_array(small_image), mode, args.picture)
    print(f"# {datetime.date.today()}, {machine()}")
    print("| method | PSNR at 256 (fit) | PSNR at 512 vs truth |")
    print("| --- | --- | --- |")
    for name, method in (("nearest", Image.NEAREST), ("bilinear", Image.BILINEAR), ("bicubic", Image.BICUBIC),
                         ("Lanczos", Image.LANCZOS)):
        upscaled = as_array(small_image.resize((512, 512), method)).astype(np.float32) / 255
        print(f"| Pillow {name} | - | {psnr(upscaled, truth):.2f} |")
    for preset in args.presets:
        model, reached, steps, _ = timed_fit(preset, small, args.seconds, [args.seconds], options=options, **settings)
        big = render(model, 512, 512, Backend("cpu"))
        label = " ".join([preset] + args.option + args.setting)
        print(f"| ironlearn {label}, {args.seconds:g} s, {steps:,} steps | {reached[args.seconds]['psnr_db']:.2f} | "
              f"{psnr(big, truth):.2f} |", flush=True)


if __name__ == "__main__":
    main()
