"""Interval callbacks: everything a training run does besides training.

A callback runs ``step(trainer)`` every ``every`` steps and ``end(trainer, error)``
once when :meth:`Trainer.run` returns or raises (``error`` is the exception, or
None).  Only callbacks read the loss back to the host.

*When* something happens is a trigger (:class:`Every`), *what* happens is the
callback: the checkpointer saves, :class:`Rollback` keeps the same state in
memory, :class:`Progress` draws a bar.
"""

from __future__ import annotations

import sys
import time

from ..backend import to_host
from . import checkpoint
from .trainer import DivergenceError


class Callback:
    """Base class; ``every=0`` means only at the end."""

    def __init__(self, every: int = 0):
        if every < 0:
            raise ValueError(f"every must be >= 0 (got {every})")
        self.every = int(every)

    def step(self, trainer) -> None:
        pass

    def due(self, trainer) -> None:
        """On a GPU, at a step where the trainer's read is due (about once a second) and
        :meth:`step` was not called: what :meth:`step` put off until the device could be read."""

    def end(self, trainer, error) -> None:
        pass


class Every:
    """A trigger: true every ``steps`` steps, or once ``seconds`` of training have passed since
    it last fired, whichever comes first (either may be None).

    ``since`` is the training time it counts seconds from (a resumed run's time so far).
    Checking it costs nothing on the device: it reads the step and the clock only.
    """

    def __init__(self, steps: int | None = None, seconds: float | None = None, *, since: float = 0.0):
        if steps is not None and steps < 1:
            raise ValueError(f"steps must be at least 1 (got {steps})")
        self.steps, self.seconds, self.fired_at = steps, seconds, since

    def __call__(self, trainer) -> bool:
        due = (self.steps is not None and trainer.step % self.steps == 0) or (
            self.seconds is not None and trainer.train_seconds - self.fired_at >= self.seconds)
        if due:
            self.fired_at = trainer.train_seconds
        return due

    def __repr__(self) -> str:
        return f"Every(steps={self.steps}, seconds={self.seconds})"


def _saves_at_end(trainer, error) -> bool:
    """The end-of-run rule shared by what saves state: after a finished run, a requested stop or
    Ctrl-C, never after divergence or a failed write (the last good state stays)."""
    return trainer.step > 0 and (error is None or isinstance(error, KeyboardInterrupt))


class History(Callback):
    """Records ``(step, loss, lr, train_seconds)`` rows every ``every`` steps and at the end.

    On a GPU a row's loss stays on the device until the trainer's next read falls due
    (:attr:`~ironlearn.train.Trainer.read_due`, about once a second), when the rows' losses are read
    together in one copy: recording costs no sync.  :attr:`rows` holds the rows read so far.
    """

    def __init__(self, every: int = 10):
        super().__init__(every)
        self.rows: list[dict] = []
        self._unread: list[tuple] = []  # (step, the loss as the trainer left it, lr, seconds)

    def step(self, trainer) -> None:
        self._record(trainer)
        if trainer.read_due:
            self.read(trainer)

    def due(self, trainer) -> None:
        if self._unread:
            self.read(trainer)

    def _record(self, trainer) -> None:
        last = self._unread[-1][0] if self._unread else self.rows[-1]["step"] if self.rows else None
        if last != trainer.step and trainer.unread_loss is not None:
            self._unread.append((trainer.step, trainer.unread_loss, trainer.last_lr, trainer.train_seconds))

    def read(self, trainer, strict: bool = True) -> None:
        """Read the unread rows' losses, in one copy, into :attr:`rows`.  A diverged one is
        dropped, and with ``strict`` raises DivergenceError once the others are kept."""
        unread, self._unread = self._unread, []
        diverged = None
        for (step, _, lr, seconds), loss in zip(unread, trainer.read(*(row[1] for row in unread))):
            try:
                trainer.check(loss, step, lr)
            except DivergenceError as error:
                diverged = diverged or error
                continue
            self.rows.append(self.row(step, loss, lr, seconds))
        if strict and diverged is not None:
            raise diverged

    def row(self, step: int, loss: float, lr: float, seconds: float) -> dict:
        """One record; subclasses add columns."""
        return {"step": step, "loss": loss, "lr": lr, "seconds": seconds}

    def forget_after(self, step: int) -> None:
        """Drop rows after ``step`` (a run rolled back to it)."""
        self.rows = [row for row in self.rows if row["step"] <= step]
        self._unread = [row for row in self._unread if row[0] <= step]

    def end(self, trainer, error) -> None:
        if error is None and trainer.step > 0:
            self._record(trainer)
        self.read(trainer, strict=False)


