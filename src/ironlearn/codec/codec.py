"""Encode a picture as a small file that decodes at any size, and decode it.

The encoder works in three steps (the design and why are in ``docs/compression.md``):

1. **Analysis.** The picture, in decorrelated colours, becomes a Laplacian pyramid of integer
   latents (:func:`.pyramid.analyse`), at the quantisation step whose rate meets the target
   (``bpp``: bisection on the step) or minimises ``distortion + lambda * rate`` (``lmbda``).
   The rate is what the range coder will spend: each grid under its best quantised Laplace.
   Then each of the finest levels gets the small symmetric filter, applied to its grid before
   upsampling, that least squares finds against the picture (:func:`.pyramid.fit_filters`),
   rounded by the same rate-distortion trade as the weights below, or none where it does not pay.
2. **Synthesis.** With the time left, a small MLP learns to correct the pyramid's picture from
   the upsampled latents (Adam on the mean squared error).  Its weights are rounded to a step
   ``2**e`` a tensor, chosen by the same rate-distortion trade; it is kept only if the picture
   it adds is worth its bits, the latents then re-analysed for the rate it leaves.
3. **Coding.** Latents and weights are range-coded by ``constriction`` under quantised Laplace
   models: a latent's scale is predicted from its decoded neighbours (:mod:`.entropy`), a
   weight's is one a tensor.  The file format is in ``docs/compression.md``.
"""

from __future__ import annotations

import math
import time
from contextlib import contextmanager
from dataclasses import dataclass

import numpy as np

from ..fitting.options import LIMITS as FIT_LIMITS
from ..image.metrics import psnr_from_mse
from ..image.render import render_size
from ..optim import Adam
from ..optim.schedules import warmup_cosine
from . import container, entropy
from .container import CodecError
from .entropy import laplace_bits
from .pyramid import (COLOURS, CUBIC, CUBIC_BEFORE_5, FILTER_LEVELS, FILTER_OFFSETS, MAX_LEVELS, Pyramid, analyse,
                      fit_filters, level_shape, prepare_analysis, synthesis)

#: The synthesis MLP: hidden width and layers, and Adam's peak learning rate.
WIDTH, DEPTH, NETWORK_LR = 16, 2, 1e-2
#: Pixels a step of the MLP's training reads, drawn at random.  Against every pixel each step,
#: the MLP's gain on the pyramid's error in 15 s, before its weights are rounded (kodim23,
#: monarch, sail, tulips and astronaut at 0.5 bpp): +0.01 to +0.57 dB in 80-290 steps for all of
#: them, +0.25 to +1.31 dB in 2,700-4,100 steps for 2**13 (2**12 and 2**14 about the same; 2**16
#: +0.18 to +1.08; a learning rate of 2e-2 no better).
MLP_BATCH = 1 << 13
#: The MLP reads the upsampled latents times this: they are small (a fraction of the picture's
#: range), and the MLP's initialisation expects inputs of about 1.
FEATURE_GAIN = 10.0
#: Where rate control searches the quantisation step (of the coarsest level, in [0, 1] units).
STEP_RANGE = (2.0 ** -12, 4.0)
#: Analyses of rate control at most; after the MLP, rate control searches again only this far
#: either side of the first search's log-step, in at most this many (the weights move the target
#: by a few per cent).
RATE_ITERATIONS, REFINE_SPAN, REFINE_ITERATIONS = 14, 0.5, 6
#: Rate control's first log-step (a step of 1/64), and how far under the target is close enough.
RATE_START, RATE_TOLERANCE = math.log(2.0 ** -6), 0.01
#: The encode's phases priced in analyses (one :func:`.pyramid.analyse` and its rate, as timed
#: during rate control), so that it can tell what still fits in its time: the slope of distortion
#: against rate, the filters' fit, the MLP's problem and its weights' rounding together, and
#: writing and checking a candidate file.  Measured at 768x512 on a busy machine: 3, 5 to 12
#: (the filters' fit then stops reading the picture when its time is up), 2.5 and 1.4.
SLOPE_COST, FILTER_COST, MLP_OVERHEAD_COST, FINISH_COST = 3.0, 5.0, 3.0, 2.0
#: The longest encode ``seconds`` may ask for: ``fit --time-budget``'s cap.
MAX_SECONDS = FIT_LIMITS["time_budget"]
#: Pictures the decoder accepts: sides and pixels (bounds every allocation a header can ask for).
MAX_SIDE, MAX_PIXELS = 1 << 15, 1 << 26
#: The rate target without one given, and the largest (8-bit colour is 24 bits a pixel).
DEFAULT_BPP, MAX_BPP = 0.5, 24
#: Largest latent or weight magnitude a file may hold.
MAX_SYMBOL = 1 << 15
#: Log-scales of the Laplace models, and the exponents of the weights' steps.
LOG_SCALE_RANGE = entropy.LOG_SCALE_RANGE
STEP_EXPONENTS = range(-14, 1)
MODES = {1: "gray", 3: "rgb"}
#: Output pixels a render computes at once (bounds its memory at any size).
BAND_PIXELS = 1 << 18
#: The synthesis MLP's multiply-adds a pixel that a decoder accepts (its weights, counted from
#: the header before anything is built): ``compress`` writes 640 (WIDTH 16, DEPTH 2, 21 inputs),
#: Cool-chic's networks take about 2,000, and a header's 8 layers of 256 would take 464,000.
MAX_MLP_MACS = 2048
#: constriction's range coder: every symbol of a model keeps a probability of at least
#: ``2**-CODER_PRECISION``, and a decoder holds ``CODER_STATE_BITS`` bits beyond the words it read.
CODER_PRECISION, CODER_STATE_BITS = 24, 64


