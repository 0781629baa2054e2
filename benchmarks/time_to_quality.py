"""Benchmark (b): PSNR reached after 5, 15, 30 and 60 s of fitting, for every preset.

Pictures: scikit-image's camera (256x256 gray), astronaut (256x256 rgb) and the bundled line
drawing (200x200 binary); ``--pictures photos`` adds the photograph sets at 384x256 in colour:
sporco's four (resized from 768x512) and scikit-image's colour photographs (``SKIMAGE_PHOTOS``,
cropped to 3:2 and resized).  Quality per second from a random start:
``--presets hashgrid --pictures photos --setting start=random``.  Each preset fits as `ironlearn fit --time-budget 60` would (its own
defaults and a cosine schedule sized to the budget); PSNR is measured on the full picture when
the training clock passes each mark.

    python benchmarks/time_to_quality.py [--seconds 60] [--presets hashgrid siren ...]
"""

from __future__ import annotations

import argparse
import datetime

import os
import tempfile

import numpy as np
from PIL import Image

from common import machine, sample_picture, skimage_picture, sporco_photos, timed_fit

from ironlearn.image.io import Picture

from ironlearn.fitting import PRESETS

MARKS = (5, 15, 30, 60)
#: scikit-image's colour photographs (besides astronaut, which the default pictures hold).
SKIMAGE_PHOTOS = ("chelsea", "coffee", "rocket", "immunohistochemistry")
PHOTO_SIZE = (384, 256)


def photo_set() -> list[tuple[str, Picture]]:
    """sporco's four photographs and scikit-image's colour ones, centre-cropped to 3:2 and
    resized (Lanczos) to :data:`PHOTO_SIZE`, in colour."""
    import skimage.data

    photos = sporco_photos(os.path.join(tempfile.gettempdir(), "ironlearn-sporco"))
    photos += [(name, getattr(skimage.data, name)()) for name in SKIMAGE_PHOTOS]
    out = []
    for name, array in photos:
        height, width = array.shape[:2]
        crop_h = min(height, width * 2 // 3)
        crop_w = crop_h * 3 // 2
        top, left = (height - crop_h) // 2, (width - crop_w) // 2
        image = Image.fromarray(array[top:top + crop_h, left:left + crop_w]).resize(PHOTO_SIZE, Image.LANCZOS)
        out.append((name, Picture(values=np.asarray(image, np.float32) / 255.0, mode="rgb", source=name)))
    return out


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
    chosen = []
    for picture_name in args.pictures:
        chosen += photo_set() if picture_name == "photos" else [(picture_name, pictures[picture_name]())]
    reached_by = {preset: [] for preset in args.presets}
    for picture_name, picture in chosen:
        for preset in args.presets:
            model, reached, steps, _ = timed_fit(preset, picture, args.seconds, marks, **settings)
            reached_by[preset].append([reached[m]["psnr_db"] for m in marks])
            cells = " | ".join(f"{reached[m]['psnr_db']:.2f}" for m in marks)
            label = " ".join([preset] + args.setting)
            print(f"| {picture_name} {picture.width}x{picture.height} {picture.mode} | {label} | "
                  f"{model.num_parameters:,} | {picture.width * picture.height:,} | {cells} | {steps:,} |",
                  flush=True)
    for preset, rows in reached_by.items():
        if len(rows) > 1:
            table = np.array(rows)
            for label, pick in (("min", np.min), ("median", np.median), ("max", np.max)):
                cells = " | ".join(f"{v:.2f}" for v in pick(table, axis=0))
                print(f"| **{label}** of {len(rows)} | {preset} | | | {cells} | |")


if __name__ == "__main__":
    main()
