"""Layers, losses, the Sequential container and model presets."""

from .layers import ACTIVATIONS, LAYERS, Layer, Linear, ReLU, Sigmoid, Sine, Tanh, register
from .losses import LOSSES, bce, mse
from .model import Sequential
from .presets import classic, mlp, siren

__all__ = [
    "ACTIVATIONS", "LAYERS", "LOSSES", "Layer", "Linear", "ReLU", "Sequential", "Sigmoid", "Sine",
    "Tanh", "bce", "classic", "mlp", "mse", "register", "siren",
]
