"""Encode a picture as a small file that decodes at any size: its arguments, its candidate files,
and the cheapest of them.

The encoder works in these steps (the design and why are in ``docs/compression.md``):

1. **Analysis.** The picture, in decorrelated colours, becomes a Laplacian pyramid of integer
   latents (:func:`.analysis.analyse`), at the quantisation step whose rate meets the target
   (``bpp``) or minimises ``distortion + lambda * rate`` (``lmbda``): :mod:`.ratecontrol`.
   Then each of the finest levels gets the small symmetric filter, applied to its grid before
   upsampling, that least squares finds against the picture, rounded by the same
   rate-distortion trade as the weights below, or none where it does not pay (:mod:`.filters`).
2. **The context model.** For :data:`CONTEXT_SHARE` of the time, a small network learns to
   predict the latents from their decoded neighbours (:mod:`.context`); where it pays, the
   latents are coded under it, and the tuning (step 4) spends the bits it saves.
3. **Synthesis.** With half the time left, a small MLP learns to correct the pyramid's picture
   from the upsampled latents (:mod:`.synthesis`).  Its weights are rounded to a step ``2**e`` a
   tensor, chosen by the same rate-distortion trade, the latents then re-analysed for the rate
   they leave.
4. **Tuning.** With the other half, every level's latents and the MLP's weights train together
   against ``distortion + lambda * rate`` as the file draws the picture, through the filters and
   the MLP (:mod:`.refine`); the weights are rounded again after.
5. **Coding.** Each candidate is written (:mod:`..bitstream`), read back and measured; the
   cheapest by the target's rule (:func:`_cost`) is the file.  The pyramid with its filters is
   always among the files written, so that an MLP that costs bits and adds no quality is dropped.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import time
from dataclasses import dataclass

import numpy as np

from ...backend import blas_threads
from ...errors import OptionError
from ...image.metrics import psnr_from_mse
from ...limits import MAX_SECONDS
from ..bitstream import read, write
from ..bitstream.entropy import laplace_size
from ..bitstream.header import MAX_PIXELS, MAX_SIDE
from ..model.latents import COLOURS
from ..model.network import DEPTH, WIDTH
from ..quantise import quantise_weights
from ..shapes import FILTER_LEVELS, FILTER_OFFSETS, MAX_LEVELS, MODES
from . import context as learned
from .analysis import analyse, prepare_analysis
from .filters import fit_filters
from .leastwork import TooLong, check_time, middle_step
from .ratecontrol import (FILTER_COST, FILTER_SHARE, FINISH_COST, MLP_OVERHEAD_COST, REFINE_ANALYSES, SLOPE_COST,
                          Clock, analyse_at_lambda, analyse_at_rate, latent_bits, slope, trade)
from .refine import refine
from .synthesis import MLP_PIXELS, mlp_problem, train

#: The rate target without one given, and the largest (8-bit colour is 24 bits a pixel).
DEFAULT_BPP, MAX_BPP = 0.5, 24
#: The whole encode runs on this many BLAS threads, whatever the picture's size.  The MLP's
#: products are small: a second thread made them slower alone and many times as slow beside another
#: busy process.  A large picture's analyses gain from a second thread on an idle machine, but
#: beside other work two threads spin against it (a 2048x2048 picture's least work: 39 s on two,
#: 15 s on one; docs/compression.md, 'How an encode spends its `--seconds`').  The thread policy of
#: a fit's Trainer (:class:`~ironlearn.train.ThreadPolicy`) was measured on the MLP and the tuning
#: and not kept: level alone, and beside a busy process its trial steps on two threads of a whole
#: picture ran encodes to 53 s of their 30 (docs/compression.md, 'What else was tried').
BLAS_THREADS = 1
#: The weights' rounding, priced in the MLP's training steps (it runs the MLP forward on the same
#: pixels whatever the picture's size): about this many steps' time at 160x128 and 768x512 alike
#: (measured: docs/benchmark-log.md, 'Measurements the code's comments quoted').
ROUNDING_STEPS = 100
#: The share of the MLP's time given to the latents, refined through it once it is trained
#: (:func:`.refine.refine`); up to :data:`~.synthesis.MLP_PIXELS` pixels, which it draws whole.
#: On sporco's four at 0.25 and 0.5 bpp, 30 s encodes, half gained +0.12 to +0.63 dB over the
#: MLP given all the time, a third -0.02 to +0.55 (measured: docs/benchmark-log.md, 'compression.md
#: as it stood before it became documentation', 'The latents tuned through the MLP').
TUNING_SHARE = 0.5
#: The share of the encode's time the latents' learned context model is fitted for, on the
#: pyramid at the target rate, where it takes at most a third of what is left; the latents'
#: tuning then aims at the bits it leaves (:meth:`.context.Fitted.room`).  In 4.5 s (a 30 s
#: encode's) it saved 2.0-3.6% of sporco's four files at 0.25 bpp and 3.8-6.0% at 0.5, within
#: half a point of 8 s (docs/compression.md, 'The learned context model').
CONTEXT_SHARE = 0.15
#: With a context model, the latents' refinement stops after this share of its time, fits it
#: again and starts again (:func:`_tuned`).
REFIT_AT = 0.6
#: The share of the encode's time given to fitting the context model again, to the refined latents.
REFIT_SHARE = 0.05
#: The share of the context model's estimated saving that the latents' refinement plans to spend:
#: planned with all of it, a file came out over its target where the model saved less on the
#: final latents than estimated, and the encode fell back to the pyramid alone (tulips at 0.25
#: bpp: 26.70 dB, 1.5 dB under its usual file; measured: docs/benchmark-log.md, 'compression.md as
#: it stood before it became documentation', 'A learned context model, as built').
#: The MLP's candidates that rate control makes plan with none of it: they are the fallback.
PLANNED_SAVING = 0.75
#: What follows rate control, in analyses: the slope the filters trade at, their fit, and two
#: files written and checked.
AFTER_RATE_COST = SLOPE_COST + FILTER_COST + 2 * FINISH_COST
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
    mlp_tried : bool
        Whether an MLP was trained at all: False when the time left none, or the picture is too
        small for one.
    """

    data: bytes
    bpp: float
    psnr: float
    seconds: float
    steps: int
    mlp_tried: bool = False