@dataclass(frozen=True)
class Compressed:
    """What :func:`compress_array` made and measured.

    Attributes
    ----------
    data : bytes
        The whole file.
    bpp : float
        Its bits per pixel, every byte counted.
    psnr : float
        The decoded picture against the original at its own size, in dB (8-bit pixels).
    seconds : float
        The encode's time.
    steps : int
        The MLP's training steps (0 when the file holds none).
    """

    data: bytes
    bpp: float
    psnr: float
    seconds: float
    steps: int


def _as_unit(values) -> np.ndarray:
    values = np.asarray(values)
    if values.ndim == 2:
        values = values[:, :, None]
    if values.ndim != 3 or values.shape[2] not in MODES:
        raise ValueError(f"need a picture (H, W), (H, W, 1) or (H, W, 3) (got shape {values.shape})")
    if values.dtype == np.uint8:
        return values.astype(np.float32) / 255
    return np.clip(values, 0, 1).astype(np.float32)


class _Clock:
    """The encode's deadline, and the price of its unit of work: one analysis with its rate, as
    last timed, by which the phases still to come are priced (:data:`FINISH_COST`, ...)."""

    def __init__(self, seconds: float):
        self.started = time.perf_counter()
        self.deadline = self.started + seconds
        self.analysis = 0.0

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


def compress_array(values, *, bpp: float | None = None, lmbda: float | None = None, seconds: float = 30.0,
                   levels: int = MAX_LEVELS, seed: int = 0, progress=None) -> Compressed:
    """Compress a picture: ``values`` ``(H, W)`` or ``(H, W, C)``, ``C`` 1 or 3, uint8 or floats
    in [0, 1].

    Give a rate target ``bpp`` (bits per pixel of the whole file) or a rate-distortion weight
    ``lmbda`` (distortion in [0, 1] units plus ``lmbda`` times bits per pixel; higher: smaller
    files), not both; neither means ``bpp=0.5``.  ``seconds`` (at most :data:`MAX_SECONDS`)
    bounds the whole encode, wall clock: rate control stops bisecting, and the filters and the
    MLP are left out, where they would not fit in it; only the first analysis and one file
    written and checked are done whatever it says.  ``progress``, if given, is called as
    ``progress(what, done, total, psnr)``: after each analysis of rate control (``psnr`` None),
    and about every second while the MLP trains.
    """
    if bpp is not None and lmbda is not None:
        raise ValueError("give a rate target (bpp) or a rate-distortion weight (lmbda), not both")
    if bpp is None and lmbda is None:
        bpp = DEFAULT_BPP
    if bpp is not None and not 0 < bpp <= MAX_BPP:
        raise ValueError(f"bpp must lie in (0, {MAX_BPP}] (got {bpp})")
    if lmbda is not None and not lmbda > 0:
        raise ValueError(f"lmbda must be above 0 (got {lmbda})")
    if not 0 < seconds <= MAX_SECONDS:
        raise ValueError(f"seconds must lie in (0, {MAX_SECONDS}], 30 days (got {seconds})")
    clock = _Clock(seconds)
    target = _as_unit(values)
    height, width, channels = target.shape
    if max(height, width) > MAX_SIDE or height * width > MAX_PIXELS:
        raise ValueError(f"pictures up to {MAX_SIDE} pixels a side and {MAX_PIXELS} pixels compress "
                         f"(got {width}x{height})")
    levels = max(1, min(levels, MAX_LEVELS))
    picture = target @ COLOURS[channels].T  # decorrelated colours
    pixels = height * width
    filter_levels = min(levels, FILTER_LEVELS)
    # The container, the header, the coder's last words; and about 5 bits a filter tap.
    header_bits = 8 * (64 + 11 * levels * channels + 7 * filter_levels)
    filter_bits = 5 * filter_levels * channels * len(FILTER_OFFSETS)
    # What follows rate control: the filters (with the slope they trade at) and two files checked.
    after_rate = SLOPE_COST + FILTER_COST + 2 * FINISH_COST

    def pyramid_for(bits_left, around=None):
        """The pyramid at the rate ``bits_left`` (a target; searched ``around`` a log-step when
        given) or at lambda's best trade, its filters fitted if they fit in the time, and lambda
        there (what the filters and the weights trade bits at; None without the filters)."""
        # Rate control keeps time for one file checked: the filters are left out first.
        if bpp is not None:
            pyramid = _analyse_at_rate(picture, levels, bits_left - filter_bits, clock, FINISH_COST, around, progress)
        else:
            pyramid = _analyse_at_lambda(picture, levels, lmbda, clock, FINISH_COST, progress)
        if not clock.affords(after_rate):
            return pyramid, lmbda
        lam = lmbda if lmbda is not None else _slope(picture, levels, pyramid)
        _fit_filters(picture, pyramid, lam, until=clock.deadline - (2 * FINISH_COST + 1) * clock.analysis)
        return pyramid, lam

    prepare_analysis(height, width, levels)
    plain, lam = pyramid_for(bpp * pixels - header_bits if bpp is not None else None)
    candidates = [(plain.unfiltered(), None, 0), (plain, None, 0)]  # the first: a fallback
    # The MLP's part: rate control again around the first's step (with a target), the MLP's
    # problem and its weights' rounding, rate control once more, and two more files checked.
    refit = REFINE_ITERATIONS + after_rate - 2 * FINISH_COST if bpp is not None else 0
    if pixels >= 64 and lam is not None and clock.affords(2 * refit + MLP_OVERHEAD_COST + 4 * FINISH_COST):
        pyramid = plain  # lambda's best step does not depend on the MLP
        around = math.log(float(plain.steps[0, 0]))
        if bpp is not None:  # the latents leave room for the MLP's bits (about a byte a weight)
            net_bits = 8 * WIDTH * (levels * channels + WIDTH * (DEPTH - 1) + channels)
            pyramid, lam = pyramid_for(bpp * pixels - header_bits - net_bits, around)
        inputs, residual = _mlp_problem(pyramid, picture)
        training = clock.left() - (refit + MLP_OVERHEAD_COST + 4 * FINISH_COST) * clock.analysis
        if lam is not None and training > 0:
            net, steps = _train(inputs, residual, training, seed, progress)
            weights = _quantise_weights(net, inputs, residual, lam)
            candidates.append((pyramid, (net, weights), steps))
            if bpp is not None:  # the weights took other than the bits set aside: the latents take the rest
                spent_on_weights = sum(_laplace_size(q, log_scale) for q, _, log_scale in weights)
                if spent_on_weights > net_bits or net_bits - spent_on_weights > 0.01 * bpp * pixels:
                    refitted, _ = pyramid_for(bpp * pixels - header_bits - spent_on_weights, around)
                    candidates.append((refitted, (net, weights), steps))
    best = None
    for pyramid, network, steps in reversed(candidates):  # the most refined first, while time is left
        if best is not None and not clock.affords(FINISH_COST):
            break
        data = _write(pyramid, network)
        decoded = np.round(read(data).render() * 255)
        mse = float(np.mean((decoded / 255 - np.round(target * 255) / 255) ** 2))
        rate = 8 * len(data) / pixels
        cost = _cost(rate, mse, bpp, lmbda)
        if best is None or cost < best[0]:
            best = (cost, Compressed(data, rate, psnr_from_mse(mse), 0.0, steps))
    result = best[1]
    return Compressed(result.data, result.bpp, result.psnr, time.perf_counter() - clock.started, result.steps)


