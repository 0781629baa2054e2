"""Learning-rate schedules: callables ``step -> lr``, validated when built.

Build them with :func:`constant`, :func:`cosine` or :func:`warmup_cosine`; the
dataclasses are their types (and what a checkpoint's ``config()`` rebuilds).

A schedule holds no position of its own: the optimizer owns the step counter
and saves it, so a resumed run asks the schedule for the same step it would
have reached without the interruption (the original project restarted at
``lr_max`` after every resume).
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass


@dataclass(frozen=True)
class Constant:
    """The same learning rate at every step."""

    lr: float

    def __post_init__(self):
        if not (self.lr > 0 and math.isfinite(self.lr)):
            raise ValueError(f"learning rate must be a positive number (got {self.lr})")

    def __call__(self, step: int) -> float:
        return self.lr

    def config(self) -> dict:
        return {"type": "constant", **asdict(self)}


@dataclass(frozen=True)
class Cosine:
    """Linear warm-up to ``lr_max`` over ``warmup_steps``, then cosine annealing
    to ``lr_min`` at ``total_steps``; ``lr_min`` after that.

    ``lr(s) = lr_min + (lr_max - lr_min) * (1 + cos(pi * (s - warmup) / (total - warmup))) / 2``
    """

    lr_max: float
    lr_min: float
    total_steps: int
    warmup_steps: int = 0

    def __post_init__(self):
        if not (self.lr_max > 0 and math.isfinite(self.lr_max)):
            raise ValueError(f"lr_max must be a positive number (got {self.lr_max})")
        if not (0 <= self.lr_min <= self.lr_max):
            raise ValueError(f"lr_min must lie in [0, lr_max] (got {self.lr_min} with lr_max {self.lr_max})")
        if self.total_steps < 1:
            raise ValueError(f"total_steps must be at least 1 (got {self.total_steps})")
        if not 0 <= self.warmup_steps < self.total_steps:
            raise ValueError(f"warmup_steps must lie in [0, total_steps) (got {self.warmup_steps})")

    def __call__(self, step: int) -> float:
        if step < self.warmup_steps:
            return self.lr_max * ((step + 1) / self.warmup_steps)  # so the peak is lr_max exactly
        progress = min(step - self.warmup_steps, self.decay_steps) / self.decay_steps
        return self.lr_min + 0.5 * (self.lr_max - self.lr_min) * (1.0 + math.cos(math.pi * progress))

    @property
    def decay_steps(self) -> int:
        return self.total_steps - self.warmup_steps

    def config(self) -> dict:
        return {"type": "cosine", **asdict(self)}


def constant(lr: float) -> Constant:
    """``lr`` at every step."""
    return Constant(float(lr))


def cosine(lr_max: float, lr_min: float, total_steps: int, warmup_steps: int = 0) -> Cosine:
    """Linear warm-up over ``warmup_steps``, then cosine annealing from ``lr_max`` to ``lr_min``
    at ``total_steps`` (see :class:`Cosine`)."""
    return Cosine(float(lr_max), float(lr_min), int(total_steps), int(warmup_steps))


def default_warmup_steps(total_steps: int) -> int:
    """Warm-up length for a run of ``total_steps``: 2% of it, kept within 50..100 steps,
    but never more than a quarter of the run."""
    # At least 50 warm-up steps (a quarter of very short runs): Adam's first steps at the full rate
    # cost a 5 s hash-grid fit of the drawing several dB (measured: docs/benchmark-log.md,
    # '2026-11-22, 552a0f6: at least 50 warm-up steps').
    return min(total_steps // 4, max(50, min(total_steps // 50, 100)))


def warmup_cosine(lr_max: float, lr_min: float, total_steps: int) -> Cosine:
    """:func:`cosine` with :func:`default_warmup_steps`: what ``ironlearn fit`` trains with."""
    return cosine(lr_max, lr_min, total_steps, default_warmup_steps(total_steps))


def from_config(config: dict):
    """Rebuild a schedule from its :meth:`config`."""
    config = dict(config)
    kind = config.pop("type")
    return {"constant": constant, "cosine": cosine}[kind](**config)

