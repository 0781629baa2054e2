"""How many BLAS threads a training loop runs on, chosen by timing its own steps.

On a 2-core machine the answer depends on the model and on what else the machine is doing.
Alone, a wide product (SIREN, 128-256 units) runs faster on two threads; beside a neighbour
that keeps the cores busy, the second thread spins waiting for a core and every product waits
for both, several times over (measured: docs/benchmark-log.md, 'On a shared machine: a timed
fit beside other work').  A small product (the hash grid's 32-wide layers)
never gains from a second thread.  No fixed rule gets every case, so :class:`ThreadPolicy`
measures: it runs a few real steps on each setting, alternating so that a change in the
machine's load falls on both, keeps the faster, and measures again now and then.
"""

from __future__ import annotations

import os
import statistics

from ..backend import blas_controller, release_blas

#: Steps timed on each setting per measurement (alternating), and seconds of training between
#: measurements: a neighbour that starts later is noticed within that time.
TRIAL_STEPS = 3
RECHECK_SECONDS = 20.0
#: More threads are kept only when they make steps at least this much faster: a tie goes to one
#: thread, which cannot spin against a neighbour that shows up later.
MORE_THREADS_GAIN = 0.85


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
        """How long the step just run took; ends a measurement when its last step is in."""
        self._seconds += seconds
        if self._running in self._times:
            self._times[self._running].append(seconds)
            if not self._trials:
                self.measured = {n: statistics.median(times) for n, times in self._times.items()}
                self.chosen = self.cores if self.measured[self.cores] < MORE_THREADS_GAIN * self.measured[1] else 1
                self._times = {}
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