@dataclass(eq=False)
class _Candidate:
    """A file worth writing: its pyramid, its MLP ``(net, weights)`` and steps, its latents'
    context model (None where none pays), and ``(bytes, error)`` once :func:`_check` wrote it."""

    pyramid: object
    network: tuple | None = None
    steps: int = 0
    fitted: learned.Fitted | None = None
    file: tuple | None = dataclasses.field(default=None, init=False)


def _check(job, candidate: _Candidate) -> tuple:
    """``(data, mse)``: the candidate written (its latents under its context model where that
    pays for them) and read back, its decoded picture's error; written once."""
    if candidate.file is None:
        pyramid, fitted = candidate.pyramid, candidate.fitted
        data = write(pyramid, candidate.network, None if fitted is None else fitted.for_pyramid(pyramid))
        candidate.file = data, _decoded_error(read(data), job.target)
    return candidate.file


def _as_picture(values) -> np.ndarray:
    """``values`` as an ``(H, W, C)`` array, not yet converted; ``ValueError`` for another shape."""
    values = np.asarray(values)
    if values.ndim == 2:
        values = values[:, :, None]
    if values.ndim != 3 or values.shape[2] not in MODES:
        raise ValueError(f"need a picture (H, W), (H, W, 1) or (H, W, 3) (got shape {values.shape})")
    return values


def _as_unit(values: np.ndarray) -> np.ndarray:
    if values.dtype == np.uint8:
        return values.astype(np.float32) / 255
    return np.clip(values, 0, 1).astype(np.float32)


@dataclass(frozen=True)
class _Job:
    """An encode's arguments, checked: the picture (``target``, its 8-bit values, uint8, which the
    decoded picture is measured against; ``picture`` in decorrelated colours, float32; both
    ``(H, W, C)``), the rate rule (``bpp`` or ``lmbda``), the clock,
    and the bits that the latents do not get: the container, the header, the coder's last words,
    and about 5 bits a filter tap; ``backend``, where the networks and the tuning train."""

    target: np.ndarray
    picture: np.ndarray
    bpp: float | None
    lmbda: float | None
    levels: int
    seed: int
    clock: Clock
    progress: object
    backend: object = None

    @property
    def pixels(self) -> int:
        return self.target.shape[0] * self.target.shape[1]

    @property
    def header_bits(self) -> int:
        channels = self.target.shape[2]
        return 8 * (64 + 11 * self.levels * channels + 7 * min(self.levels, FILTER_LEVELS))

    @property
    def filter_bits(self) -> int:
        return 5 * min(self.levels, FILTER_LEVELS) * self.target.shape[2] * len(FILTER_OFFSETS)