def _cost(rate: float, mse: float, bpp: float | None, lmbda: float | None) -> tuple:
    """How a file of ``rate`` bits a pixel and error ``mse`` ranks, the least first: with a target
    ``bpp``, the best file within it, else (when none is) the smallest; with ``lmbda``, the best
    trade.  (Over-target files used to rank by error too: a target no file met got the largest.)"""
    if bpp is not None:
        return (rate > bpp, max(rate - bpp, 0.0), mse)
    return (mse + lmbda * rate,)


def encode(values, *, bpp: float | None = None, lmbda: float | None = None, seconds: float = 30.0,
           seed: int = 0) -> bytes:
    """The bytes of :func:`compress_array`'s file."""
    return compress_array(values, bpp=bpp, lmbda=lmbda, seconds=seconds, seed=seed).data


# -- analysis and rate control ---------------------------------------------------------------------
def _grids(pyramid: Pyramid):
    """``(level, channel, grid, its parent)`` for every grid, coarsest level first (the order
    the decoder needs: a grid's model reads its parent, the coarser level's grid)."""
    for k in reversed(range(pyramid.levels)):
        for c in range(pyramid.channels):
            parent = pyramid.latents[k + 1][c] if k + 1 < pyramid.levels else None
            yield k, c, pyramid.latents[k][c], parent


def _latent_models(pyramid: Pyramid) -> dict:
    """``{(level, channel): (entropy.Model, bits)}``: each grid's best model and what the grid
    costs under it (the range coder spends within 0.1% of this, plus a few words a section);
    None for a grid of zeros, which costs nothing."""
    return {(k, c): entropy.fit(q, parent) if np.any(q) else None for k, c, q, parent in _grids(pyramid)}


def _latent_bits(pyramid: Pyramid) -> float:
    """What the latents cost, as the file codes them."""
    return sum(found[1] for found in _latent_models(pyramid).values() if found is not None)


def _distortion(picture, pyramid) -> float:
    """The pyramid's mean squared error (decorrelated colours, [0, 1] units: as in RGB)."""
    rendered = pyramid.summed(pyramid.features(pyramid.height, pyramid.width))
    return float(np.mean((rendered - picture.reshape(rendered.shape)) ** 2))


def _analyse_at_rate(picture, levels, bits, clock: _Clock, reserve: float = 0.0, around: float | None = None,
                     progress=None) -> Pyramid:
    """The pyramid with the finest step whose latents fit in ``bits``, searched on the log-step
    over :data:`STEP_RANGE` (or :data:`REFINE_SPAN` either side of ``around``) by the secant
    method on log-bits through the last two steps tried (a slope of -1 assumed after the first),
    bisecting instead when that leaves the bracket the steps tried make (or all but its edges); done
    within :data:`RATE_TOLERANCE` under the target.  It stops early where one more analysis and
    ``reserve`` more would pass the ``clock``'s deadline."""
    low, high, iterations = math.log(STEP_RANGE[0]), math.log(STEP_RANGE[1]), RATE_ITERATIONS
    if around is not None:
        low, high, iterations = max(low, around - REFINE_SPAN), min(high, around + REFINE_SPAN), REFINE_ITERATIONS
    target = math.log(max(bits, 1.0))
    tried = []  # (log-step, log-bits)
    fits = None  # the pyramid at high, once one has fitted; low: too many bits
    step = around if around is not None else RATE_START
    for done in range(1, iterations + 1):
        if done > 1 and not clock.affords(1 + reserve):
            break
        with clock.timing():
            pyramid = analyse(picture, math.exp(step), levels)
            spent = _latent_bits(pyramid)
        if progress is not None:
            progress("rate control", done, iterations, None)
        if spent > bits:
            low = step
        else:
            high, fits = step, pyramid
            if spent >= (1 - RATE_TOLERANCE) * bits:
                break
        tried.append((step, math.log(max(spent, 1.0))))
        (x0, y0), (x1, y1) = tried[-2] if len(tried) > 1 else (step - 1, tried[-1][1] + 1), tried[-1]
        step = x1 + (y1 - target) * (x1 - x0) / (y0 - y1) if y0 != y1 else (low + high) / 2
        if not low + 0.01 * (high - low) <= step <= high - 0.01 * (high - low):
            step = (low + high) / 2
    if fits is not None:
        return fits
    return analyse(picture, math.exp(high if step <= low else step), levels)  # time is up: the next guess


