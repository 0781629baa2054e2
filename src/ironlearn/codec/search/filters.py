"""The finest levels' filters as the encoder finds them: the normal equations of their least
squares against the picture (:func:`least_squares`), read within a deadline, then each level's
rounded by the rate-distortion trade, or none where it does not pay (:func:`fit_filters`)."""

from __future__ import annotations

import time

import numpy as np

from ..bitstream.entropy import laplace_size
from ..bitstream.header import STEP_EXPONENTS
from ..model.filters import pad, pad_rows, pairs
from ..model.latents import Pyramid, taps, upsample
from ..shapes import FILTER_LEVELS, FILTER_OFFSETS
from ..quantise import weight_code
from .analysis import spread

#: Pixels at most that :func:`least_squares` reads, and about how many a band of its rows holds
#: (small bands: any first few of them, as a deadline may leave, are spread over the picture).
FILTER_FIT_PIXELS, FILTER_BAND_PIXELS = 1 << 19, 1 << 13
#: Bands that :func:`least_squares` reads whatever its deadline says: the first two (ten rows each
#: at 768x512) gave filters worse than none for four of eight files (sporco's four, two rates);
#: the first three or five, better than none for all eight (measured: docs/benchmark-log.md,
#: 'compression.md as it stood before it became documentation', 'The filters, alone').
FILTER_MIN_BANDS = 4
#: A grid is filtered only where the rows read hold all its non-zero latents or at least this
#: many: fewer, of more, leave its 13 taps free to take values that the rows not read pay for (a
#: grid with few of its latents read took an extreme tap and cost its picture dearly; measured:
#: docs/benchmark-log.md, 'compression.md as it stood before it became documentation', 'The filters, alone').
FILTER_MIN_LATENTS = 64

