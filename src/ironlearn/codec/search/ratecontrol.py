"""Rate control: the pyramid's quantisation step that meets a rate target, or that makes the best
trade of distortion against rate, within the encode's time.

The rate is what the range coder will spend: each grid under its best model (:func:`..bitstream.entropy.fit`).
The unit of work, by which the encode prices its phases against its deadline, is one analysis
(:func:`.analysis.analyse`) and its rate, as :class:`Clock` last timed it.
"""

from __future__ import annotations

import math
import time
from contextlib import contextmanager

import numpy as np

from ..bitstream import entropy
from ..bitstream.header import STEP_RANGE
from ..bitstream.sections import latent_models
from ..model.latents import Pyramid
from .analysis import analyse

#: Analyses of the first search for a rate target at most, and of a search that starts from a
#: step found before (after the MLP, whose weights move the target by a few per cent; a large
#: picture's, from its middle megapixel's step).  Where time runs out before any fits, one more
#: analysis takes the next guess.
RATE_ANALYSES, REFINE_ANALYSES = 14, 6
#: Rate control's first log-step (a step of 1/64), and how far under the target is close enough.
RATE_START, RATE_TOLERANCE = math.log(2.0 ** -6), 0.01
#: The farthest rate control moves the log-step before an analysis has fallen on each side of
#: the target: the rate's slope is no guide far off (a slope of -1 assumed, from a step 0.6 too
#: fine at 0.25 bpp, leapt 1.9 log-steps to where the rate was a fifth of the target).
LEAP = 1.0
#: The golden-section search for lambda's best step narrows its bracket this many times, an
#: analysis each, after the two analyses that open it; one more analyses the step it ends on.
LAMBDA_NARROWINGS = 16
LAMBDA_ANALYSES = 2 + LAMBDA_NARROWINGS
#: The encode's phases priced in analyses, so that it can tell what still fits in its time: the
#: slope of distortion against rate, the filters' fit (which stops reading the picture when its
#: time is up), the MLP's problem, and writing and checking a candidate file: each about what it
#: took at 768x512 on a busy machine and on a quiet one (the weights' rounding is now priced in the
#: MLP's steps: ``encoder.ROUNDING_STEPS``), and at 160x128, where a file's coding and checking
#: shrink less than an analysis (measured: docs/benchmark-log.md, 'Measurements the code's
#: comments quoted').  A file's is its floor: once one has been written and checked, the files
#: still to come are priced at what it took (:meth:`Clock.files`).
SLOPE_COST, FILTER_COST, MLP_OVERHEAD_COST, FINISH_COST = 3.0, 5.0, 1.0, 3.0
#: The filters' fit reads the picture for at most this share of the encode's time: on a quiet
#: machine it reads all of a 768x512 picture in less, and on a busy one (BLAS threads competing)
#: took many times as long, leaving the MLP none (measured: docs/benchmark-log.md,
#: 'compression.md as it stood before it became documentation', 'The filters, alone').
FILTER_SHARE = 0.1


class Clock:
    """The encode's deadline, and the price of its unit of work: one analysis with its rate, as
    last timed, by which the phases still to come are priced (:data:`FINISH_COST`, ...)."""

    def __init__(self, seconds: float):
        self.started = time.perf_counter()
        self.deadline = self.started + seconds
        self.analysis = 0.0
        self.file = 0.0  # seconds to write and check one file, once one has been timed

    @property
    def seconds(self) -> float:
        """The encode's whole time."""
        return self.deadline - self.started

    def left(self) -> float:
        return self.deadline - time.perf_counter()

    def affords(self, analyses: float) -> bool:
        """Whether ``analyses`` analyses' worth of work ends before the deadline."""
        return self.left() >= analyses * self.analysis

    def files(self, count: int) -> float:
        """``count`` files written and checked, in analyses: each at :data:`FINISH_COST`, or what
        one took where more (a file under a learned context model also pays for its choice of
        grids and its wavefront coding and decoding: 1.3 to 3.8 s from 0.27 to 0.87 MP, many times
        three analyses; measured: docs/compression.md, 'How an encode spends its `--seconds`')."""
        return count * max(FINISH_COST, self.file / self.analysis if self.analysis > 0 else 0.0)

    @contextmanager
    def timing(self):
        """Time one analysis and its rate, the block inside."""
        started = time.perf_counter()
        yield
        self.analysis = time.perf_counter() - started


