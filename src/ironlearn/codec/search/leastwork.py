"""The least time an encode of a large picture takes, known from its size before any work, so
that one that cannot end within its time is refused at once with the time it needs.

An encode's least work (``encoder.compress_array`` given no time at all) is the picture read and
converted, the analysis prepared, rate control's search of the middle megapixel, one analysis of
the whole picture and one file written, read back and checked against it.  Its time is about
:func:`least_units` *probes*: a probe is one analysis of a small fixed picture, timed here and
now on one BLAS thread as the encode runs (:func:`probe`), in the time of the thread's own work
(CPU time) and in wall time.  The first, steady on a machine shared with other jobs, is this
machine's speed; the second adds the share of a core the encode gets now, which on such a
machine swung from 0.4 to 0.9 over a minute (measured: docs/benchmark-log.md, 'compression.md as
it stood before it became documentation').  So an encode is refused only where a whole core
could not do its least work in time (the refusal is then right), and the time it is told to give
is the wall time, where the machine's neighbours are counted in.  The probe and the arithmetic
take a fraction of a second and a few MB, whatever the picture's size (a refusal at 16.8 MP,
the process's start included: 0.7 s and 57 MB; measured: docs/compression.md, 'Large pictures').
"""

from __future__ import annotations

import math
import time
from typing import NamedTuple

import numpy as np

from ...backend import blas_threads
from ...errors import OptionError
from ...limits import MAX_SECONDS
from ..shapes import MAX_LEVELS
from .analysis import analyse, prepare_analysis
from .ratecontrol import Clock, analyse_at_rate

#: Past this many pixels, an encode is refused when its least work cannot end within its time,
#: and its rate control starts from the step at which its middle megapixel meets the rate.  Up
#: to it, the first analysis and one file checked are done whatever the time.
LARGE_PIXELS = 1 << 20
#: The probe: an analysis of a ``PROBE_SIDE`` square (5 to 8 ms of a core on the 2-core VM, by its
#: load; measured: docs/benchmark-log.md, 'compression.md as it stood before it became
#: documentation'), run once cold, then again and again for ``PROBE_SECONDS`` of wall time, their
#: mean taken.
PROBE_SIDE, PROBE_SECONDS = 256, 0.25
#: The least work of a colour picture in probes of a core's time: ``UNITS * megapixels ** GROWTH``
#: (megapixels of 2**20 pixels), scaled by the channels' share of three, and ``READING`` a
#: megapixel more to read a PNG file.  Fitted to least-work encodes of sporco's photographs
#: tiled at 1.8 to 16.8 MP, each within 8% of it (measured: the same log section as the probe's).
UNITS, GROWTH, READING = 350.0, 0.84, 5.0
#: An encode is refused when its least work on a whole core is more than this many times its time.
OVERRUN = 1.1
#: The time a refusal asks for is this many times the estimate: on the quiet 2-core VM the estimate
#: was 0.78 to 0.93 of the least work (mosaics of sporco's photographs, 4 to 16.8 MP; measured:
#: docs/compression.md, 'Large pictures'), and an encode given what it was told to give must keep to it.
ASK_MARGIN = 1.3


class Probe(NamedTuple):
    """One probe's time, in seconds: of the thread's own work, and wall clock."""

    cpu: float
    wall: float


class TooLong(OptionError):
    """The encode's least work cannot end within its time (``seconds``: about what it needs).
    Its message names the time as the API's argument, or worded as the command's flag."""

    def __init__(self, template: str, seconds: float):
        super().__init__(template, "seconds")
        self.seconds = seconds


def probe() -> Probe:
    """The time of one analysis of a fixed :data:`PROBE_SIDE` square picture on one BLAS thread,
    the mean over :data:`PROBE_SECONDS` after a cold one: this machine's speed, and its speed for
    this encode now."""
    side = PROBE_SIDE
    rows, columns = np.mgrid[0:side, 0:side] / side
    picture = np.stack([np.sin(7 * columns + 3 * rows), np.cos(20 * rows * columns), rows * columns], axis=-1)
    picture = (0.3 * picture).astype(np.float32)
    prepare_analysis(side, side, MAX_LEVELS)
    with blas_threads(1):
        analyse(picture, 2.0 ** -6, MAX_LEVELS)  # cold: its memory faulted in
        started, working, runs = time.perf_counter(), time.thread_time(), 0
        while runs < 2 or time.perf_counter() - started < PROBE_SECONDS:
            analyse(picture, 2.0 ** -6, MAX_LEVELS)
            runs += 1
        return Probe((time.thread_time() - working) / runs, (time.perf_counter() - started) / runs)


