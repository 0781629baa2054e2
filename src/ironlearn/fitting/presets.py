"""Image-fitting presets: a network and the training settings that suit it, sized from the picture.

Every option a preset reads is declared once, in :data:`OPTIONS`, with its type,
its name on the command line and its help; each preset states its defaults.  The command's flags and
their help text, :class:`~ironlearn.fitting.FitOptions` and the resume check are
all derived from these two places.

Sizing is pure: :meth:`Preset.resolve` turns the user's options and the picture's
size into the concrete numbers the network is built from (and saved with).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable

from ..errors import Note, OptionError
from ..nn import presets as nets
from ..nn.encodings import LOG2_TABLE_SIZES
from ..nn.splines import INTERPOLATIONS
from .regimes import (COLOUR_DETAIL, GRAY_SPLINE, PIXEL_SPLINE, PIXEL_SPLINE_PIXELS, WHOLE_FINEST_LOG2,
                      WHOLE_FINEST_SIDE, grid_filter, hashgrid_size)


@dataclass(frozen=True)
class Option:
    """One model option: ``name`` in the code and the saved run, ``command`` on the command line
    (default ``name`` with hyphens), whose :attr:`flag` is ``--`` and that.  ``help`` names another
    option through a ``{name}`` placeholder, as :class:`~ironlearn.errors.OptionError` does."""

    name: str
    type: type
    help: str
    command: str = ""
    metavar: str | None = None
    limit: float | None = None  # an upper bound that catches typos (an extra zero or three)
    zero: bool = False  # whether 0 is valid (it means "none"); otherwise values start above it
    choices: range | tuple | None = None  # the only valid values, when they are few

    def __post_init__(self):
        if not self.command:
            object.__setattr__(self, "command", self.name.replace("_", "-"))

    @property
    def flag(self) -> str:
        """The command's flag (``--table-log2``)."""
        return "--" + self.command


@dataclass(frozen=True)
class Auto:
    """A default chosen from the picture; ``rule`` says how, for ``--help``."""

    rule: str


OPTIONS = {o.name: o for o in (
    Option("width", int, "hidden units per layer", limit=4096),
    Option("depth", int, "hidden layers (0: none, a linear head; the hash grid's then ends in a sigmoid)",
           limit=64, zero=True),
    Option("w0", float, "sine frequency", limit=1e4),
    Option("sigma", float, "projection scale", limit=1e4),
    Option("frequencies", int, "sin/cos pairs", limit=4096),
    Option("levels", int, "grid levels", limit=32),
    Option("features", int, "features per vertex", limit=16),
    Option("log2_table_size", int, "2**T table rows per level", command="table-log2", metavar="T",
           choices=LOG2_TABLE_SIZES),
    Option("coarsest", int, "cells across the first level", limit=65536),
    Option("finest", int, "cells across the last level", limit=65536),
    Option("finest_y", int, "cells down the last level; the levels above keep its ratio to {finest} "
           "(0: as many as across)",
           metavar="N", limit=65536, zero=True),
    Option("vertices", str, "where each level's vertices sit: on cell centres, one per pixel at a level as "
           "fine as the picture, or on cell corners (Instant-NGP's layout)", choices=("centres", "corners")),
    Option("interpolation", str, "how the grid is read between its vertices: linear (the 4 around a point) or "
           "bspline (the 16 around it, a smooth cubic B-spline)", choices=tuple(INTERPOLATIONS)),
    Option("detail", int, "vertices a side of one more level beside the pyramid: dense, of one feature, read by "
           "a B-spline (0: none)", metavar="N", limit=8192, zero=True),
)}


@dataclass(frozen=True)
class Preset:
    """How to fit a picture with one kind of network.

    ``defaults`` names the options this preset reads, each with a value or an
    :class:`Auto` rule; ``size`` fills the automatic ones from the picture;
    ``network`` builds the model from the resolved options.
    """

    name: str
    summary: str
    network: Callable  # (channels, resolved options: dict, rng) -> Sequential
    lr: float
    lr_min: float
    batch_size: int | None = None  # None: full batch
    defaults: dict = field(default_factory=dict)
    # Targets between pixel centres (image.sampling.FILTERS), or a function of the resolved options
    # and the picture's mode.
    filter: str | Callable = "lanczos"
    size: Callable | None = None  # (width_px, height_px, mode, options) -> options, Auto ones filled

    @property
    def options(self) -> tuple:
        return tuple(self.defaults)

    def resolve(self, options: dict, width_px: int, height_px: int, mode: str) -> dict:
        """The options the network is built from: the user's (non-None) values over the
        preset's defaults, automatic ones sized from the picture (``mode``: binary, gray or rgb).

        Raises ValueError for an option this preset does not take.
        """
        given = {k: v for k, v in options.items() if v is not None}
        unknown = [k for k in given if k not in self.defaults]
        if unknown:
            takes = ", ".join("{" + o + "}" for o in self.defaults) or "none"
            raise OptionError(f"{{{unknown[0]}}} does not apply to {{model}} {self.name} (it takes: {takes})",
                              unknown[0], "model", *self.defaults)
        merged = {k: given.get(k, None if isinstance(v, Auto) else v) for k, v in self.defaults.items()}
        return self.size(width_px, height_px, mode, merged) if self.size else merged

    def default_filter(self, resolved: dict, mode: str) -> str:
        """The filter a run uses when none is given, for ``resolved`` options (from :meth:`resolve`)
        and the picture's ``mode``."""
        return self.filter(resolved, mode) if callable(self.filter) else self.filter

    def build(self, channels: int, resolved: dict, rng):
        """The untrained network for ``resolved`` options (from :meth:`resolve`)."""
        return self.network(channels, resolved, rng)