def _arguments(values, bpp, lmbda, seconds, levels, seed, progress) -> _Job:
    """The encode's :class:`_Job`, its clock started; ``ValueError`` for any argument out of bounds,
    :class:`.leastwork.TooLong` for a large picture whose least work cannot end within ``seconds``."""
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
    clock = Clock(seconds)
    values = _as_picture(values)
    height, width, channels = values.shape
    if max(height, width) > MAX_SIDE or height * width > MAX_PIXELS:
        raise ValueError(f"pictures up to {MAX_SIDE} pixels a side and {MAX_PIXELS} pixels compress "
                         f"(got {width}x{height})")
    # Before any work on the pixels: a large picture's refusal takes a fixed probe's time.
    check_time(height, width, channels, seconds)
    target = _as_unit(values)
    picture = target @ COLOURS[channels].T  # decorrelated colours
    # 8 bits a value: a float32 copy, held through the whole encode, would be four times the size.
    eight_bits = np.round(target * 255).astype(np.uint8)
    return _Job(eight_bits, picture, bpp, lmbda, max(1, min(levels, MAX_LEVELS)), seed, clock, progress)


def _plain(job: _Job):
    """The pyramid at the target rate or at lambda's best trade, its filters fitted if they fit in
    the time, and lambda there (what the filters and the weights trade bits at; None without the
    filters).  The filters' fit reads the picture for at most :data:`FILTER_SHARE` of the time."""
    clock = job.clock
    # Rate control keeps time for one file checked: the filters are left out first.
    if job.bpp is not None:
        bits = job.bpp * job.pixels - job.header_bits - job.filter_bits
        start = middle_step(job.picture, job.levels, bits)
        pyramid = analyse_at_rate(job.picture, job.levels, bits, clock, FINISH_COST, start, job.progress)
    else:
        pyramid = analyse_at_lambda(job.picture, job.levels, job.lmbda, clock, FINISH_COST, job.progress)
    if not clock.affords(AFTER_RATE_COST):
        return pyramid, job.lmbda
    lam = job.lmbda if job.lmbda is not None else slope(job.picture, job.levels, pyramid)
    until = min(clock.deadline - (2 * FINISH_COST + 1) * clock.analysis,
                time.perf_counter() + FILTER_SHARE * clock.seconds)
    fit_filters(job.picture, pyramid, lam, until)
    return pyramid, lam


def _at_rate(job: _Job, bits, like):
    """Rate control again, for ``bits`` of the file's: around the step of the pyramid ``like``,
    whose filters it keeps (fitted a few per cent of the rate away: fitting them again gained next
    to nothing, for two more phases of the encode; measured: docs/benchmark-log.md,
    'compression.md as it stood before it became documentation')."""
    around = math.log(float(like.steps[0, 0]))
    pyramid = analyse_at_rate(job.picture, job.levels, bits - job.header_bits - job.filter_bits, job.clock,
                              job.clock.files(1), around, job.progress)
    pyramid.filters = list(like.filters)
    return pyramid


def _with_mlp(job: _Job, plain, lam, fitted) -> list:
    """The candidates with an MLP (:class:`_Candidate`), where one fits in the
    time: rate control again around the plain pyramid's step (with a target), the MLP's problem,
    its training and its weights' rounding, rate control once more for the bits they took, and
    two more files checked."""
    clock, bpp, pixels = job.clock, job.bpp, job.pixels
    refit = REFINE_ANALYSES if bpp is not None else 0
    # Two files are left to write and check (the pyramid's is): the most refined, and one more.
    if pixels < 64 or lam is None or not clock.affords(2 * refit + MLP_OVERHEAD_COST + clock.files(2)):
        return []
    pyramid = plain  # lambda's best step does not depend on the MLP
    if bpp is not None:  # the latents leave room for the MLP's bits (about a byte a weight)
        channels = job.target.shape[2]
        net_bits = 8 * WIDTH * (job.levels * channels + WIDTH * (DEPTH - 1) + channels)
        pyramid = _at_rate(job, bpp * pixels - net_bits, plain)
    inputs, residual = mlp_problem(pyramid, job.picture)
    training = clock.left() - (refit + MLP_OVERHEAD_COST + clock.files(2)) * clock.analysis
    tuning = TUNING_SHARE * training if pixels <= MLP_PIXELS else 0.0
    training -= tuning
    tuning -= FINISH_COST * clock.analysis  # the tuning writes the file once to count its other sections' bits
    if training <= 0:
        return []
    net, steps = train(inputs, residual, training, job.seed, job.progress, held_back=ROUNDING_STEPS,
                       backend=job.backend)
    rounding = time.perf_counter()
    weights = quantise_weights(net, inputs, residual, lam)
    rounding = time.perf_counter() - rounding
    candidates = [_Candidate(pyramid, (net, weights), steps, fitted)]
    if bpp is not None:  # the weights took other than the bits set aside: the latents take the rest
        spent_on_weights = sum(laplace_size(q, log_scale) for q, _, log_scale in weights)
        if spent_on_weights > net_bits or net_bits - spent_on_weights > 0.01 * bpp * pixels:
            candidates.append(_Candidate(_at_rate(job, bpp * pixels - spent_on_weights, plain), (net, weights), steps,
                                         fitted))
    if tuning - rounding > 0:
        # The weights are rounded again after the tuning, in the time they took here.
        tuned, trained, refitted = _tuned(job, candidates[-1].pyramid, (net, weights), lam, tuning - rounding, fitted)
        candidates.append(_Candidate(tuned, trained, steps, refitted))
    return candidates