def least_units(height: int, width: int, channels: int, reading: bool = False) -> float:
    """A ``height x width`` picture of ``channels`` colours' least work, in probes
    (:data:`UNITS`, ...); with ``reading``, its PNG file's reading counted in."""
    megapixels = height * width / 2 ** 20
    return UNITS * channels / 3 * megapixels ** GROWTH + (READING * megapixels if reading else 0.0)


def least_seconds(height: int, width: int, channels: int = 3, reading: bool = False) -> Probe:
    """About how long an encode of a ``height x width`` picture of ``channels`` colours takes at the
    least on this machine: on a whole core, and now (:func:`least_units` times :func:`probe`)."""
    units, timed = least_units(height, width, channels, reading), probe()
    return Probe(units * timed.cpu, units * max(timed.wall, timed.cpu))


def check_time(height: int, width: int, channels: int, seconds: float, *, given: float | None = None,
               reading: bool = False) -> None:
    """Raise :class:`TooLong` when a ``height x width`` picture past :data:`LARGE_PIXELS` cannot
    end its least work within ``seconds`` even on a whole core (with :data:`OVERRUN`'s slack);
    ``given`` is the time the message names (default ``seconds``), ``reading`` counts its file's
    reading in.  The message asks for the time the work takes on this machine now."""
    if height * width <= LARGE_PIXELS:
        return
    least = least_seconds(height, width, channels, reading)
    if least.cpu <= OVERRUN * seconds:
        return
    half = least.wall * least_units(height // 2, width // 2, channels, reading) / least_units(height, width, channels,
                                                                                          reading)
    raise TooLong(f"a {width}x{height} picture takes about {least.wall:.0f} s to compress on this machine now "
                  f"({least.cpu:.0f} s of a core's work: {'reading it, ' if reading else ''}one analysis and one file written "
                  "and checked), "
                  f"more than the {seconds if given is None else given:.3g} s given; give {{seconds}} "
                  f"{_round_up(ASK_MARGIN * least.wall)} or more, or a smaller picture (half as wide and tall: about {half:.0f} s)",
                  least.wall)


def _round_up(seconds: float) -> int:
    """``seconds`` rounded up to two significant digits: a number to type."""
    scale = 10 ** max(0, len(str(int(seconds))) - 2)
    return int(-(-seconds // scale) * scale)


def middle_step(picture: np.ndarray, levels: int, bits: float) -> float | None:
    """Past :data:`LARGE_PIXELS`, the log-step at which the picture's middle megapixel takes its
    share of ``bits``: where rate control on the whole picture starts, and searches near.  An
    analysis of 16.8 MP takes many seconds, so that the search from a fixed first step ran out of
    time at its first guess, far over its target; the middle's search takes a fraction of that a
    step (measured: docs/benchmark-log.md, 'Measurements the code's comments quoted')."""
    height, width = picture.shape[:2]
    if height * width <= LARGE_PIXELS:
        return None
    middle = _middle(picture)
    share = middle.shape[0] * middle.shape[1] / (height * width)
    prepare_analysis(middle.shape[0], middle.shape[1], levels)
    found = analyse_at_rate(middle, levels, bits * share, Clock(MAX_SECONDS))
    return math.log(float(found.steps[0, 0]))


def _middle(picture: np.ndarray, side: int = 1 << 10) -> np.ndarray:
    """The picture's middle ``side x side`` pixels (all of it along a shorter side)."""
    height, width = picture.shape[:2]
    top, left = max(0, (height - side) // 2), max(0, (width - side) // 2)
    return picture[top:top + side, left:left + side]
