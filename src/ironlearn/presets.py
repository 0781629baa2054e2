"""Image-fitting presets: a network and the training settings that suit it, sized from the image.

Each preset maps ``(channels, width_px, height_px, options)`` to a model, and
carries the learning rates and batch size that work for it, so a user never has
to tune w0, sigma or levels; ``options`` (from ``--width``, ``--depth``, ...)
override what the preset would choose.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from .nn import presets as nets


@dataclass(frozen=True)
class Preset:
    """How to fit an image with one kind of network."""

    name: str
    summary: str
    build: Callable  # (channels, width_px, height_px, options: dict, rng) -> Sequential
    lr: float
    lr_min: float
    batch_size: int | None = None  # None: full batch
    options: tuple = ()  # names of the options this preset reads
    defaults: dict = field(default_factory=dict)

    def resolve(self, options: dict) -> dict:
        """The preset's options with the user's (non-None) values on top."""
        unknown = [k for k, v in options.items() if v is not None and k not in self.options]
        if unknown:
            raise ValueError(f"--{unknown[0].replace('_', '-')} does not apply to --model {self.name} "
                             f"(it takes: {', '.join('--' + o.replace('_', '-') for o in self.options) or 'none'})")
        return {**self.defaults, **{k: v for k, v in options.items() if v is not None}}


def _siren(channels, width_px, height_px, o, rng):
    return nets.siren(2, channels, width=o["width"], depth=o["depth"], w0=o["w0"], rng=rng)


def _mlp(channels, width_px, height_px, o, rng):
    return nets.mlp(2, channels, width=o["width"], depth=o["depth"], activation="relu", rng=rng)


def _classic(channels, width_px, height_px, o, rng):
    return nets.classic(2, channels, rng=rng)


PRESETS = {
    "siren": Preset("siren", "sine network (SIREN), w0 = 30", _siren, lr=1e-3, lr_min=1e-5, batch_size=8192,
                    options=("width", "depth", "w0"), defaults={"width": 128, "depth": 3, "w0": 30.0}),
    "mlp": Preset("mlp", "ReLU network on raw coordinates (a baseline)", _mlp, lr=1e-3, lr_min=1e-5,
                  batch_size=8192, options=("width", "depth"), defaults={"width": 128, "depth": 3}),
    "classic": Preset("classic", "the original Iron Learn network (tanh, 99k parameters)", _classic,
                      lr=1e-3, lr_min=1e-5, batch_size=8192),
}
DEFAULT_PRESET = "siren"
