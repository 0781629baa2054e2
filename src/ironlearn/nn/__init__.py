"""Layers, losses, the Sequential container and model presets."""

from .encodings import LOG2_TABLE_SIZES, HashGrid
from .fourier import FourierFeatures
from .layers import ACTIVATIONS, LAYERS, Layer, Linear, ReLU, Sigmoid, Sine, Tanh, register
from .losses import bce, mse
from .model import Sequential
from .presets import classic, fourier, hashgrid, mlp, siren

__all__ = [
    "ACTIVATIONS", "FourierFeatures", "HashGrid", "LAYERS", "LOG2_TABLE_SIZES", "Layer", "Linear", "ReLU",
    "Sequential", "Sigmoid", "Sine", "Tanh", "bce", "classic", "fourier", "hashgrid", "mlp", "mse", "register",
    "siren",
]
