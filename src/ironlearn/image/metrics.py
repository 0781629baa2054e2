"""Image quality measures on values in [0, 1]."""

from __future__ import annotations

import math

import numpy as np


def psnr_from_mse(mse: float) -> float:
    """Peak signal-to-noise ratio in dB for a peak of 1 (capped at 100 dB for a perfect match)."""
    return 100.0 if mse <= 1e-10 else -10.0 * math.log10(mse)


def psnr(pred, target) -> float:
    """PSNR in dB between two arrays of values in [0, 1] (predictions clipped to it first)."""
    pred = np.clip(np.asarray(pred, np.float64), 0.0, 1.0)
    return psnr_from_mse(float(np.mean((pred - np.asarray(target, np.float64)) ** 2)))


def binary_accuracy(pred, target) -> float:
    """Fraction of pixels on the right side of 0.5."""
    return float(np.mean((np.asarray(pred) > 0.5) == (np.asarray(target) > 0.5)))


class BandScore:
    """PSNR (and, for binary pictures, accuracy) of a render against ``picture``, accumulated band
    by band, so that no more than one band is ever held in float32.  Exact: the same numbers as
    :func:`psnr` and :func:`binary_accuracy` on the whole picture."""

    def __init__(self, picture):
        self.picture = picture
        self.squared_error, self.correct, self.count = 0.0, 0, 0

    def add(self, row_start: int, pixels) -> None:
        """Score rendered rows ``row_start ...`` (``(rows, width, channels)`` in [0, 1])."""
        target = self.picture.band(slice(row_start, row_start + len(pixels)))
        pred = np.clip(np.asarray(pixels, np.float64), 0.0, 1.0)
        self.squared_error += float(np.square(pred - target).sum())
        self.correct += int(np.count_nonzero((pred > 0.5) == (target > 0.5)))
        self.count += target.size

    @property
    def psnr(self) -> float:
        return psnr_from_mse(self.squared_error / self.count)

    @property
    def accuracy(self) -> float:
        return self.correct / self.count
