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


def _gaussian_blur(values: np.ndarray, sigma: float = 1.5, radius: int = 5) -> np.ndarray:
    """``values`` (H, W) blurred by a Gaussian of ``sigma`` cut at ``radius``, over the pixels
    whose whole window lies inside (the 'valid' part: an (H - 2r, W - 2r) array)."""
    taps = np.exp(-0.5 * (np.arange(-radius, radius + 1) / sigma) ** 2)
    taps /= taps.sum()
    rows = sum(t * values[i:values.shape[0] - 2 * radius + i] for i, t in enumerate(taps))
    return sum(t * rows[:, i:rows.shape[1] - 2 * radius + i] for i, t in enumerate(taps))


def ssim(pred, target) -> float:
    """The structural similarity of two pictures of values in [0, 1], ``(H, W)`` or ``(H, W, C)``
    (Wang et al. 2004: an 11-tap Gaussian window of sigma 1.5, K1 = 0.01, K2 = 0.03), the mean
    over the pixels whose window lies inside and over the channels; 1 for a perfect match.
    Pictures under 11 pixels a side are too small for the window: ValueError."""
    pred = np.clip(np.asarray(pred, np.float64), 0.0, 1.0)
    target = np.asarray(target, np.float64)
    if pred.shape != target.shape:
        raise ValueError(f"ssim needs two pictures of one shape (got {pred.shape} and {target.shape})")
    if min(pred.shape[:2]) < 11:
        raise ValueError(f"ssim's window is 11 pixels a side; the pictures are {pred.shape[1]}x{pred.shape[0]}")
    if pred.ndim == 2:
        pred, target = pred[:, :, None], target[:, :, None]
    c1, c2 = 0.01 ** 2, 0.03 ** 2
    scores = []
    for c in range(pred.shape[2]):
        x, y = pred[:, :, c], target[:, :, c]
        mx, my = _gaussian_blur(x), _gaussian_blur(y)
        vx, vy = _gaussian_blur(x * x) - mx * mx, _gaussian_blur(y * y) - my * my
        cov = _gaussian_blur(x * y) - mx * my
        scores.append(np.mean((2 * mx * my + c1) * (2 * cov + c2) / ((mx * mx + my * my + c1) * (vx + vy + c2))))
    return float(np.mean(scores))
