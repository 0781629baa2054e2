"""How many BLAS threads a training loop runs on, chosen by timing its own steps.

On a 2-core machine the answer depends on the model and on what else the machine is doing.
Alone, a wide product (SIREN, 128-256 units) runs faster on two threads; beside a neighbour
that keeps the cores busy, the second thread spins waiting for a core and every product waits
for both, several times over (measured: docs/benchmark-log.md, 'On a shared machine: a timed
fit beside other work').  A small product (the hash grid's 32-wide layers)
never gains from a second thread.  No fixed rule gets every case, so :class:`ThreadPolicy`
measures: it runs a few real steps on each setting, alternating so that a change in the
machine's load falls on both, keeps the faster, and measures again now and then, and at once
when steps on more threads fall far behind their measured pace.  The two mistakes do not cost the
same: one thread where two were faster costs at most the second core's share; two threads beside
a neighbour cost many times over (fits beside one ran a third to a sixth of their steps, up to
10 dB under; measured: docs/benchmark-log.md, '2026-11-28, a fit beside other work, before and
after the thread policy's fix'), so one thread keeps every tie and every doubt.
"""

from __future__ import annotations

import os
import statistics
from collections import deque

from ..backend import blas_controller, release_blas

#: Steps timed on each setting per measurement (alternating), and seconds of training between
#: measurements: a neighbour that starts later is noticed within that time.
TRIAL_STEPS = 3
RECHECK_SECONDS = 20.0
#: More threads are kept only when each of their trial steps is at least this much faster than
#: one thread's median: a tie goes to one thread, which cannot spin against a neighbour that shows
#: up later.  Each, not their median: beside a neighbour, steps on two threads swing from as fast
#: as alone to many times slower, as the neighbour's threads come and go, and three of them can
#: show a median that wins by chance; a whole fit then ran on two spinning threads.
MORE_THREADS_GAIN = 0.85
#: On more threads, steps this many times slower than measured (the median of the last
#: ``TRIAL_STEPS``) start a measurement at once, not at the next due one: a neighbour arrived, or
#: the measurement was wrong, and every step until the next would pay for it.
SLOWER = 1.5


def blas_thread_count() -> int:
    """The BLAS library's own thread count (its most, when several are loaded); 1 without one."""
    counts = [lib.num_threads for lib in blas_controller().select(user_api="blas").lib_controllers]
    return max(counts, default=1)


class ThreadPolicy:
    """Chooses between one BLAS thread and the library's own count by timing real steps.

    Use it around a loop: :meth:`threads` says what the next step runs on (and sets it), and
    :meth:`record` takes how long that step took.  ``fixed`` (an int) pins the count instead;
    with one core it leaves the library alone.

    Examples
    --------
    >>> policy = ThreadPolicy(cores=2)
    >>> for seconds in [0.02, 0.05] * TRIAL_STEPS:  # one thread 20 ms a step, two 50 ms
    ...     _ = policy.threads(apply=False)
    ...     policy.record(seconds)
    >>> policy.chosen
    1
    """

    def __init__(self, fixed: int | None = None, *, cores: int | None = None):
        self.cores = cores if cores is not None else min(blas_thread_count(), os.cpu_count() or 1)
        self.fixed = fixed
        self.auto = fixed is None and self.cores > 1
        self.chosen = fixed if not self.auto else None  # None until measured
        self._trials: list[int] = []  # the settings still to time in this measurement
        self._times: dict[int, list[float]] = {}
        self._running: int | None = None  # what the step in flight runs on
        self._seconds = 0.0  # of the steps recorded
        self._next_check = 0.0
        self.measured: dict[int, float] = {}  # threads -> median seconds a step, at the last measurement
        self._recent: deque[float] = deque(maxlen=TRIAL_STEPS)  # the last steps on more threads, since the measurement
        self._applied = None  # the limiter that set the count, to restore at the end

    def __repr__(self) -> str:
        return f"ThreadPolicy(fixed={self.fixed}, auto={self.auto}, cores={self.cores}, chosen={self.chosen})"

    @property
    def seconds_per_step(self) -> float | None:
        """The median step time on the chosen setting at the last measurement (None before one)."""
        return self.measured.get(self.chosen)

    def threads(self, *, apply: bool = True) -> int | None:
        """The thread count for the next step (None: the library's own, untouched), set in the
        BLAS library unless ``apply`` is false.  Starts a measurement when one is due."""
        if self.auto and not self._trials and self._seconds >= self._next_check:
            self._trials = [1, self.cores] * TRIAL_STEPS
            self._times = {1: [], self.cores: []}
        threads = self._trials.pop(0) if self._trials else self.chosen
        if apply and threads is not None and threads != self._running:
            self._set(threads)
        self._running = threads
        return threads

    def record(self, seconds: float) -> None:
        """How long the step just run took; ends a measurement when its last step is in, and
        starts one when steps on more threads fell far behind their measured pace."""
        self._seconds += seconds
        if self._running in self._times:
            self._times[self._running].append(seconds)
            if not self._trials:
                self._choose()
        elif self.auto and self._running == self.chosen != 1:
            self._recent.append(seconds)
            if len(self._recent) == TRIAL_STEPS and statistics.median(self._recent) > SLOWER * self.seconds_per_step:
                self._next_check = self._seconds  # the next step starts a measurement

    def _choose(self) -> None:
        times, self._times = self._times, {}
        self._recent.clear()
        one = statistics.median(times[1])
        self.chosen = self.cores if max(times[self.cores]) < MORE_THREADS_GAIN * one else 1
        self.measured = {n: statistics.median(t) for n, t in times.items()}
        self._next_check = self._seconds + RECHECK_SECONDS

    def _set(self, threads: int) -> None:
        limiter = blas_controller().limit(limits=threads, user_api="blas")
        if self._applied is None:
            self._applied = limiter  # the first remembers the library's own counts

    def restore(self) -> None:
        """Put the library's thread counts back as they were before the first step."""
        if self._applied is not None:
            self._applied.restore_original_limits()
            self._applied, self._running = None, None
            release_blas()
