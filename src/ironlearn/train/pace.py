"""A training run's pace: seconds per step that one stalled step cannot sway.

A machine can stop a process outright for a while: a laptop sleeps, a busy machine or a
preempted VM deschedules it.  Such a *stall* costs its own duration of a timed run's budget, and
it must cost nothing more: a pace read as a plain mean over a window holding a 4 s stall planned a
handful of steps where hundreds were left, and the cosine ran to its floor and stayed there
(measured: docs/benchmark-log.md, 'Measurements the code's comments quoted').  :class:`Pace`
is the median of short blocks' means,
so one slow step moves it not at all, while a machine that really slows down (every step) moves
it within a window.  A timed fit re-plans by it (``train.timed.Replan``), and so does the
codec's MLP (``codec.search.synthesis.train``), both through :mod:`.timed`.
"""

from __future__ import annotations

import collections
import statistics

#: How many of the latest steps the pace is read from, and in how many blocks.  A block's mean
#: smooths steps that alternate in cost (a callback every few steps); the median over blocks
#: ignores the block that holds a stall.
RECENT_STEPS = 64
BLOCKS = 8
#: A step that takes this many times the pace, and this many seconds more, was stalled: the
#: process did not run (a sleep, a stop, a busy machine).  Its time past the pace is counted.
STALL_FACTOR = 4.0
STALL_SECONDS = 0.05


class Pace:
    """Seconds per step from the latest :data:`RECENT_STEPS` step durations, robust to outliers,
    and the seconds the steps spent stalled.

    Examples
    --------
    >>> pace = Pace()
    >>> for seconds in [0.01] * 20 + [4.0] + [0.01] * 5:
    ...     pace.add(seconds)
    >>> round(pace.seconds_per_step, 3), round(pace.stalled, 2)
    (0.01, 3.99)
    """

    def __init__(self, stalled: float = 0.0):
        self.recent = collections.deque(maxlen=RECENT_STEPS)
        self.stalled = float(stalled)

    def __len__(self) -> int:
        return len(self.recent)

    @property
    def seconds_per_step(self) -> float | None:
        """The median over up to :data:`BLOCKS` blocks of the recent steps of each block's mean
        duration; None before the first step.  Plain Python: it runs every step, and NumPy's
        calls on a few dozen numbers took a share of a short step worth saving (measured:
        docs/benchmark-log.md, 'Measurements the code's comments quoted')."""
        if not self.recent:
            return None
        values, blocks = list(self.recent), min(BLOCKS, len(self.recent))
        bounds = [len(values) * i // blocks for i in range(blocks + 1)]
        return statistics.median(sum(values[a:b]) / (b - a) for a, b in zip(bounds, bounds[1:]))

    def add(self, seconds: float, own_seconds: float | None = None) -> None:
        """Count one step that took ``seconds`` in all (its callbacks' share included), of which
        ``own_seconds`` (default: all of it) were the step itself.  Only the step's own time can
        count as stalled: a checkpoint's write is the run's work, not a stall."""
        pace = self.seconds_per_step
        own = seconds if own_seconds is None else own_seconds
        if pace is not None and own > STALL_FACTOR * pace and own - pace > STALL_SECONDS:
            self.stalled += own - pace
        self.recent.append(seconds)
