"""Optimizers (SGD, Adam) and learning-rate schedules."""

from .optimizers import OPTIMIZERS, SGD, Adam, Optimizer
from .schedules import constant, cosine, default_warmup_steps, warmup_cosine

__all__ = ["OPTIMIZERS", "SGD", "Adam", "Optimizer", "constant", "cosine", "default_warmup_steps", "warmup_cosine"]
