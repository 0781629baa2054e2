"""Experiment: a sparse analysis of the codec's pyramid against its closed-loop one.

The codec's analysis (``codec.search.analysis.analyse``) fits each level, coarsest first, by least
squares to what the coarser levels left, and rounds it with a dead zone.  The pyramid is
overcomplete (4/3 values a pixel a channel), so many sets of latents draw nearly the same
picture; least squares picks dense ones, whose ringing the finer levels then pay to cancel.

The sparse analysis here picks each level, coarsest first, from a joint fit of that level and
every finer one under an L1 penalty (a proxy for the rate): FISTA on the values ``w_k = 2**k z_k``
(so that every level's columns have about unit norm and one step size), ``weight * step`` per
unit of ``|w|``, warm-started from the closed-loop latents; then the level is rounded as the
codec rounds it and held fixed while the finer ones are fitted.  Level 0 takes what is left, as
in the closed loop.  The decoder is unchanged: only which latents the encoder writes differs.

Reported per picture and step: the latents' bits (as the file would code them) and PSNR, and
the PSNR minus the closed-loop curve's at the same rate (interpolated in log-rate over 16 steps).
The pyramid alone: no filters, no MLP.  Usage::

    python benchmarks/experiments/sparse_analysis.py --images kodim23 monarch sail tulips --steps 0.3 0.2 0.15

Results and what they led to: docs/compression.md (*What else was tried*).
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

#: benchmarks/, for common.py; src/, for an ironlearn not installed.
BENCHMARKS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[0:0] = [BENCHMARKS, os.path.join(os.path.dirname(BENCHMARKS), "src")]

from common import SPORCO_PHOTOS, sporco_photos  # noqa: E402

from ironlearn.codec.model.latents import COLOURS, Pyramid, upsampling  # noqa: E402
from ironlearn.codec.search.analysis import analyse, prepare_analysis, rounded  # noqa: E402
from ironlearn.codec.search.ratecontrol import distortion, latent_bits  # noqa: E402
from ironlearn.image.metrics import psnr_from_mse  # noqa: E402


def sparse_analyse(picture: np.ndarray, step: float, levels: int, weight: float, iterations: int) -> Pyramid:
    """The sparse analysis described above, at the closed loop's steps for ``step``."""
    height, width, channels = picture.shape
    closed = analyse(picture, step, levels)
    steps = closed.steps.astype(np.float32)
    mats = [(upsampling(height, height, k), upsampling(width, width, k)) for k in range(levels)]

    def up(w, k):  # level k's normalised values to the picture
        return w if k == 0 else mats[k][0] @ w @ mats[k][1].T / (1 << k)

    def down(r, k):  # up's adjoint
        return r if k == 0 else mats[k][0].T @ r @ mats[k][1] / (1 << k)

    x = picture.transpose(2, 0, 1).astype(np.float32)
    ws = [closed.values(k) * (1 << k) for k in range(levels)]
    pyramid = Pyramid(height, width, channels, levels, closed.steps)
    fixed = np.zeros_like(x)  # what the levels already rounded draw
    for k in reversed(range(1, levels)):
        free = range(k + 1)
        lipschitz = 1.02 * (k + 1)  # the free levels' largest eigenvalue is about their count
        threshold = weight * step / lipschitz
        moving, t = [w.copy() for w in ws], 1.0
        for _ in range(iterations):
            residual = fixed + sum(up(moving[j], j) for j in free) - x
            new = [moving[j] - down(residual, j) / lipschitz for j in free]
            new = [np.sign(g) * np.maximum(np.abs(g) - threshold, 0) for g in new]
            t_next = (1 + np.sqrt(1 + 4 * t * t)) / 2
            for j in free:
                moving[j] = new[j] + (t - 1) / t_next * (new[j] - ws[j])
                ws[j] = new[j]
            t = t_next
        pyramid.latents[k] = rounded(ws[k] / (1 << k) / steps[k][:, None, None])
        ws[k] = pyramid.values(k) * (1 << k)
        fixed += up(ws[k], k)
    pyramid.latents[0] = rounded((x - fixed) / steps[0][:, None, None])
    return pyramid


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--images", nargs="+", default=list(SPORCO_PHOTOS), choices=SPORCO_PHOTOS)
    parser.add_argument("--steps", nargs="+", type=float, default=[0.3, 0.2, 0.15], help="level 0's steps")
    parser.add_argument("--weights", nargs="+", type=float, default=[0.012], help="L1 weight, times the step")
    parser.add_argument("--iterations", type=int, default=10, help="FISTA iterations a level")
    parser.add_argument("--levels", type=int, default=7)
    parser.add_argument("--folder", default=os.path.join(tempfile.gettempdir(), "ironlearn-sporco"),
                        help="where the sporco wheel is, or is downloaded to")
    args = parser.parse_args()
    for name, pixels in sporco_photos(args.folder, args.images):
        picture = (pixels / 255.0).astype(np.float32) @ COLOURS[3].T
        height, width, _ = picture.shape
        prepare_analysis(height, width, args.levels)
        curve = []
        for step in np.exp(np.linspace(np.log(0.05), np.log(0.6), 16)):
            closed = analyse(picture, float(step), args.levels)
            curve.append((np.log(latent_bits(closed) / (height * width)), psnr_from_mse(distortion(picture, closed))))
        log_rates, psnrs = np.array(sorted(curve)).T
        for step in args.steps:
            for weight in args.weights:
                started = time.perf_counter()
                pyramid = sparse_analyse(picture, step, args.levels, weight, args.iterations)
                seconds = time.perf_counter() - started
                rate = latent_bits(pyramid) / (height * width)
                psnr = psnr_from_mse(distortion(picture, pyramid))
                gain = psnr - np.interp(np.log(rate), log_rates, psnrs)
                print(f"{name} step {step:g} weight {weight:g}: {rate:.4f} bpp, {psnr:.3f} dB, "
                      f"{gain:+.3f} dB at equal rate, {seconds:.1f} s", flush=True)


if __name__ == "__main__":
    main()
