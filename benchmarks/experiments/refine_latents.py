"""Experiment: the latents trained, not only computed (``codec/search/refine.py``), on the pyramid alone.

    python benchmarks/experiments/refine_latents.py [--rates 0.25 0.5] [--steps 40 120] [--out runs/refine]

For each of sporco's four photographs (768x512, read from its wheel) and each rate: the
analysis's pyramid at the rate (rate control, as ``compress`` starts), then the refinement of
its latents for each step count, against ``distortion + lambda * rate`` at the analysis's own
slope, its rate held within the analysis's.  Each refined pyramid is set against the analysis
at the same rate: five analyses at steps 0.9 to 1.1 times the chosen one give the analysis's
PSNR as a function of its rate, read at the refined pyramid's rate by linear interpolation.
The gain is the difference, in dB, of the pyramid alone (no filters, no MLP).  Printed per
picture, with the min, median and max over the set, and written to ``--out``/results.json.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time

import numpy as np

#: benchmarks/, for common.py; src/, for an ironlearn not installed.
BENCHMARKS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[0:0] = [BENCHMARKS, os.path.join(os.path.dirname(BENCHMARKS), "src")]

from common import add_set_arguments, machine, spread, sporco_photos, write_results  # noqa: E402

from ironlearn.codec.model.latents import COLOURS  # noqa: E402
from ironlearn.codec.search.analysis import analyse  # noqa: E402
from ironlearn.codec.search.ratecontrol import Clock, analyse_at_rate, distortion, latent_bits, slope  # noqa: E402
from ironlearn.codec.search.refine import refine  # noqa: E402
from ironlearn.image.metrics import psnr_from_mse  # noqa: E402

LEVELS = 7


def analysis_at(picture, pyramid, rate: float) -> float:
    """The analysis's PSNR at ``rate`` (bits per pixel), interpolated between analyses at steps
    around ``pyramid``'s."""
    pixels = picture.shape[0] * picture.shape[1]
    points = sorted((latent_bits(found) / pixels, psnr_from_mse(distortion(picture, found)))
                    for found in (analyse(picture, float(pyramid.steps[0, 0]) * f, LEVELS)
                                  for f in (0.9, 0.95, 1.0, 1.05, 1.1)))
    return float(np.interp(rate, [r for r, _ in points], [p for _, p in points]))


def measure(name: str, rgb: np.ndarray, bpp: float, steps: int) -> dict:
    picture = (rgb.astype(np.float32) / 255) @ COLOURS[3].T
    pixels = picture.shape[0] * picture.shape[1]
    pyramid = analyse_at_rate(picture, LEVELS, bpp * pixels, Clock(600))
    bits, lam = latent_bits(pyramid), slope(picture, LEVELS, pyramid)
    started = time.perf_counter()
    refined = refine(picture, pyramid, lam, until=float("inf"), bits=bits, steps=steps)
    seconds = time.perf_counter() - started
    rate, psnr = latent_bits(refined) / pixels, psnr_from_mse(distortion(picture, refined))
    return {"picture": name, "bpp_target": bpp, "steps": steps, "seconds": round(seconds, 2),
            "analysis_bpp": round(bits / pixels, 4), "analysis_psnr": round(psnr_from_mse(distortion(picture, pyramid)), 3),
            "refined_bpp": round(rate, 4), "refined_psnr": round(psnr, 3),
            "gain_db": round(psnr - analysis_at(picture, pyramid, rate), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_set_arguments(parser, "refine", [0.25, 0.5])
    parser.add_argument("--steps", nargs="+", type=int, default=[40, 120])
    args = parser.parse_args()
    rows = []
    print(f"# refining the latents: {machine()}")
    for name, rgb in sporco_photos(args.wheels):
        for bpp in args.rates:
            for steps in args.steps:
                rows.append(measure(name, rgb, bpp, steps))
                print(json.dumps(rows[-1]), flush=True)
    for bpp in args.rates:
        for steps in args.steps:
            gains = [row["gain_db"] for row in rows if row["bpp_target"] == bpp and row["steps"] == steps]
            seconds = statistics.median(row["seconds"] for row in rows if row["bpp_target"] == bpp and row["steps"] == steps)
            print(f"{bpp} bpp, {steps} steps ({seconds:.1f} s median): gain at equal rate {spread(gains, ' dB')}")
    write_results(args.out, rows)


if __name__ == "__main__":
    main()