def least_squares(picture: np.ndarray, pyramid: Pyramid, until: float | None = None) -> dict:
    """The least-squares filters of the finest :data:`FILTER_LEVELS` levels for ``picture``
    (``(H, W, C)``, decorrelated colours), with the pyramid's own filters off: for each channel,
    ``(gram, moment, count)`` of the normal equations (``gram`` and ``moment`` over the taps of
    every filtered level, level-major), whose solution ``solve(gram, moment)`` are the
    corrections.  Read on at most :data:`FILTER_FIT_PIXELS` pixels, in bands spread over the
    picture, taken in an order whose every prefix is spread too (:func:`spread`) and, past the
    ``time.perf_counter()`` value ``until`` (when given), no more of them after the first
    :data:`FILTER_MIN_BANDS`.  The taps of a grid with under :data:`FILTER_MIN_LATENTS` of its
    non-zero latents in the rows read, and not all of them, are left out (zero in ``gram`` and
    ``moment``: its corrections solve to zero)."""
    height, width, channels = picture.shape
    levels = [k for k in range(min(FILTER_LEVELS, pyramid.levels)) if np.any(pyramid.latents[k])]
    if not levels:
        return {"levels": [], "gram": None, "moment": None, "count": 0}
    plain = pyramid.unfiltered()
    # Level 0 is read a band of rows at a time (whole, its values and their padded copy took
    # hundreds of megabytes at 16.8 MP); the coarser levels are a quarter of its size and less.
    values = [None] + [plain.values(k) for k in range(1, plain.levels)]
    padded = {k: pad(values[k]) for k in levels if k > 0}
    band = max(1, FILTER_BAND_PIXELS // width)
    starts = range(0, height, band)
    if len(starts) * band * width > FILTER_FIT_PIXELS:  # spread the bands over the picture
        keep = max(1, FILTER_FIT_PIXELS // (band * width))
        starts = [starts[i] for i in np.linspace(0, len(starts) - 1, keep).round().astype(int)]
    n_taps = len(FILTER_OFFSETS)
    gram = np.zeros((channels, n_taps * len(levels), n_taps * len(levels)))
    moment = np.zeros((channels, n_taps * len(levels)))
    seen = {k: np.zeros(pyramid.latents[k].shape[1], bool) for k in levels}  # the grid rows read
    count = 0
    for read_so_far, top in enumerate(np.asarray(starts)[spread(len(starts))]):
        if read_so_far >= FILTER_MIN_BANDS and until is not None and time.perf_counter() > until:
            break
        rows = slice(top, min(top + band, height))
        error = picture[rows].reshape(-1, channels) - plain.summed(plain.features(height, width, rows, None, values))
        columns = []
        for k in levels:
            if k == 0:
                read = pairs(pad_rows(plain, 0, rows.start, rows.stop), 0, rows.stop - rows.start)
                seen[k][rows] = True
            else:  # the grid rows that the band's rows read, then upsampled
                index_y, weight_y = (along[rows] for along in taps(height, height, k, None, pyramid.cubic))
                first, last = int(index_y.min()), int(index_y.max()) + 1
                slab = pairs(padded[k], first, last).reshape(n_taps * channels, last - first, -1)
                read = upsample(slab, (index_y - first, weight_y), taps(width, width, k, None, pyramid.cubic))
                seen[k][first:last] = True
            columns.append(read.reshape(n_taps, channels, -1))
        # (C, levels * taps, pixels): products by BLAS, where einsum's own loops took many times as long
        design = np.ascontiguousarray(np.concatenate(columns).astype(np.float64).transpose(1, 0, 2))
        gram += design @ design.transpose(0, 2, 1)
        moment += (design @ error.T[:, :, None])[..., 0]
        count += error.shape[0]
    for i, k in enumerate(levels):
        for c in range(channels):
            read = np.count_nonzero(pyramid.latents[k][c][seen[k]])
            if read < FILTER_MIN_LATENTS and read < np.count_nonzero(pyramid.latents[k][c]):
                part = slice(i * n_taps, (i + 1) * n_taps)
                gram[c, part, :] = gram[c, :, part] = moment[c, part] = 0
    return {"levels": levels, "gram": gram, "moment": moment, "count": count}


def fit_filters(picture, pyramid: Pyramid, lam: float, until: float | None = None) -> None:
    """Give the pyramid's finest levels the filters that :func:`least_squares` finds
    (reading the picture until ``until``), each level's rounded to the step ``2**e`` that
    minimises distortion + ``lam`` * rate (the others held at their least-squares values); a
    level whose filter does not pay for its bits gets none."""
    fit = least_squares(picture, pyramid, until)
    levels, gram, moment = fit["levels"], fit["gram"], fit["moment"]
    if not levels:
        return
    channels, taps = pyramid.channels, len(FILTER_OFFSETS)
    # (C, levels * taps); a pseudo-inverse, since a channel may be all zeros (gray in colour)
    chosen = (np.linalg.pinv(gram, rcond=1e-10, hermitian=True) @ moment[..., None])[..., 0]
    norm = fit["count"] * channels
    pixels = pyramid.height * pyramid.width

    def distortion(corrections):  # the change in mean squared error that they make
        return float(np.einsum("ci,cij,cj->", corrections, gram, corrections)
                     - 2 * np.einsum("ci,ci->", corrections, moment)) / norm

    for i, k in enumerate(levels):
        part = slice(i * taps, (i + 1) * taps)
        trial = chosen.copy()
        trial[:, part] = 0
        best = (distortion(trial), np.zeros((channels, taps)), None)
        for exponent in STEP_EXPONENTS:
            q, log_scale = weight_code(chosen[:, part], exponent)
            if not q.any():
                continue
            trial[:, part] = q * 2.0 ** exponent
            cost = distortion(trial) + lam * laplace_size(q, log_scale) / pixels
            if cost < best[0]:
                best = (cost, trial[:, part].copy(), (q, exponent))
        chosen[:, part] = best[1]
        pyramid.filters[k] = best[2]
