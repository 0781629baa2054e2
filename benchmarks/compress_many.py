"""Benchmark: a folder of photographs compressed by ``ironlearn compress-many``, against the same
encodes one at a time by ``ironlearn compress``.

    python benchmarks/compress_many.py [--seconds 30] [--bpp 0.25] [--workers 2] [--wheels DIR]
                                       [--engine local|ray] [--skip-single]

The eight photographs of the codec's benchmark (sporco's four, read from its wheel, and
scikit-image's astronaut, coffee, chelsea and rocket) are saved as PNGs; ``compress-many`` runs
on the folder (``--workers`` at once), then, unless ``--skip-single``, ``ironlearn compress``
runs on each picture, one after another, with the same settings.  Prints the wall time of each
way, and per picture the PSNR and rate of both files and their difference; the mean, min,
median and max of the differences.  Run it on an otherwise idle machine.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import statistics
import subprocess
import sys
import tempfile
import time

import numpy as np
from PIL import Image

from common import machine, sporco_pngs
from ironlearn import codec

SKIMAGE_PHOTOS = ("astronaut", "coffee", "chelsea", "rocket")


def save_photographs(work: str, wheels: str) -> list[tuple[str, str]]:
    """The eight photographs as PNGs in ``work``: ``[(name, path)]``."""
    import skimage.data

    saved = sporco_pngs(work, wheels)
    for name in SKIMAGE_PHOTOS:
        path = os.path.join(work, f"{name}.png")
        Image.fromarray(getattr(skimage.data, name)()).save(path)
        saved.append((name, path))
    return saved


def run(command: list[str]) -> float:
    """Run ``ironlearn`` with ``command``; its wall time in seconds."""
    started = time.perf_counter()
    subprocess.run([sys.executable, "-m", "ironlearn", *command], check=True, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL)
    return time.perf_counter() - started


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=30.0)
    parser.add_argument("--bpp", type=float, default=0.25)
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--engine", choices=("local", "ray"), default="local")
    parser.add_argument("--wheels", default=os.path.join(tempfile.gettempdir(), "ironlearn-wheels"))
    parser.add_argument("--skip-single", action="store_true", help="only compress-many")
    args = parser.parse_args()
    settings = ["--seconds", str(args.seconds), "--bpp", str(args.bpp)]
    with tempfile.TemporaryDirectory() as work:
        pictures = os.path.join(work, "pictures")
        os.makedirs(pictures)
        photos = save_photographs(pictures, args.wheels)
        many = run(["compress-many", pictures, "--out", os.path.join(work, "many"), "--workers", str(args.workers),
                    "--engine", args.engine, *settings])
        with open(os.path.join(work, "many", "summary.csv"), newline="") as file:
            rows = {row["picture"]: row for row in csv.DictReader(file)}
        print(f"{machine()}; {len(photos)} photographs, {args.bpp:g} bpp, {args.seconds:g} s each")
        print(f"compress-many, {args.workers} workers ({args.engine}): {many:.1f} s "
              f"({many / (len(photos) * args.seconds / args.workers):.2f} of {len(photos)} x {args.seconds:g} s / "
              f"{args.workers})")
        if args.skip_single:
            for name, _ in photos:
                print(f"  {name:10s} {float(rows[name]['psnr_db']):6.2f} dB {float(rows[name]['bpp']):.4f} bpp "
                      f"{float(rows[name]['seconds']):5.1f} s")
            return
        single, differences = 0.0, []
        print(f"  {'picture':10s} {'many dB':>8s} {'bpp':>7s} {'single dB':>9s} {'bpp':>7s} {'diff':>6s}")
        for name, path in photos:
            out = os.path.join(work, f"{name}.ilc")
            single += run(["compress", path, "-o", out, *settings])
            with open(out, "rb") as file:
                decoded = codec.decode(file.read()).astype(np.float64)
            with Image.open(path) as picture:
                original = np.asarray(picture.convert("RGB" if decoded.shape[2] == 3 else "L"), np.float64)
            psnr = 10 * math.log10(255 ** 2 / np.mean((decoded - original.reshape(decoded.shape)) ** 2))
            bpp = 8 * os.path.getsize(out) / (decoded.shape[0] * decoded.shape[1])
            many_psnr = float(rows[name]["psnr_db"])
            differences.append(many_psnr - psnr)
            print(f"  {name:10s} {many_psnr:8.2f} {float(rows[name]['bpp']):7.4f} {psnr:9.2f} {bpp:7.4f} "
                  f"{many_psnr - psnr:+6.2f}")
        print(f"compress, one at a time: {single:.1f} s; compress-many {single / many:.2f}x faster")
        print(f"compress-many - compress: mean {statistics.mean(differences):+.2f} dB, min {min(differences):+.2f}, "
              f"median {statistics.median(differences):+.2f}, max {max(differences):+.2f}")


if __name__ == "__main__":
    main()
