"""Fixed splines of a 200x200 binary drawing, redrawn at the original project's sizes (474, 1024)
and thresholded, against bicubic and Lanczos upscaling: no network, no training.

    python benchmarks/experiments/drawing_splines.py [--sets tuned held-out] [--half 0.5]

A cubic B-spline's vertices at ``half`` times the interpolating coefficients
(:func:`ironlearn.nn.splines.bspline_coefficients`) plus ``1 - half`` times the pixels themselves:
1 interpolates the pixels (what a pixel spline started as the picture draws), 0 smooths them.
``tuned`` is the nine drawings of ``benchmarks/redraw_sets.py`` (where 0.5 was chosen); ``held-out``, its sixteen
drawn from other seeds (``redraw_sets.held_out``), which were not.  Scored as ``redraw_sets.py --sets drawings-original``
scores a fit: the share of pixels right against the drawing made at that size and thresholded.
"""

from __future__ import annotations

import argparse
import os
import sys

import numpy as np
from PIL import Image

#: benchmarks/, for redraw_sets.py; src/, for an ironlearn not installed.
BENCHMARKS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[0:0] = [BENCHMARKS, os.path.join(os.path.dirname(BENCHMARKS), "src")]

from redraw_sets import FINE, ORIGINAL_SIZES, as_unit, binary, drawing, held_out  # noqa: E402

from ironlearn.nn.splines import INTERPOLATIONS, bspline_coefficients  # noqa: E402


def upsampling(n: int, side: int) -> np.ndarray:
    """``(side, n)``: the cubic B-spline of ``n`` vertices (one per pixel centre, the edge vertex
    repeated past the edge) read at the centres of ``side`` pixels."""
    u = (np.arange(side) + 0.5) * n / side - 0.5
    base = np.floor(u)
    offsets, weights_along = INTERPOLATIONS["bspline"]
    weights, _ = weights_along(u - base)
    matrix = np.zeros((side, n))
    for offset, weight in zip(offsets, weights):
        np.add.at(matrix, (np.arange(side), np.clip(base.astype(int) + offset, 0, n - 1)), weight)
    return matrix


def rows(pictures, half: float) -> list[dict]:
    out = []
    for name, big in pictures:
        small = binary(big, 200).astype(np.float64)
        vertices = half * bspline_coefficients(small) + (1 - half) * small
        for side in ORIGINAL_SIZES:
            truth, up = binary(big, side), upsampling(200, side)
            row = {"picture": name, "side": side, "spline": ((up @ vertices @ up.T >= 0.5) == truth).mean()}
            for method, resample in (("bicubic", Image.BICUBIC), ("lanczos", Image.LANCZOS)):
                upscaled = Image.fromarray(small.astype(np.uint8) * 255).resize((side, side), resample)
                row[method] = ((as_unit(upscaled) >= 0.5) == truth).mean()
            out.append(row)
    return out


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sets", nargs="+", choices=("tuned", "held-out"), default=["tuned", "held-out"])
    parser.add_argument("--half", type=float, default=0.5, help="the share of the interpolating coefficients")
    args = parser.parse_args()
    sets = {"tuned": [(f"drawing{n}", drawing(n)) for n in (*range(5), *FINE)],
            "held-out": [(f"held{n}", held_out(n)) for n in range(16)]}
    for name in args.sets:
        scored = rows(sets[name], args.half)
        print(f"\n{name}: {len(scored)} (drawing, size) pairs, half = {args.half}")
        for peer in ("bicubic", "lanczos"):
            gap = 100 * np.array([r["spline"] - r[peer] for r in scored])
            print(f"  spline minus {peer}: min {gap.min():+.2f}, median {np.median(gap):+.2f}, max {gap.max():+.2f} "
                  f"points; under on {int((gap < 0).sum())} of {len(gap)}")


if __name__ == "__main__":
    main()
