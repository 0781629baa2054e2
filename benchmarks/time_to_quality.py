"""Benchmark (b): PSNR reached after 5, 15, 30 and 60 s of fitting, for every preset.

Pictures: scikit-image's camera (256x256 gray), astronaut (256x256 rgb) and the bundled line
drawing (200x200 binary).  Each preset fits as `ironlearn fit --time-budget 60` would (its own
defaults and a cosine schedule sized to the budget); PSNR is measured on the full picture when
the training clock passes each mark.

    python benchmarks/time_to_quality.py [--seconds 60] [--presets hashgrid siren ...]
"""

from __future__ import annotations

import argparse
import datetime

from common import machine, sample_picture, skimage_picture, timed_fit

from ironlearn.fitting import PRESETS

MARKS = (5, 15, 30, 60)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--presets", nargs="+", default=sorted(PRESETS))
    parser.add_argument("--pictures", nargs="+", default=["camera", "astronaut", "drawing"])
    parser.add_argument("--setting", action="append", default=[], metavar="KEY=VALUE",
                        help="a fit setting, e.g. filter=centres or batch_size=0")
    args = parser.parse_args()
    settings = {k: int(v) if v.isdigit() else v for k, v in (o.split("=", 1) for o in args.setting)}
    pictures = {"camera": lambda: skimage_picture("camera", 256, "gray"),
                "astronaut": lambda: skimage_picture("astronaut", 256, "rgb"),
                "drawing": sample_picture}
    marks = [m for m in MARKS if m <= args.seconds]
    print(f"# {datetime.date.today()}, {machine()}")
    print("| picture | preset | params | pixels | " + " | ".join(f"PSNR @ {m} s" for m in marks) + " | steps |")
    print("| --- " * (5 + len(marks)) + "|")
    for picture_name in args.pictures:
        picture = pictures[picture_name]()
        for preset in args.presets:
            model, reached, steps, _ = timed_fit(preset, picture, args.seconds, marks, **settings)
            cells = " | ".join(f"{reached[m]['psnr_db']:.2f}" for m in marks)
            label = " ".join([preset] + args.setting)
            print(f"| {picture_name} {picture.width}x{picture.height} {picture.mode} | {label} | "
                  f"{model.num_parameters:,} | {picture.width * picture.height:,} | {cells} | {steps:,} |",
                  flush=True)


if __name__ == "__main__":
    main()