class Checkpointer(Callback):
    """Saves the model and optimizer to ``path`` when ``trigger`` fires, and at the end of the run.

    Parameters
    ----------
    path : str
    every : int, optional
        Shorthand for ``trigger=Every(every)``; ``0`` saves only at the end.
    trigger : callable ``trainer -> bool``, optional
    settings : dict or callable ``trainer -> dict``
        Stored in the checkpoint's metadata.
    then : iterable of callables ``trainer -> None``
        Run after each successful save (files that belong beside the checkpoint).
    max_share : float, optional
        The most of the training time that saving may take: a save that falls due sooner than
        the last one's duration divided by ``max_share`` after that one began is put off to the
        next time ``trigger`` fires (default None: every time it fires).  A model of millions of
        parameters takes a second or more to save with its optimizer's moments, which twenty
        saves a run would make half of a minute's budget.

    Nothing is saved once the loss is NaN/inf, so the file on disk is always the
    last good state.  Ctrl-C (``KeyboardInterrupt``) still saves at the end.
    """

    def __init__(self, path, every: int = 1000, *, trigger=None, settings=None, then=(), max_share=None):
        super().__init__(1 if trigger is not None else every)
        if max_share is not None and not 0 < max_share <= 1:
            raise ValueError(f"max_share must lie in (0, 1] (got {max_share})")
        self.path, self.trigger, self.settings, self.then = path, trigger, settings, list(then)
        self.max_share = max_share
        self.saved_step = None
        self.last_save = None  # (the training time it began at, the seconds it took)

    def step(self, trainer) -> None:
        if (self.trigger is None or self.trigger(trainer)) and not self._too_soon(trainer):
            self.save(trainer)

    def _too_soon(self, trainer) -> bool:
        if self.max_share is None or self.last_save is None:
            return False
        began, took = self.last_save
        return trainer.train_seconds - began < took / self.max_share

    def save(self, trainer) -> None:
        if self.saved_step == trainer.step:
            return
        trainer.loss  # noqa: B018  raises DivergenceError before a bad state is written
        began = time.perf_counter()
        settings = self.settings(trainer) if callable(self.settings) else self.settings
        checkpoint.save(self.path, trainer.model, trainer.optimizer, seed=trainer.seed, settings=settings)
        self.saved_step = trainer.step
        for action in self.then:
            action(trainer)
        self.last_save = (trainer.train_seconds, time.perf_counter() - began)

    def end(self, trainer, error) -> None:
        if not _saves_at_end(trainer, error):
            return
        try:
            self.save(trainer)
        except DivergenceError:
            pass


def _host_copies(state: dict) -> dict:
    """``state``'s arrays copied into the host's memory (off a GPU, or copied on the host), the
    rest (the optimizer's step) as it is."""
    return {name: _host_copy(value) if hasattr(value, "shape") else value for name, value in state.items()}


def _host_copy(array):
    host = to_host(array)  # a copy off a GPU; the array itself on the host
    return host.copy() if host is array else host


class Rollback(Callback):
    """Remembers the model and optimizer state, so that a run whose loss diverges can
    :meth:`restore` it and go on: each state ``checkpointer`` writes (read back from its file on
    restore, so that nothing is copied in memory: a 12.6 MP picture's spline level and Adam's
    moments are 450 MB), or, without one, the state when ``trigger`` fires (copied in memory).
    :meth:`remember` copies the state it is given in memory (the run's first, say).
    """

    def __init__(self, trigger=None, checkpointer: Checkpointer | None = None):
        super().__init__(1)
        self.trigger, self.checkpointer = trigger, checkpointer
        self.model_state = self.optimizer_state = None
        self.on_disk = False

    def remember(self, trainer) -> None:
        self.model_state = self.optimizer_state = None  # the old copies go before the new ones are made
        # In the host's memory: on a GPU, a second copy of a large model would take the run's room
        # (at 100 MP, the spline level is 192 MiB); a restore copies it back.
        self.model_state = _host_copies(trainer.model.named_arrays())
        self.optimizer_state = _host_copies(trainer.optimizer.state_dict(copy=False))
        self.on_disk = False

    def step(self, trainer) -> None:
        if self.checkpointer is not None:
            if self.checkpointer.saved_step == trainer.step:  # it has just written this state
                self.model_state = self.optimizer_state = None
                self.on_disk = True
        elif self.trigger(trainer):
            trainer.loss  # noqa: B018  never remember a diverged state
            self.remember(trainer)

    def restore(self, trainer) -> None:
        if self.on_disk:
            saved = checkpoint.load(self.checkpointer.path)
            trainer.model.load_state_dict(saved.model.named_arrays())  # copied in: no copy of its own
            trainer.optimizer.load_state_dict({"step": saved.step, **saved.optimizer_state})
            return
        trainer.model.load_state_dict(self.model_state)
        trainer.optimizer.load_state_dict(self.optimizer_state)


