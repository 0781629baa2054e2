"""Fixed splines of a 200x200 binary drawing, redrawn at the original project's sizes (474, 1024)
and thresholded, against bicubic and Lanczos upscaling: no network, no training.

    python benchmarks/drawing_splines.py [--sets tuned held-out] [--half 0.5]

A cubic B-spline's vertices at ``half`` times the interpolating coefficients
(:func:`ironlearn.nn.splines.bspline_coefficients`) plus ``1 - half`` times the pixels themselves:
1 interpolates the pixels (what a pixel spline started as the picture draws), 0 smooths them.
``tuned`` is the nine drawings of ``redraw_sets.py`` (where 0.5 was chosen); ``held-out``, sixteen
drawn here from other seeds, which were not.  Scored as ``redraw_sets.py --sets drawings-original``
scores a fit: the share of pixels right against the drawing made at that size and thresholded.
"""

from __future__ import annotations

import argparse

import numpy as np
from PIL import Image, ImageDraw, ImageFont
from redraw_sets import DRAWN, FINE, ORIGINAL_SIZES, as_unit, binary, drawing

from ironlearn.nn.splines import INTERPOLATIONS, bspline_coefficients

WORDS = ("Zoom", "pixel", "network", "sketch", "lines")


def held_out(seed: int) -> Image.Image:
    """Drawing ``seed`` of the held-out set: random strokes, ellipses, words or a spiral with
    hatching, thick (10-28 px at DRAWN) on even seeds and thin (4-8 px) on odd ones."""
    image = Image.new("L", (DRAWN, DRAWN), 255)
    pen = ImageDraw.Draw(image)
    rng = np.random.default_rng(1000 + seed)
    width = int(rng.integers(4, 9)) if seed % 2 else int(rng.integers(10, 28))
    kind = seed % 4
    if kind == 0:
        for _ in range(18):
            x0, y0, x1, y1 = rng.uniform(80, 1520, 4)
            pen.line([(x0, y0), (x1, y1)], fill=0, width=width)
    elif kind == 1:
        for _ in range(9):
            cx, cy, r = *rng.uniform(300, 1300, 2), rng.uniform(60, 400)
            pen.ellipse([cx - r, cy - r * rng.uniform(0.5, 1), cx + r, cy + r], outline=0, width=width)
    elif kind == 2:
        font = ImageFont.load_default(size=int(rng.integers(160, 300)))
        for row in range(3):
            pen.text((80, 150 + 480 * row), WORDS[(seed + row) % len(WORDS)], font=font, fill=0)
    else:
        t, a = np.linspace(0, rng.uniform(4, 8) * np.pi, 500), rng.uniform(25, 45)
        pen.line([(800 + a * s * np.cos(s), 800 + a * s * np.sin(s)) for s in t], fill=0, width=width)
        for k in range(int(rng.integers(8, 20))):
            y = 100 + 70 * k
            pen.line([(100, y), (500, y + rng.uniform(-50, 50))], fill=0, width=max(2, width // 2))
    return image


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