def _tuned(job: _Job, pyramid, network, lam, seconds, fitted=None):
    """``pyramid``'s latents refined for ``seconds`` through its filters and the MLP of
    ``network`` ``(net, weights)``, trained with them (:func:`.refine.refine`), its weights rounded
    again after: with a target, within the bits that the file written now leaves them (the
    latents' as the context model ``fitted``, or None, will code them).  Refining changes the
    latents' statistics (monarch at 0.25 bpp: 7.3% saved before, 4.2% after; measured:
    docs/compression.md, 'The tuning: the latents and the MLP trained together'), so with a model
    the refinement stops at :data:`REFIT_AT` of its time, fits the model again for
    :data:`REFIT_SHARE` of the encode's, and starts again within the bits that one leaves.
    Returns the pyramid, its network and its context model."""
    until, room = time.perf_counter() + seconds, None
    if job.bpp is not None:
        others = 8 * len(write(pyramid, network)) - latent_bits(pyramid)
        room = job.bpp * job.pixels - others
    net = copy.deepcopy(network[0])
    if fitted is None or room is None:
        pyramid = refine(job.picture, pyramid, lam, until, bits=room, net=net, progress=job.progress,
                         train_net=True, backend=job.backend)
    else:
        first = time.perf_counter() + REFIT_AT * (until - time.perf_counter() - REFIT_SHARE * job.clock.seconds)
        pyramid = refine(job.picture, pyramid, lam, first, bits=fitted.room(room, PLANNED_SAVING), net=net,
                         progress=job.progress, train_net=True, backend=job.backend)
        fitted = learned.fit(pyramid, REFIT_SHARE * job.clock.seconds, job.seed, start=fitted,
                             backend=job.backend) or fitted
        pyramid = refine(job.picture, pyramid, lam, until, bits=fitted.room(room, PLANNED_SAVING), net=net,
                         progress=job.progress, train_net=True, backend=job.backend)
    inputs, residual = mlp_problem(pyramid, job.picture)
    return pyramid, (net, quantise_weights(net, inputs, residual, lam)), fitted


def _candidates(job: _Job) -> list:
    """Every file worth writing (:class:`_Candidate`), least refined first: the pyramid without
    its filters (a fallback), with them, and with an MLP where time allows, all with the
    latents' context model fitted to the pyramid (None where it does not pay or the time leaves
    none).  The pyramid with its filters, always written, is written and checked first, and the
    time that took prices the files still to come (:meth:`.ratecontrol.Clock.files`)."""
    prepare_analysis(job.target.shape[0], job.target.shape[1], job.levels)
    plain, lam = _plain(job)
    fitted = _context(job, plain)
    filtered = _Candidate(plain, fitted=fitted)
    started = time.perf_counter()
    _check(job, filtered)
    job.clock.file = time.perf_counter() - started
    return [_Candidate(plain.unfiltered(), fitted=fitted), filtered] + _with_mlp(job, plain, lam, fitted)


def _context(job: _Job, pyramid) -> learned.Fitted | None:
    """The latents' context model fitted to ``pyramid`` for :data:`CONTEXT_SHARE` of the
    encode's time, where that is at most a third of the time left."""
    seconds = CONTEXT_SHARE * job.clock.seconds
    if job.pixels < 64 or job.clock.left() < 3 * seconds:
        return None
    if job.progress is not None:
        job.progress("context model", 0, 1, None)
    return learned.fit(pyramid, seconds, job.seed, backend=job.backend)


def _cost(rate: float, mse: float, bpp: float | None, lmbda: float | None) -> tuple:
    """How a file of ``rate`` bits a pixel and error ``mse`` ranks, the least first: with a target
    ``bpp``, the best file within it, else (when none is) the smallest; with ``lmbda``, the best
    trade (:func:`.ratecontrol.trade`, finite for any lambda), the better of two that tie (at
    lambda 1e308 the error is lost beside the rate)."""
    if bpp is not None:
        return (rate > bpp, max(rate - bpp, 0.0), mse)
    return (trade(mse, rate, lmbda), mse)