def fourier_sigma(width_px: int, height_px: int) -> float:
    """Projection scale from the picture size: about one cycle per 100 pixels of the longest side
    (in cycles per unit of the [-1, 1] coordinates), between 1 and 10."""
    return float(min(10.0, max(1.0, max(width_px, height_px) / 100)))


def _size_fourier(width_px, height_px, mode, o):
    return {**o, "sigma": o["sigma"] or fourier_sigma(width_px, height_px)}


def _grid_options(o: dict) -> dict:
    """The hash grid's network arguments from its resolved options."""
    return {**{k: v for k, v in o.items() if k != "vertices"}, "centred": o["vertices"] == "centres"}


PRESETS = {p.name: p for p in (
    Preset("hashgrid", "multiresolution hash grid + two small ReLU layers",
           lambda c, o, rng: nets.hashgrid(2, c, **_grid_options(o), rng=rng), lr=2e-2, lr_min=2e-4, batch_size=1 << 16,
           defaults={"width": 32,
                     "depth": Auto(f"2; {PIXEL_SPLINE.when}: 0, a linear layer and a sigmoid"),
                     "levels": Auto(f"4, or 2 when the finest level is under 4x the coarsest; {GRAY_SPLINE.when} "
                                    f"and {PIXEL_SPLINE.when}: 1, read by a B-spline; {COLOUR_DETAIL.when}: 2"),
                     "features": Auto(f"2; {GRAY_SPLINE.when}: 1; {PIXEL_SPLINE.when}: one a channel"),
                     "log2_table_size": Auto(f"one that holds the finest level whole, up to {WHOLE_FINEST_LOG2} "
                                             f"(pictures up to {WHOLE_FINEST_SIDE} px a side); above, the largest "
                                             "that keeps the parameters within the pixel count"),
                     "coarsest": Auto("the finest / 16, between 2 and 16; a single level: the finest"),
                     "finest": Auto(f"the picture's longest side; {GRAY_SPLINE.when}: as many vertices as a "
                                    f"parameter a pixel allows; {PIXEL_SPLINE.when}: the picture's width (past "
                                    f"{PIXEL_SPLINE_PIXELS:,} pixels, {PIXEL_SPLINE_PIXELS:,} vertices in its "
                                    "proportions)"),
                     "finest_y": Auto(f"as many as across; {PIXEL_SPLINE.when}: the picture's height (past "
                                      f"{PIXEL_SPLINE_PIXELS:,} pixels, in its proportions)"),
                     "vertices": Auto(f"centres for {GRAY_SPLINE.when} and {PIXEL_SPLINE.when}; else corners"),
                     "interpolation": Auto(f"bspline for {GRAY_SPLINE.when} and {PIXEL_SPLINE.when}; else linear"),
                     "detail": Auto(f"{COLOUR_DETAIL.when}: as many vertices as a parameter a pixel allows beside "
                                    "two levels of 16 cells and a quarter of the picture's; else 0")},
           filter=grid_filter, size=hashgrid_size),
    Preset("siren", "sine network (SIREN), w0 = 30", lambda c, o, rng: nets.siren(2, c, **o, rng=rng),
           lr=1e-3, lr_min=1e-5, batch_size=8192, defaults={"width": 128, "depth": 3, "w0": 30.0}),
    Preset("fourier", "random Fourier features + ReLU network", lambda c, o, rng: nets.fourier(2, c, **o, rng=rng),
           lr=2e-3, lr_min=2e-5, batch_size=16384,
           defaults={"width": 64, "depth": 2, "frequencies": 64,
                     "sigma": Auto("one cycle per 100 pixels of the longest side, 1 to 10")},
           size=_size_fourier),
    Preset("mlp", "ReLU network on raw coordinates (a baseline)", lambda c, o, rng: nets.mlp(2, c, **o, rng=rng),
           lr=1e-3, lr_min=1e-5, batch_size=8192, defaults={"width": 128, "depth": 3}),
    Preset("classic", "the original Iron Learn network (tanh, 99k parameters)",
           lambda c, o, rng: nets.classic(2, c, rng=rng), lr=1e-3, lr_min=1e-5, batch_size=8192),
)}
#: The first preset is the default; the rest go from fastest-learning to the baselines (--help's order).
DEFAULT_PRESET = "hashgrid"


def option_help(name: str, name_of=str) -> str:
    """``--help`` text for a model option: what it is, which presets take it, and their defaults;
    another option it names, by ``name_of(option)`` (the command's: its flag)."""
    takers = [p for p in PRESETS.values() if name in p.defaults]
    defaults = {p.name: p.defaults[name] for p in takers}
    if len(set(map(str, defaults.values()))) == 1:
        value = next(iter(defaults.values()))
        default = value.rule if isinstance(value, Auto) else f"{value:g}"
    else:
        default = ", ".join(f"{p} {v.rule if isinstance(v, Auto) else format(v, 'g')}" for p, v in defaults.items())
    where = "all but " + ", ".join(p for p in PRESETS if p not in defaults) if len(takers) > 2 else \
        " and ".join(defaults)
    return f"{where}: {Note(OPTIONS[name].help, *OPTIONS).worded(name_of)} (default: {default})"