def latent_bits(pyramid: Pyramid) -> float:
    """What the latents cost, as the file codes them."""
    return sum(found[1] for found in latent_models(pyramid).values() if found is not None)


def distortion(picture, pyramid, band_pixels: int = 1 << 18) -> float:
    """The pyramid's mean squared error (decorrelated colours, [0, 1] units: as in RGB), summed a
    band of about ``band_pixels`` at a time: the whole picture's features are its levels times
    its channels floats a pixel, 1.4 GB at 16.8 MP."""
    height, width = pyramid.height, pyramid.width
    rows, total = max(1, band_pixels // width), 0.0
    for top in range(0, height, rows):
        band = slice(top, top + rows)
        rendered = pyramid.summed(pyramid.features(height, width, rows=band))
        total += float(np.sum(np.square(rendered - picture[band].reshape(rendered.shape)), dtype=np.float64))
    return total / picture.size


class _Search:
    """Where rate control analyses next, on the log-step against the log of the bits it costs
    (which fall as the step grows, near a line).  Until an analysis on each side of the target,
    the secant through the last two (a slope of -1 assumed after the first, and where the two
    rise); then regula falsi between the coarsest step over the target and the finest under it,
    the Illinois way: an end kept twice in a row counts half as far from the target, so that the
    other end moves too.  The secant alone swung from side to side and, started on the coarse
    side, landed far under in six analyses (10-90%; measured: docs/compression.md, 'The codec')."""

    def __init__(self, target: float):
        self.target = target
        self.tried = []  # (log-step, log-bits less the target)
        self.over = self.under = None  # the bracket's ends, as tried (their distances, Illinois-weighted)
        self.moved = None  # the end the last analysis replaced

    def add(self, step: float, log_bits: float) -> None:
        """The analysis at ``step`` cost ``log_bits``: the bracket narrows."""
        gap = log_bits - self.target
        self.tried.append((step, gap))
        side = "over" if gap > 0 else "under"
        other = "under" if side == "over" else "over"
        if self.moved == side and getattr(self, other) is not None:  # Illinois: the other end kept twice
            kept = getattr(self, other)
            setattr(self, other, (kept[0], kept[1] / 2))
        setattr(self, side, (step, gap))
        self.moved = side

    def next(self) -> float | None:
        """The next log-step to analyse, within :data:`STEP_RANGE`; None where it is one already
        tried (a range's edge on the wrong side, or a bracket too narrow to split)."""
        if self.over is not None and self.under is not None:
            (x0, g0), (x1, g1) = self.over, self.under
            step = x0 + g0 * (x1 - x0) / (g0 - g1)
        else:
            (x0, g0), (x1, g1) = self.tried[-2] if len(self.tried) > 1 else (None, None), self.tried[-1]
            slope = (g1 - g0) / (x1 - x0) if x0 is not None and x0 != x1 else 0.0
            step = x1 + min(max(-g1 / (slope if slope < 0 else -1.0), -LEAP), LEAP)
        step = min(max(step, math.log(STEP_RANGE[0])), math.log(STEP_RANGE[1]))
        return None if any(abs(step - x) < 1e-6 for x, _ in self.tried) else step


def analyse_at_rate(picture, levels, bits, clock: Clock, reserve: float = 0.0, around: float | None = None,
                    progress=None) -> Pyramid:
    """The pyramid with the finest step whose latents fit in ``bits``, searched on the log-step
    over :data:`STEP_RANGE` from :data:`RATE_START` (or from ``around``) by :class:`_Search` in at
    most :data:`RATE_ANALYSES` analyses (:data:`REFINE_ANALYSES` from ``around``); done within
    :data:`RATE_TOLERANCE` under the target.  It stops early where one more analysis and
    ``reserve`` more would pass the ``clock``'s deadline."""
    analyses = RATE_ANALYSES if around is None else REFINE_ANALYSES
    # Aimed at the middle of the band it accepts: aimed at its edge, steps a hair over the
    # target kept the bracket's other end (a 256x320 picture's search ended at 0.87 of it).
    search = _Search(math.log(max((1 - RATE_TOLERANCE / 2) * bits, 1.0)))
    fits = None  # the finest pyramid that fits: each that fits is finer than the last
    step = around if around is not None else RATE_START
    for done in range(1, analyses + 1):
        if done > 1 and not clock.affords(1 + reserve):
            break
        with clock.timing():
            pyramid = analyse(picture, math.exp(step), levels)
            spent = latent_bits(pyramid)
        if progress is not None:
            progress("rate control", done, analyses, None)
        if spent <= bits:
            fits = pyramid
            if spent >= (1 - RATE_TOLERANCE) * bits:
                break
        pyramid = None  # not held through the next analysis: at 16.8 MP a pyramid is 270 MB
        search.add(step, math.log(max(spent, 1.0)))
        step = search.next()
        if step is None:
            break
    if fits is not None:
        return fits
    # Time is up, or the coarsest step is over the target: the next guess, or that step.
    return analyse(picture, math.exp(step if step is not None else search.over[0]), levels)


def trade(mse: float, rate: float, lmbda: float) -> float:
    """What lambda's rule minimises: ``mse + lmbda * rate`` (``rate`` in bits a pixel), divided
    by ``lmbda`` where it is above 1.  The quotient ranks the same, and stays finite however
    large ``lmbda`` is: 1e308 times 2 bits a pixel is inf, and infinities tie whatever the
    rates."""
    if lmbda <= 1:
        return mse + lmbda * rate
    return mse / lmbda + rate


def analyse_at_lambda(picture, levels, lmbda, clock: Clock, reserve: float = 0.0, progress=None) -> Pyramid:
    """The pyramid whose step minimises ``distortion + lmbda * bits per pixel`` (:func:`trade`):
    golden-section search on the log-step in :data:`LAMBDA_ANALYSES` analyses, stopped early where
    one more analysis (two, with the last) and ``reserve`` more would pass the ``clock``'s
    deadline."""
    pixels = picture.shape[0] * picture.shape[1]
    done = [0]

    def cost(log_step):
        with clock.timing():
            pyramid = analyse(picture, math.exp(log_step), levels)
            value = trade(distortion(picture, pyramid), latent_bits(pyramid) / pixels, lmbda)
        done[0] += 1
        if progress is not None:
            progress("rate-distortion search", done[0], LAMBDA_ANALYSES, None)
        return value

    log_step = entropy.golden_section(cost, math.log(STEP_RANGE[0]), math.log(STEP_RANGE[1]),
                                      iterations=LAMBDA_NARROWINGS, keep_going=lambda: clock.affords(2 + reserve))
    return analyse(picture, math.exp(float(log_step)), levels)


def slope(picture, levels, pyramid) -> float:
    """Lambda at the pyramid's rate: how much distortion a bit per pixel buys there (measured
    between the step and one a sixth finer), for the weights' rate-distortion search."""
    pixels = picture.shape[0] * picture.shape[1]
    pyramid = pyramid.unfiltered()
    finer = analyse(picture, float(pyramid.steps[0, 0]) * 0.85, levels)
    d_rate = (latent_bits(finer) - latent_bits(pyramid)) / pixels
    d_distortion = distortion(picture, pyramid) - distortion(picture, finer)
    return max(d_distortion / d_rate, 1e-9) if d_rate > 0 else 1e-9