def _analyse_at_lambda(picture, levels, lmbda, clock: _Clock, reserve: float = 0.0, progress=None) -> Pyramid:
    """The pyramid whose step minimises ``distortion + lmbda * bits per pixel``: golden-section
    search on the log-step, stopped early where one more analysis (two, with the last) and
    ``reserve`` more would pass the ``clock``'s deadline."""
    pixels = picture.shape[0] * picture.shape[1]
    done = [0]

    def cost(log_step):
        with clock.timing():
            pyramid = analyse(picture, math.exp(log_step), levels)
            value = _distortion(picture, pyramid) + lmbda * _latent_bits(pyramid) / pixels
        done[0] += 1
        if progress is not None:
            progress("rate-distortion search", done[0], 18, None)
        return value

    log_step = entropy.golden_section(cost, math.log(STEP_RANGE[0]), math.log(STEP_RANGE[1]), iterations=16,
                                      keep_going=lambda: clock.affords(2 + reserve))
    return analyse(picture, math.exp(float(log_step)), levels)


def _fit_filters(picture, pyramid: Pyramid, lam: float, until: float | None = None) -> None:
    """Give the pyramid's finest levels the filters that :func:`.pyramid.fit_filters` finds
    (reading the picture until ``until``), each level's rounded to the step ``2**e`` that
    minimises distortion + ``lam`` * rate (the others held at their least-squares values); a
    level whose filter does not pay for its bits gets none."""
    fit = fit_filters(picture, pyramid, until)
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
            q, log_scale = _weight_code(chosen[:, part], exponent)
            if not q.any():
                continue
            trial[:, part] = q * 2.0 ** exponent
            cost = distortion(trial) + lam * _laplace_size(q, log_scale) / pixels
            if cost < best[0]:
                best = (cost, trial[:, part].copy(), (q, exponent))
        chosen[:, part] = best[1]
        pyramid.filters[k] = best[2]


def _slope(picture, levels, pyramid) -> float:
    """Lambda at the pyramid's rate: how much distortion a bit per pixel buys there (measured
    between the step and one a sixth finer), for the weights' rate-distortion search."""
    pixels = picture.shape[0] * picture.shape[1]
    pyramid = pyramid.unfiltered()
    finer = analyse(picture, float(pyramid.steps[0, 0]) * 0.85, levels)
    d_rate = (_latent_bits(finer) - _latent_bits(pyramid)) / pixels
    d_distortion = _distortion(picture, pyramid) - _distortion(picture, finer)
    return max(d_distortion / d_rate, 1e-9) if d_rate > 0 else 1e-9


# -- the synthesis MLP ------------------------------------------------------------------------------
def _mlp_problem(pyramid, picture):
    """What the MLP learns from and to: the upsampled latents at each pixel, times
    :data:`FEATURE_GAIN`, and the pyramid's error there, ``(inputs, residual)``."""
    height, width, channels = picture.shape
    features = pyramid.features(height, width)
    return features * np.float32(FEATURE_GAIN), picture.reshape(-1, channels) - pyramid.summed(features)


def _train(inputs, residual, seconds, seed, progress):
    """Train the MLP that maps ``inputs`` to ``residual`` for about ``seconds``, on
    :data:`MLP_BATCH` random pixels a step: ``(net, steps)``."""
    net = synthesis(inputs.shape[1], residual.shape[1], WIDTH, DEPTH, seed)
    params = net.named_parameters()
    rng = np.random.default_rng(seed)
    started = last_report = time.perf_counter()
    steps, step, optimizer = 10, 0, None
    while step < steps:
        step += 1
        batch = rng.integers(0, len(inputs), MLP_BATCH) if len(inputs) > MLP_BATCH else slice(None)
        error = net.forward(inputs[batch]) - residual[batch]
        net.backward(error * np.float32(2 / error.size))
        if step == 3:  # three steps timed: as many as fit the time
            steps = max(3, int((seconds - (time.perf_counter() - started)) / ((time.perf_counter() - started) / 3)))
            optimizer = Adam(params, lr=warmup_cosine(NETWORK_LR, NETWORK_LR / 100, steps))
        if optimizer is not None:
            optimizer.step(net.named_gradients())
        if progress is not None and time.perf_counter() - last_report > 1.0:
            last_report = time.perf_counter()
            progress("MLP step", step, steps, psnr_from_mse(float(np.mean(error * error))))
    return net, step


def _laplace_size(symbols, log_scale) -> float:
    return float(laplace_bits(symbols, log_scale).sum())


def _mean_log_scale(symbols) -> float:
    """The continuous Laplace's estimate of ``symbols``' log-scale: ``log mean |q|``."""
    return math.log(max(float(np.mean(np.abs(symbols))), 1e-3))


