"""Optimizers (SGD, Adam) and learning-rate schedules."""

from .optimizers import OPTIMIZERS, SGD, Adam, Optimizer
from .schedules import Constant, Cosine, constant, cosine, warmup_cosine, warmup_steps

__all__ = ["OPTIMIZERS", "SGD", "Adam", "Constant", "Cosine", "Optimizer", "constant", "cosine", "warmup_cosine", "warmup_steps"]
