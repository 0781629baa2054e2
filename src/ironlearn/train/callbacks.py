"""Interval callbacks: everything a training run does besides training.

A callback runs ``step(trainer)`` every ``every`` steps and ``end(trainer, error)``
once when :meth:`Trainer.run` returns or raises (``error`` is the exception, or
None).  Only callbacks read the loss back to the host.
"""

from __future__ import annotations

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

    def end(self, trainer, error) -> None:
        pass


class LambdaCallback(Callback):
    """Calls ``fn(trainer)`` every ``every`` steps."""

    def __init__(self, every: int, fn):
        super().__init__(every)
        self.fn = fn

    def step(self, trainer) -> None:
        self.fn(trainer)


class History(Callback):
    """Records ``(step, loss, lr, train_seconds)`` rows every ``every`` steps and at the end."""

    def __init__(self, every: int = 10):
        super().__init__(every)
        self.rows: list[dict] = []

    def step(self, trainer) -> None:
        if not (self.rows and self.rows[-1]["step"] == trainer.step):
            self.rows.append(self.row(trainer))

    def row(self, trainer) -> dict:
        """One record; subclasses add columns."""
        return {"step": trainer.step, "loss": trainer.loss, "lr": trainer.lr, "seconds": trainer.train_seconds}

    def end(self, trainer, error) -> None:
        if error is None and trainer.step > 0:
            self.step(trainer)


class Checkpointer(Callback):
    """Saves the model and optimizer to ``path`` every ``every`` steps and at the end.

    Nothing is saved once the loss is NaN/inf, so the file on disk is always the
    last good state.  ``settings`` (a dict, or a callable ``trainer -> dict``) is
    stored in the checkpoint's metadata.
    """

    def __init__(self, path, every: int = 1000, *, settings=None, save_on_error: bool = True):
        super().__init__(every)
        self.path, self.settings, self.save_on_error = path, settings, save_on_error
        self.saved_step = None

    def step(self, trainer) -> None:
        if self.saved_step == trainer.step:
            return
        trainer.loss  # noqa: B018  raises DivergenceError before a bad state is written
        settings = self.settings(trainer) if callable(self.settings) else self.settings
        checkpoint.save(self.path, trainer.model, trainer.optimizer, seed=trainer.seed, settings=settings)
        self.saved_step = trainer.step

    def end(self, trainer, error) -> None:
        if trainer.step == 0 or isinstance(error, (DivergenceError, checkpoint.CheckpointError)):
            return
        if error is not None and not (self.save_on_error and isinstance(error, KeyboardInterrupt)):
            return
        try:
            self.step(trainer)
        except DivergenceError:
            pass
