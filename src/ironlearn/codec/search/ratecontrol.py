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

#: Analyses of the first search for a rate target at most; after the MLP, rate control searches
#: again only this far either side of the first search's log-step, in at most this many analyses
#: (the weights move the target by a few per cent).  Where time runs out before any fits, one more
#: analysis takes the next guess.
RATE_ANALYSES, REFINE_SPAN, REFINE_ANALYSES = 14, 0.5, 6
#: Rate control's first log-step (a step of 1/64), and how far under the target is close enough.
RATE_START, RATE_TOLERANCE = math.log(2.0 ** -6), 0.01
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
#: comments quoted').
SLOPE_COST, FILTER_COST, MLP_OVERHEAD_COST, FINISH_COST = 3.0, 5.0, 1.0, 3.0
#: The filters' fit reads the picture for at most this share of the encode's time: on a quiet
#: machine it reads all of a 768x512 picture in less, and on a busy one (BLAS threads competing)
#: took many times as long, leaving the MLP none (measured: docs/compression.md, 'The filters,
#: alone').
FILTER_SHARE = 0.1


class Clock:
    """The encode's deadline, and the price of its unit of work: one analysis with its rate, as
    last timed, by which the phases still to come are priced (:data:`FINISH_COST`, ...)."""

    def __init__(self, seconds: float):
        self.started = time.perf_counter()
        self.deadline = self.started + seconds
        self.analysis = 0.0

    @property
    def seconds(self) -> float:
        """The encode's whole time."""
        return self.deadline - self.started

    def left(self) -> float:
        return self.deadline - time.perf_counter()

    def affords(self, analyses: float) -> bool:
        """Whether ``analyses`` analyses' worth of work ends before the deadline."""
        return self.left() >= analyses * self.analysis

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


def _secant(tried, target) -> float | None:
    """The secant method's next log-step on log-bits through the last two ``tried`` (a slope of
    -1 assumed after the first); None where the two are level."""
    (x0, y0), (x1, y1) = tried[-2] if len(tried) > 1 else (tried[-1][0] - 1, tried[-1][1] + 1), tried[-1]
    return x1 + (y1 - target) * (x1 - x0) / (y0 - y1) if y0 != y1 else None


def _next_step(tried, target, low, high) -> float:
    """:func:`_secant`'s step, or the bracket's middle where that leaves ``[low, high]`` (or all
    but its edges)."""
    step = _secant(tried, target)
    if step is None or not low + 0.01 * (high - low) <= step <= high - 0.01 * (high - low):
        step = (low + high) / 2
    return step


def _widened(tried, target, low, high, loose) -> tuple:
    """``(low, high)``, an edge of the span around a step that no analysis has crossed yet
    (``loose``: which are) moved past the secant's step where it lies beyond, within
    :data:`STEP_RANGE`.  A large picture's search starts from its middle megapixel's step, and
    where the middle is smoother or busier than the rest the step that meets the rate lay
    outside the span: the file landed at the span's edge, 8% over the rate (or under it)."""
    step = _secant(tried, target)
    if step is not None and loose[0] and step < low + 0.01 * (high - low):
        low = max(math.log(STEP_RANGE[0]), step - 0.1 * REFINE_SPAN)
    if step is not None and loose[1] and step > high - 0.01 * (high - low):
        high = min(math.log(STEP_RANGE[1]), step + 0.1 * REFINE_SPAN)
    return low, high


def analyse_at_rate(picture, levels, bits, clock: Clock, reserve: float = 0.0, around: float | None = None,
                    progress=None) -> Pyramid:
    """The pyramid with the finest step whose latents fit in ``bits``, searched on the log-step
    over :data:`STEP_RANGE` (or :data:`REFINE_SPAN` either side of ``around``, widened where the
    secant leads past an edge: :func:`_widened`) by the secant method (:func:`_next_step`) in at most :data:`RATE_ANALYSES` analyses (:data:`REFINE_ANALYSES`
    around a step); done within :data:`RATE_TOLERANCE` under the target.  It stops early where one
    more analysis and ``reserve`` more would pass the ``clock``'s deadline."""
    low, high, analyses = math.log(STEP_RANGE[0]), math.log(STEP_RANGE[1]), RATE_ANALYSES
    if around is not None:
        low, high, analyses = max(low, around - REFINE_SPAN), min(high, around + REFINE_SPAN), REFINE_ANALYSES
    target = math.log(max(bits, 1.0))
    tried = []  # (log-step, log-bits)
    fits = None  # the pyramid at high, once one has fitted; low: too many bits
    loose = [around is not None] * 2  # a span's edges, until an analysis crosses them: guesses
    step = around if around is not None else RATE_START
    for done in range(1, analyses + 1):
        if done > 1 and not clock.affords(1 + reserve):
            break
        with clock.timing():
            pyramid = analyse(picture, math.exp(step), levels)
            spent = latent_bits(pyramid)
        if progress is not None:
            progress("rate control", done, analyses, None)
        if spent > bits:
            low, loose[0] = step, False
        else:
            high, fits, loose[1] = step, pyramid, False
            if spent >= (1 - RATE_TOLERANCE) * bits:
                break
        pyramid = None  # not held through the next analysis: at 16.8 MP a pyramid is 270 MB
        tried.append((step, math.log(max(spent, 1.0))))
        low, high = _widened(tried, target, low, high, loose)
        step = _next_step(tried, target, low, high)
    if fits is not None:
        return fits
    return analyse(picture, math.exp(high if step <= low else step), levels)  # time is up: the next guess


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
