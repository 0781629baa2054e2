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
from .nn.encodings import HashGrid


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


def _fourier(channels, width_px, height_px, o, rng):
    return nets.fourier(2, channels, frequencies=o["frequencies"], sigma=o["sigma"] or _fourier_sigma(width_px, height_px),
                        width=o["width"], depth=o["depth"], rng=rng)


def _fourier_sigma(width_px: int, height_px: int) -> float:
    """Projection scale from the image size: about one cycle per 100 pixels of the longest side
    (in cycles per unit of the [-1, 1] coordinates), between 1 and 10."""
    return float(min(10.0, max(1.0, max(width_px, height_px) / 100)))


def hashgrid_size(width_px: int, height_px: int, channels: int, options: dict) -> dict:
    """Grid settings for an image: the finest level at the image's resolution, and the largest
    table (a power of two per level) that keeps the whole model within the pixel count."""
    finest = options["finest"] or max(width_px, height_px)
    coarsest = options["coarsest"] or max(2, min(16, finest // 16))
    levels = options["levels"] or (4 if finest >= 4 * coarsest else 2)
    features = options["features"] or 2
    sized = {"levels": levels, "features": features, "coarsest": min(coarsest, finest), "finest": finest}
    if options["log2_table_size"]:
        return {**sized, "log2_table_size": options["log2_table_size"]}
    width, depth = options["width"], options["depth"]
    head = (levels * features + 1) * width + (depth - 1) * (width + 1) * width + (width + 1) * channels
    budget = width_px * height_px - head
    for log2_size in range(20, 6, -1):
        _, sizes = HashGrid.level_shapes(levels, log2_size, sized["coarsest"], finest)
        if sum(sizes) * features <= budget:
            return {**sized, "log2_table_size": log2_size}
    return {**sized, "log2_table_size": 6}


def _hashgrid(channels, width_px, height_px, o, rng):
    grid = hashgrid_size(width_px, height_px, channels, o)
    return nets.hashgrid(2, channels, **grid, width=o["width"], depth=o["depth"], rng=rng)


PRESETS = {
    "siren": Preset("siren", "sine network (SIREN), w0 = 30", _siren, lr=1e-3, lr_min=1e-5, batch_size=8192,
                    options=("width", "depth", "w0"), defaults={"width": 128, "depth": 3, "w0": 30.0}),
    "mlp": Preset("mlp", "ReLU network on raw coordinates (a baseline)", _mlp, lr=1e-3, lr_min=1e-5,
                  batch_size=8192, options=("width", "depth"), defaults={"width": 128, "depth": 3}),
    "classic": Preset("classic", "the original Iron Learn network (tanh, 99k parameters)", _classic,
                      lr=1e-3, lr_min=1e-5, batch_size=8192),
}
PRESETS["fourier"] = Preset(
    "fourier", "random Fourier features + ReLU network", _fourier, lr=2e-3, lr_min=2e-5, batch_size=16384,
    options=("width", "depth", "frequencies", "sigma"),
    defaults={"width": 64, "depth": 2, "frequencies": 64, "sigma": None})
PRESETS["hashgrid"] = Preset(
    "hashgrid", "multiresolution hash grid + two small ReLU layers", _hashgrid, lr=2e-2, lr_min=2e-4,
    options=("width", "depth", "levels", "features", "log2_table_size", "coarsest", "finest"),
    defaults={"width": 32, "depth": 2, "levels": None, "features": None, "log2_table_size": None,
              "coarsest": None, "finest": None})
DEFAULT_PRESET = "hashgrid"
# The default first, then the rest from fastest-learning to the baselines (the order --help lists).
PRESETS = {name: PRESETS[name] for name in ("hashgrid", "siren", "fourier", "mlp", "classic")}