def _in_order(candidates) -> tuple:
    """``(candidates in the order they are written, how many are written whatever the time)``:
    the pyramid with its filters, which a file with an MLP must beat (a small picture's can be the
    larger and the worse; measured: docs/benchmark-log.md, 'compression.md as it stood before it
    became documentation'), and the most refined file
    with an MLP (trained only where time was left for its files, though its weights' rounding can
    overrun that on a small picture), then the others, the most refined first."""
    unfiltered, filtered, *with_mlp = candidates
    return [filtered, *reversed(with_mlp), unfiltered], 1 + min(1, len(with_mlp))


def _cheapest(job: _Job, candidates) -> Compressed:
    """The candidate whose file ranks first by :func:`_cost`, each written (its latents under its
    context model where it pays for them) and read back in the order of :func:`_in_order`: its
    first files whatever the time, the others while time is left."""
    ordered, always = _in_order(candidates)
    best = None
    for tried, candidate in enumerate(ordered):
        if tried >= always and candidate.file is None and not job.clock.affords(job.clock.files(1)):
            break
        data, mse = _check(job, candidate)
        rate = 8 * len(data) / job.pixels
        cost = _cost(rate, mse, job.bpp, job.lmbda)
        if best is None or cost < best[0]:
            best = (cost, Compressed(data, rate, psnr_from_mse(mse), 0.0, candidate.steps))
    result = best[1]
    return Compressed(result.data, result.bpp, result.psnr, time.perf_counter() - job.clock.started, result.steps,
                      mlp_tried=any(candidate.network is not None for candidate in candidates))


def _decoded_error(decoded, target: np.ndarray) -> float:
    """The mean squared error of the 8-bit picture ``decoded`` draws against ``target`` (uint8;
    in [0, 1] units), a band of rows at a time (whole, its float temporaries are many times the
    8-bit picture's size)."""
    height, width, _ = target.shape
    total = 0.0
    for top, pixels in decoded.bands(height, width):
        drawn = np.round(pixels * 255) - target[top:top + len(pixels)]
        total += float(np.sum(np.square(drawn), dtype=np.float64))
    return total / target.size / 255 ** 2


def compress_array(values, *, bpp: float | None = None, lmbda: float | None = None, seconds: float = 30.0,
                   levels: int = MAX_LEVELS, seed: int = 0, progress=None, backend=None) -> Compressed:
    """Compress a picture: ``values`` ``(H, W)`` or ``(H, W, C)``, ``C`` 1 or 3, uint8 or floats
    in [0, 1].

    Give a rate target ``bpp`` (bits per pixel of the whole file) or a rate-distortion weight
    ``lmbda`` (distortion in [0, 1] units plus ``lmbda`` times bits per pixel; higher: smaller
    files), not both; neither means ``bpp=0.5``.  ``seconds`` (at most :data:`MAX_SECONDS`)
    bounds the whole encode, wall clock: rate control stops bisecting, and the filters and the
    MLP are left out, where they would not fit in it; only the first analysis and one file
    written and checked are done whatever it says, and a picture past a megapixel whose least
    work cannot end within it is refused before any (:func:`.leastwork.check_time`,
    :class:`.leastwork.TooLong`).  It runs on one BLAS thread (:data:`BLAS_THREADS`).  ``progress``, if given, is called as
    ``progress(what, done, total, psnr)``: after each analysis of rate control (``psnr`` None),
    about every second while the MLP trains, and every ten steps of the latents' tuning.
    ``backend`` (a :class:`~ironlearn.backend.Backend`; default the CPU's) is where the synthesis
    MLP, the latents' context model and the tuning train; the analysis runs on the CPU.
    """
    job = dataclasses.replace(_arguments(values, bpp, lmbda, seconds, levels, seed, progress), backend=backend)
    with blas_threads(BLAS_THREADS):
        candidates = _candidates(job)
        # What is left writes and checks files: the decorrelated picture (200 MB at 16.8 MP) goes.
        job = dataclasses.replace(job, picture=None)
        return _cheapest(job, candidates)


def encode(values, *, bpp: float | None = None, lmbda: float | None = None, seconds: float = 30.0,
           seed: int = 0) -> bytes:
    """The bytes of :func:`compress_array`'s file."""
    return compress_array(values, bpp=bpp, lmbda=lmbda, seconds=seconds, seed=seed).data