#: Plain progress lines (a log, not a terminal) come at most this often, in seconds.
LINE_SECONDS = 1.0


class Progress(Callback):
    """A tqdm bar on a terminal; plain lines otherwise or with ``plain``: about ten per run, at
    most one every :data:`LINE_SECONDS`.

    A run given a ``budget`` (seconds of training in all, ``spent`` of them before this run: a
    timed fit, whose step count is an estimate revised as it goes) counts in seconds, so that
    its total never jumps; else in steps, to ``total``.  ``describe(trainer) -> str``, when
    given, adds to each update (a PSNR, say).  The loss is read back only for an update, and
    on a GPU only at a step where the trainer's read is due (about once a second).
    """

    def __init__(self, total: int, start: int = 0, *, plain: bool, describe=None, stream=None,
                 budget: float | None = None, spent: float = 0.0):
        self.total, self.plain, self.stream = total, plain, stream or sys.stderr
        self.describe, self.budget = describe, budget
        # A step's check is a comparison or two; the loss is read only for an update.
        super().__init__(1 if budget is not None else max(1, total // 10) if plain else max(1, total // 200))
        self.last_line = -LINE_SECONDS  # when the last plain line came (time.monotonic)
        self.waiting = False  # an update put off until the trainer's read falls due (a GPU)
        self.next_at = spent  # a budget's next update, in seconds of training
        self.bar = None
        if not plain:
            from tqdm import tqdm

            if budget is None:
                self.bar = tqdm(total=total, initial=start, unit="step", dynamic_ncols=True, file=self.stream,
                                bar_format="{l_bar}{bar}| {n_fmt}/{total_fmt} [{elapsed}<{remaining}, "
                                           "{rate_fmt}{postfix}]")
            else:
                self.bar = tqdm(total=round(budget, 1), initial=round(spent, 1), unit="s", dynamic_ncols=True,
                                file=self.stream, bar_format="{l_bar}{bar}| {n:.0f}/{total:.0f} s of training "
                                                             "[{elapsed}{postfix}]")

    def step(self, trainer) -> None:
        self.waiting = not trainer.read_due
        if not self.waiting:
            self._update(trainer)

    def due(self, trainer) -> None:
        if self.waiting:
            self.waiting = False
            self._update(trainer)

    def _update(self, trainer) -> None:
        if self.budget is not None:
            if trainer.train_seconds < self.next_at:
                return
            self.next_at = trainer.train_seconds + self.budget / (10 if self.plain else 200)
        if self.plain and time.monotonic() - self.last_line < LINE_SECONDS:
            return
        loss = trainer.loss
        parts = [self.describe(trainer)] if self.describe else []
        if self.bar is not None:
            if self.budget is None:
                self.bar.update(trainer.step - self.bar.n)
            else:
                self.bar.update(min(round(trainer.train_seconds, 1), self.bar.total) - self.bar.n)
                parts.insert(0, f"step {trainer.step:,}")
            self.bar.set_postfix_str(", ".join([f"loss {loss:.3g}", *parts, f"lr {trainer.last_lr:.2g}"]),
                                     refresh=False)
        else:
            self.last_line = time.monotonic()
            rate = trainer.step / trainer.train_seconds if trainer.train_seconds else 0.0
            where = f"step {trainer.step:,}" + (f"/{self.total:,}" if self.budget is None else "")
            seconds = f"{trainer.train_seconds:.1f}" + (f"/{self.budget:g}" if self.budget is not None else "")
            print("  ".join([where, f"loss {loss:.4g}", *parts, f"lr {trainer.last_lr:.2g}", f"{rate:.1f} steps/s",
                             f"{seconds} s"]), file=self.stream, flush=True)

    def end(self, trainer, error) -> None:
        if isinstance(error, DivergenceError):
            return  # the run may roll back and go on; whoever gives up closes the bar
        if self.bar is not None and error is None:
            self.bar.update((trainer.step if self.budget is None else min(round(trainer.train_seconds, 1),
                                                                           self.bar.total)) - self.bar.n)
        self.close()

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