def _best_log_scale(symbols) -> float:
    """The log-scale (as the header stores it) under which ``symbols`` take the fewest bits: a
    search from :func:`_mean_log_scale`, in steps of 1/16."""
    guess = _mean_log_scale(symbols)
    candidates = [entropy.header_float(guess + d / 16) for d in range(-48, 17)]
    sample = symbols.reshape(-1)[:: max(1, symbols.size // 20000)]  # a fixed subsample: the search is cheap
    return min(candidates, key=lambda s: _laplace_size(sample, s))


def _weight_code(weight, exponent):
    """A tensor rounded to steps of ``2**exponent``: its integers and their model's log-scale."""
    q = np.clip(np.round(weight / 2.0 ** exponent), -MAX_SYMBOL, MAX_SYMBOL).astype(np.int32)
    return q, _best_log_scale(q)


def _quantise_weights(net, inputs, residual, lam, sample: int = 1 << 15, seed: int = 0) -> list:
    """Each MLP tensor's step, chosen in turn to minimise distortion + lambda * rate (the
    distortion measured on ``sample`` random pixels of ``inputs`` -> ``residual``):
    ``[(integers, exponent, log_scale)]``.  The MLP is left holding the rounded weights."""
    pixels = len(inputs)
    chosen_pixels = np.random.default_rng(seed).choice(pixels, min(sample, pixels), replace=False)
    inputs, residual = inputs[chosen_pixels], residual[chosen_pixels]
    chosen = []
    for weight in net.named_parameters().values():
        original = weight.copy()
        best = None
        for exponent in STEP_EXPONENTS:
            q, log_scale = _weight_code(original, exponent)
            weight[...] = q * np.float32(2.0 ** exponent)
            error = net.forward(inputs) - residual
            cost = float(np.mean(error * error)) + lam * _laplace_size(q, log_scale) / pixels
            if best is None or cost < best[0]:
                best = (cost, q, exponent, log_scale)
        _, q, exponent, log_scale = best
        weight[...] = q * np.float32(2.0 ** exponent)
        chosen.append((q, exponent, log_scale))
    return chosen


# -- the bitstream ------------------------------------------------------------------------------
def _constriction():
    try:
        import constriction
    except ImportError:  # a dependency: only a broken install lacks it
        raise CodecError("the entropy coder `constriction` is not installed; reinstall ironlearn") from None
    return constriction


def _laplace(magnitude: int, log_scale: float | None = None):
    """constriction's quantised Laplace on ``-magnitude..magnitude``: with mean 0 and scale
    ``exp(log_scale)``, or (no ``log_scale``) the family whose scale each symbol gives."""
    model = _constriction().stream.model.QuantizedLaplace
    return model(-magnitude, magnitude) if log_scale is None else model(-magnitude, magnitude, 0.0, math.exp(log_scale))


def _encode_symbols(groups) -> bytes:
    """One range-coded stream of ``[(symbols, magnitude, log_scale)]``; groups whose magnitude is
    0 (all zeros) take no bits."""
    encoder = _constriction().stream.queue.RangeEncoder()
    for symbols, magnitude, log_scale in groups:
        if magnitude:
            encoder.encode(symbols.reshape(-1).astype(np.int32), _laplace(magnitude, log_scale))
    return encoder.get_compressed().astype("<u4").tobytes()


def _encode_latents(pyramid: Pyramid, models: dict) -> bytes:
    """One range-coded stream of every grid, coarsest level first, each under its model of
    :func:`_latent_models` (grids of zeros take no bits)."""
    encoder = _constriction().stream.queue.RangeEncoder()
    for k, c, q, parent in _grids(pyramid):
        if models[k, c] is not None:
            entropy.encode(encoder, q, parent, models[k, c][0], _laplace(int(np.abs(q).max())))
    return encoder.get_compressed().astype("<u4").tobytes()


def least_bits(count: int, magnitude: int) -> float:
    """The fewest bits in which the range coder can code any ``count`` symbols of a model on
    ``-magnitude..magnitude``: each of its symbols keeps a probability of at least
    ``2**-CODER_PRECISION``, so none has more than ``1 - 2 magnitude 2**-CODER_PRECISION``, and
    each costs at least -log2 of that (0 for magnitude 0: such a group is not coded).  A
    Laplace's own mode could come arbitrarily close to certain; only this floor bounds a
    section's values by its bytes."""
    if not magnitude:
        return 0.0
    return count * -math.log2(1 - 2 * magnitude / 2 ** CODER_PRECISION)


def _check_room(section: bytes, groups, what: str) -> None:
    """Refuse a ``section`` too short for ``[(count, magnitude)]``, before decoding anything:
    a header's values cannot come from fewer bytes than :func:`least_bits` says."""
    needed = sum(least_bits(count, magnitude) for count, magnitude in groups)
    if needed > 8 * len(section) + CODER_STATE_BITS:
        raise CodecError(f"the {what} section has {len(section):,} bytes, fewer than the {math.ceil(needed / 8):,} "
                         "that the values its header declares take at least; compress the picture again")


@contextmanager
def _decoding(section: bytes, what: str):
    """A range decoder of ``section`` and a range encoder, to which the caller appends again what
    it decodes, under the same models.  Any failure to decode becomes one :class:`CodecError`,
    and so does a section that is not exactly the coding of what was decoded: words missing,
    left over, or another section's."""
    if len(section) % 4:
        raise CodecError(f"the {what} section is damaged (its length is not whole words); "
                         "compress the picture again")
    constriction = _constriction()
    words = np.frombuffer(section, dtype="<u4").astype(np.uint32)
    encoder = constriction.stream.queue.RangeEncoder()
    try:
        yield constriction.stream.queue.RangeDecoder(words), encoder
    except BaseException as error:  # constriction reports some damage as a Rust panic (a BaseException)
        if isinstance(error, (KeyboardInterrupt, SystemExit, GeneratorExit)):
            raise
        raise CodecError(f"the {what} section cannot be decoded ({type(error).__name__}); "
                         "compress the picture again") from None
    if not np.array_equal(encoder.get_compressed(), words):
        raise CodecError(f"the {what} section does not hold what its header declares (words are missing, left "
                         "over or out of place); compress the picture again")


def _decode_symbols(section: bytes, groups, what: str) -> list:
    """The symbols of ``[(count, magnitude, log_scale)]`` from a stream of :func:`_encode_symbols`."""
    values = []
    with _decoding(section, what) as (decoder, encoder):
        for count, magnitude, log_scale in groups:
            if not magnitude:
                values.append(np.zeros(count, np.int32))
                continue
            model = _laplace(magnitude, log_scale)
            values.append(decoder.decode(model, count))
            encoder.encode(values[-1], model)
    return values


def _decode_latents(section: bytes, pyramid: Pyramid, models: dict) -> None:
    """Fill ``pyramid``'s grids from a stream of :func:`_encode_latents`, coarsest level first;
    ``models`` is ``{(level, channel): (entropy.Model, magnitude)}``.  A level whose grids are
    all empty (magnitude 0) stays :func:`~.pyramid.zeros`, which takes no memory."""
    with _decoding(section, "latents") as (decoder, encoder):
        for k in reversed(range(pyramid.levels)):
            if not any(models[k, c][1] for c in range(pyramid.channels)):
                continue
            grids = pyramid.latents[k] = np.zeros(pyramid.latents[k].shape, np.int32)
            above = k + 1 < pyramid.levels and not pyramid.is_empty(k + 1)  # an empty parent says what None does
            for c in range(pyramid.channels):
                model, magnitude = models[k, c]
                if magnitude:
                    grids[c] = entropy.decode(decoder, grids.shape[1:], pyramid.latents[k + 1][c] if above else None,
                                              model, _laplace(magnitude), encoder)


def _write(pyramid: Pyramid, network) -> bytes:
    """The file of ``pyramid`` and ``network`` (``(net, [(integers, exponent, log_scale)])``, or
    None for no MLP)."""
    models = _latent_models(pyramid)
    weights = [] if network is None else network[1]
    weight_groups = [(q, int(np.abs(q).max()), s) for q, _, s in weights]
    header = container.Writer()
    header.uint(pyramid.height).uint(pyramid.width).uint(pyramid.channels).uint(pyramid.levels)
    header.uint(WIDTH if network else 0).uint(DEPTH if network else 0)
    for k in range(pyramid.levels):
        for c in range(pyramid.channels):
            model = models[k, c][0] if models[k, c] is not None else entropy.Model(0.0, 0)
            header.float32(pyramid.steps[k, c]).float32(model.a).uint(model.slope)
            header.uint(int(np.abs(pyramid.latents[k][c]).max()))
    for (_, exponent, _), (_, magnitude, log_scale) in zip(weights, weight_groups):
        header.sint(exponent).float32(log_scale).uint(magnitude)
    filter_groups = []
    for k in range(min(pyramid.levels, FILTER_LEVELS)):
        q, exponent = pyramid.filters[k] or (np.zeros((pyramid.channels, len(FILTER_OFFSETS)), np.int32), 0)
        magnitude, log_scale = int(np.abs(q).max()), _best_log_scale(q) if q.any() else 0.0
        header.sint(exponent).float32(log_scale).uint(magnitude)
        filter_groups.append((q, magnitude, log_scale))
    return container.pack(header.getvalue(), [_encode_latents(pyramid, models),
                                              _encode_symbols(weight_groups + filter_groups)])


@dataclass
class Decoded:
    """A compressed file read back: the picture's size and mode, its latents and its MLP (None
    when the file holds none)."""

    height: int
    width: int
    channels: int
    pyramid: Pyramid
    net: object = None

    @property
    def mode(self) -> str:
        return MODES[self.channels]

    @property
    def num_parameters(self) -> int:
        """The numbers the file holds: latents, filter taps and MLP weights."""
        latents = sum(g.size for g in self.pyramid.latents)
        taps = sum(found[0].size for found in self.pyramid.filters if found is not None)
        return latents + taps + (0 if self.net is None else sum(p.size for p in self.net.named_parameters().values()))

    @property
    def size(self) -> tuple[int, int]:
        """The picture's ``(width, height)``, as :attr:`ironlearn.Run.size` gives a model's."""
        return self.width, self.height

    def region(self, view=None) -> tuple[float, float, float, float] | None:
        """The picture's pixels ``(left, top, right, bottom)`` that ``view`` ``(x0, y0, x1, y1)``
        spans: the region of the [-1, 1] square (y down) that a model's render reads, the picture
        filling the square.  None for no view; ``ValueError`` for one that leaves the square
        (the file holds nothing there)."""
        if view is None:
            return None
        x0, y0, x1, y1 = (float(v) for v in view)
        if not (-1 <= x0 < x1 <= 1 and -1 <= y0 < y1 <= 1):
            raise ValueError(f"view {x0:g},{y0:g},{x1:g},{y1:g} leaves the picture: a compressed picture spans "
                             "[-1, 1] on each axis, so a view needs -1 <= x0 < x1 <= 1 and -1 <= y0 < y1 <= 1")
        return ((x0 + 1) / 2 * self.width, (y0 + 1) / 2 * self.height,
                (x1 + 1) / 2 * self.width, (y1 + 1) / 2 * self.height)

    def bands(self, height: int, width: int, view=None):
        """The picture (or the region ``view`` of the [-1, 1] square, checked here, before the
        first band) at ``height x width``, a band of rows at a time: an iterator of
        ``(first_row, pixels)``, pixels float32 in [0, 1], ``(rows, width, channels)``; a band
        holds about :data:`BAND_PIXELS` pixels."""
        region = self.region(view)
        band = max(1, BAND_PIXELS // width)

        def drawn():
            values = [self.pyramid.values(k) for k in range(self.pyramid.levels)]  # once, not a band
            for top in range(0, height, band):
                rows = slice(top, min(top + band, height))
                features = self.pyramid.features(height, width, rows, region, values)
                picture = self.pyramid.summed(features)
                if self.net is not None:
                    picture += self.net.forward(features * np.float32(FEATURE_GAIN))
                picture = (picture @ COLOURS[self.channels]).reshape(-1, width, self.channels)
                yield top, np.clip(picture, 0, 1)

        return drawn()

    def render(self, height: int | None = None, width: int | None = None, view=None) -> np.ndarray:
        """The picture (or the region ``view`` ``(x0, y0, x1, y1)`` of the [-1, 1] square, y
        down) at ``height x width`` (its own size by default): float32 in [0, 1],
        ``(height, width, channels)``, computed in bands of rows (see :meth:`bands`)."""
        height, width = height or self.height, width or self.width
        out = np.empty((height, width, self.channels), np.float32)
        for top, pixels in self.bands(height, width, view):
            out[top:top + len(pixels)] = pixels
        return out

    def draw_size(self, size=None, scale: float | None = None, view=None) -> tuple[int, int]:
        """The ``(width, height)`` that :meth:`redraw` draws for these arguments."""
        self.region(view)  # a bad view is reported as such, not as a size
        if size is None and scale is None:
            scale = 1.0
        return render_size(self.size, size, scale, view)

    def redraw(self, size=None, scale: float | None = None, view=None) -> np.ndarray:
        """:meth:`render` at ``size`` (N for the longest side, or ``(W, H)``), at ``scale`` times
        the picture's size, or (neither given) at its own pixel pitch; ``view`` ``(x0, y0, x1,
        y1)`` draws that region of the [-1, 1] square, sized as a model's render sizes it
        (:func:`~ironlearn.image.render.render_size`).  ``ValueError`` for a size beyond what
        renders, or a view that leaves the square."""
        return self.render(*self.draw_size(size, scale, view)[::-1], view)


def _refuse(what: str) -> CodecError:
    return CodecError(f"{what}; give a file that `ironlearn compress` wrote")


def mlp_layers(inputs: int, outputs: int, hidden: int, depth: int) -> list[tuple[int, int]]:
    """The ``(fan_in, fan_out)`` of each layer of :func:`~.pyramid.synthesis`'s MLP: ``depth``
    hidden layers of ``hidden`` (none for depth 0)."""
    if not depth:
        return []
    sizes = [inputs] + [hidden] * depth + [outputs]
    return list(zip(sizes[:-1], sizes[1:]))


@dataclass(frozen=True)
class Header:
    """What a compressed file declares, read and checked, its sections not yet decoded: what
    :func:`read_header` returns and ``ironlearn info`` prints, at a cost in proportion to the
    file's own size.

    ``grids`` holds ``(step, a, slope, magnitude)`` a grid, level-major; ``weights`` and
    ``filters`` hold ``(exponent, log_scale, magnitude)`` an MLP tensor (each layer's weight,
    then its bias) and a filterable level; ``sections`` the latents' and the weights' bytes."""

    version: int
    height: int
    width: int
    channels: int
    levels: int
    hidden: int
    depth: int
    grids: tuple
    weights: tuple
    filters: tuple
    sections: tuple

    @property
    def mode(self) -> str:
        return MODES[self.channels]

    @property
    def grid_shapes(self) -> list[tuple[int, int]]:
        """Each level's grid ``(rows, columns)``, finest first."""
        return [level_shape(self.height, self.width, k) for k in range(self.levels)]

    @property
    def filtered_levels(self) -> list[int]:
        return [k for k, (_, _, magnitude) in enumerate(self.filters) if magnitude]

    @property
    def tensor_sizes(self) -> list[int]:
        """The MLP's tensors' sizes, in the order of :attr:`weights`."""
        layers = mlp_layers(self.levels * self.channels, self.channels, self.hidden, self.depth)
        return [size for fan_in, fan_out in layers for size in (fan_in * fan_out, fan_out)]

    @property
    def num_parameters(self) -> int:
        """The numbers the file holds: latents, filter taps and MLP weights (as
        :attr:`Decoded.num_parameters` counts them)."""
        latents = self.channels * sum(h * w for h, w in self.grid_shapes)
        taps = len(self.filtered_levels) * self.channels * len(FILTER_OFFSETS)
        return latents + taps + sum(self.tensor_sizes)


def read_header(data: bytes) -> Header:
    """A compressed file's :class:`Header`, every field and bound checked and nothing decoded;
    :class:`CodecError` for anything else.  Refused here: an MLP of more than
    :data:`MAX_MLP_MACS` multiply-adds a pixel, and sections too short for the values their
    header declares (:func:`least_bits`)."""
    header_bytes, sections = container.unpack(data)
    version = data[len(container.MAGIC)]
    header = container.Reader(header_bytes)
    height = header.uint(1, MAX_SIDE, "the height")
    width = header.uint(1, MAX_SIDE, "the width")
    if height * width > MAX_PIXELS:
        raise _refuse(f"the header claims {width}x{height} pixels, more than {MAX_PIXELS}")
    channels = header.uint(1, 3, "the channels")
    if channels not in MODES:
        raise _refuse(f"the header claims {channels} channels (1 or 3)")
    levels = header.uint(1, MAX_LEVELS, "the levels")
    hidden = header.uint(0, 256, "the MLP's width")
    depth = header.uint(0, 8, "the MLP's depth")
    if (hidden == 0) != (depth == 0):
        raise _refuse("the header's MLP has a width but no layers, or layers but no width")
    layers = mlp_layers(levels * channels, channels, hidden, depth)
    macs = sum(fan_in * fan_out for fan_in, fan_out in layers)
    if macs > MAX_MLP_MACS:
        raise _refuse(f"the header's MLP ({depth} layers of {hidden}) takes {macs:,} multiply-adds a pixel, "
                      f"over the {MAX_MLP_MACS:,} a decoder accepts")
    grids = tuple((header.float32("a grid's step"), header.float32("a grid's scale"),
                   header.uint(0, entropy.SLOPES - 1, "a grid's slope"),
                   header.uint(0, MAX_SYMBOL, "a grid's largest value")) for _ in range(levels * channels))
    weights = tuple((header.sint(STEP_EXPONENTS[0], STEP_EXPONENTS[-1], "a weight step"),
                     header.float32("a weight scale"), header.uint(0, MAX_SYMBOL, "a weight's largest value"))
                    for _ in range(2 * len(layers)))  # a weight and a bias a layer
    filter_levels = min(levels, FILTER_LEVELS) if version >= 4 else 0  # format 3 had none
    filters = tuple((header.sint(STEP_EXPONENTS[0], STEP_EXPONENTS[-1], "a filter step"),
                     header.float32("a filter scale"), header.uint(0, MAX_SYMBOL, "a filter's largest value"))
                    for _ in range(filter_levels))
    header.done()
    if len(sections) != 2:
        raise _refuse(f"the file has {len(sections)} sections, not 2")
    for step, *_ in grids:
        if not STEP_RANGE[0] / 2 ** MAX_LEVELS <= step <= STEP_RANGE[1]:
            raise _refuse("a grid's step in the header is out of range")
    for log_scale in [m[1] for m in grids + weights + filters]:
        if not LOG_SCALE_RANGE[0] <= log_scale <= LOG_SCALE_RANGE[1]:
            raise _refuse("a scale in the header is out of range")
    found = Header(version, height, width, channels, levels, hidden, depth, grids, weights, filters, tuple(sections))
    shapes = [shape for shape in found.grid_shapes for _ in range(channels)]  # level-major, as grids
    _check_room(sections[0], [(h * w, grid[3]) for (h, w), grid in zip(shapes, grids)], "latents")
    _check_room(sections[1], [(size, m) for size, (_, _, m) in zip(found.tensor_sizes, weights)]
                + [(channels * len(FILTER_OFFSETS), m) for _, _, m in filters], "weights")
    return found


def decode_header(header: Header) -> Decoded:
    """The picture whose :class:`Header` :func:`read_header` read: its sections decoded, and
    checked to hold exactly the coding of what they decode to (:class:`CodecError` if not)."""
    channels, levels = header.channels, header.levels
    net = synthesis(levels * channels, channels, header.hidden, header.depth) if header.depth else None
    tensors = [] if net is None else list(net.named_parameters().values())
    steps = np.array([grid[0] for grid in header.grids], np.float32).reshape(levels, channels)
    pyramid = Pyramid(header.height, header.width, channels, levels, steps,
                      CUBIC if header.version >= 5 else CUBIC_BEFORE_5)
    models = {(k, c): (entropy.Model(a, slope), magnitude)
              for (k, c), (_, a, slope, magnitude) in zip(np.ndindex(levels, channels), header.grids)}
    _decode_latents(header.sections[0], pyramid, models)
    taps = channels * len(FILTER_OFFSETS)
    values = _decode_symbols(header.sections[1], [(p.size, m, s) for p, (_, s, m) in zip(tensors, header.weights)]
                             + [(taps, m, s) for _, s, m in header.filters], "weights")
    for param, q, (exponent, _, _) in zip(tensors, values, header.weights):
        param[...] = q.reshape(param.shape) * np.float32(2.0 ** exponent)
    for k, (q, (exponent, _, magnitude)) in enumerate(zip(values[len(tensors):], header.filters)):
        if magnitude:
            pyramid.filters[k] = (q.reshape(channels, -1), exponent)
    return Decoded(header.height, header.width, channels, pyramid, net)


def read(data: bytes) -> Decoded:
    """The picture a compressed file holds; :class:`CodecError` for anything else."""
    return decode_header(read_header(data))


def _from_path(path, reader):
    data = container.read_file(path)  # its messages name the file
    try:
        return data, reader(data)
    except CodecError as exc:
        raise CodecError(f"{path}: {exc}") from None


def read_path(path) -> tuple[bytes, Decoded]:
    """The bytes of the compressed file at ``path`` and the picture they hold; one
    :class:`CodecError` naming the file once for anything that cannot be read."""
    return _from_path(path, read)


def read_header_path(path) -> tuple[bytes, Header]:
    """The bytes of the compressed file at ``path`` and its :class:`Header`, nothing decoded;
    errors as :func:`read_path`'s."""
    return _from_path(path, read_header)


def decode(data: bytes, height: int | None = None, width: int | None = None) -> np.ndarray:
    """A compressed file's picture as uint8 ``(H, W, C)``, at its own size or ``height x width``."""
    return np.round(read(data).render(height, width) * 255).astype(np.uint8)


__all__ = ["Compressed", "Decoded", "CodecError", "Header", "compress_array", "encode", "decode", "read",
           "read_header", "read_path", "read_header_path", "level_shape"]
