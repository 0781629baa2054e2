"""Optimizers (SGD, Adam) and learning-rate schedules."""

from .optimizers import OPTIMIZERS, SGD, Adam, Optimizer
from .schedules import Constant, Cosine, constant, cosine

__all__ = ["OPTIMIZERS", "SGD", "Adam", "Constant", "Cosine", "Optimizer", "constant", "cosine"]
