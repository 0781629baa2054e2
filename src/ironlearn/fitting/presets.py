"""Image-fitting presets: a network and the training settings that suit it, sized from the picture.

Every option a preset reads is declared once, in :data:`OPTIONS`, with its type,
its flag and its help; each preset states its defaults.  The command's flags and
their help text, :class:`~ironlearn.fitting.FitOptions` and the resume check are
all derived from these two places.

Sizing is pure: :meth:`Preset.resolve` turns the user's options and the picture's
size into the concrete numbers the network is built from (and saved with).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Callable

from ..nn import presets as nets
from ..nn.encodings import INTERPOLATIONS, LOG2_TABLE_SIZES, HashGrid, dense_log2_table_size


@dataclass(frozen=True)
class Option:
    """One model option: ``--flag`` on the command line, ``name`` in the code and the saved run."""

    name: str
    type: type
    help: str
    flag: str = ""
    metavar: str | None = None
    limit: float | None = None  # an upper bound that catches typos (an extra zero or three)
    zero: bool = False  # whether 0 is valid (it means "none"); otherwise values start above it
    choices: range | tuple | None = None  # the only valid values, when they are few

    def __post_init__(self):
        if not self.flag:
            object.__setattr__(self, "flag", "--" + self.name.replace("_", "-"))


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
    Option("log2_table_size", int, "2**T table rows per level", flag="--table-log2", metavar="T",
           choices=LOG2_TABLE_SIZES),
    Option("coarsest", int, "cells across the first level", limit=65536),
    Option("finest", int, "cells across the last level", limit=65536),
    Option("finest_y", int, "cells down the last level; the levels above keep its ratio to --finest "
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
    # Targets between pixel centres (image.sampling.FILTERS), or a function of the resolved options.
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
            takes = ", ".join(OPTIONS[o].flag for o in self.defaults) or "none"
            raise ValueError(f"{OPTIONS[unknown[0]].flag} does not apply to --model {self.name} (it takes: {takes})")
        merged = {k: given.get(k, None if isinstance(v, Auto) else v) for k, v in self.defaults.items()}
        return self.size(width_px, height_px, mode, merged) if self.size else merged

    def default_filter(self, resolved: dict) -> str:
        """The filter a run uses when none is given, for ``resolved`` options (from :meth:`resolve`)."""
        return self.filter(resolved) if callable(self.filter) else self.filter

    def build(self, channels: int, resolved: dict, rng):
        """The untrained network for ``resolved`` options (from :meth:`resolve`)."""
        return self.network(channels, resolved, rng)


def fourier_sigma(width_px: int, height_px: int) -> float:
    """Projection scale from the picture size: about one cycle per 100 pixels of the longest side
    (in cycles per unit of the [-1, 1] coordinates), between 1 and 10."""
    return float(min(10.0, max(1.0, max(width_px, height_px) / 100)))


def _size_fourier(width_px, height_px, mode, o):
    return {**o, "sigma": o["sigma"] or fourier_sigma(width_px, height_px)}


def grid_vertices(mode: str, finest: int) -> str:
    """Where the hash grid's vertices sit by default (see :class:`~ironlearn.nn.HashGrid`):
    on cell centres for gray pictures up to 256 px a side (trained whole), where the finest
    level then holds a vertex per pixel; on corners otherwise.

    Measured at equal steps (700; fit PSNR, centres vs corners): camera at 256 41.11 vs 38.73 dB,
    coffee and astronaut in gray 40.32 vs 39.88 and 41.98 vs 41.56 (pixels only); in 30 s, camera
    42.53 vs 40.15 (medians of three).  Corners win for colour (astronaut 35.03 vs 35.62, chelsea
    38.37 vs 38.91), for a sampled 2048x1536 gray photograph (300 steps: 28.33 vs 29.12) and for
    the binary drawing in short runs (250 steps: 40.52 vs 45.56; ahead only from about 1,000).
    """
    return "centres" if mode == "gray" and finest <= 256 else "corners"


def grid_interpolation(mode: str, finest: int, spline_side: int) -> str:
    """How the hash grid is read by default: a cubic B-spline for gray pictures up to 256 px a
    side, which then get one dense level of it (:func:`_one_spline_level`) with ``spline_side``
    vertices a side; bilinear otherwise, and where the budget would leave that square level under
    7/8 of the picture's longest side: a picture under about 100 px (its pixels are too few for
    the MLP and a level of a vertex per pixel both), or one much wider than tall.

    A gray picture's budget (a parameter per pixel) holds one scalar per pixel, once: a dense
    level of a vertex per pixel, less the MLP's share, where a pyramid of hashed levels shares
    rows between far-apart vertices.  Read by a B-spline, such a level is a smooth spline of the
    picture.  Measured on camera at 256 (700 steps, fit / 2x render against the true 512):
    four hashed bilinear levels (the default before) 41.26 / 29.29 dB; one dense B-spline level
    of 253x253 vertices 48.98 / 30.44 (bicubic upscaling: 30.13); the same level read bilinearly
    at 256: 55.03 / 29.67, B-spline at 256 (over budget) 62.66 / 30.57; gray coffee 41.49 -> 48.47
    and gray astronaut 41.67 -> 49.67 (pixels only), in steps a third shorter.  Colour would need
    three values a vertex, three times the budget (astronaut with one: 24.45 dB; it gets a detail
    level beside a coarse pyramid instead, :func:`grid_detail`), and the binary
    drawing keeps its hashed levels: at 197x197 vertices (its budget) its edges came out stepped
    at 8x, and 250 steps reached 42.51 dB against 45.56.
    """
    return "bspline" if mode == "gray" and finest <= 256 and spline_side >= 7 / 8 * finest else "linear"


def grid_detail(mode: str, longest: int, shortest: int, side: int) -> bool:
    """Whether a colour picture gets a detail level (:class:`~ironlearn.nn.HashGrid`'s ``detail``)
    of ``side`` vertices a side beside a coarse pyramid of two levels (16 cells a side and a
    quarter of the picture's): for colour pictures up to 256 px a side and up to twice as wide
    as tall (or tall as wide), where the budget leaves ``side`` at 7/8 of the shorter side or
    more (which sends pictures under about 140 px to the hashed pyramid).

    The detail level's one feature holds what the channels share, much as luma, smoothly (a
    B-spline), and the coarse pyramid what they do not, much as chroma; the MLP mixes them.
    Measured at equal steps (700; fit PSNR, and astronaut's 2x render against the true 512):
    the hashed four-level pyramid (the default before) 35.70 / 28.57 dB, a detail level of
    234 vertices beside two levels of 16 and 64 cells 37.40 / 30.12 (seed 1: 35.19 / 28.51
    against 37.59 / 30.11), in steps as long; chelsea 38.63 -> 42.05, coffee 35.44 -> 37.83.
    The pyramid's finest level at 32, 80, 96 or 128 cells, three or four levels, or two
    features on the detail level (a side of 166) all scored lower, the last 35.53.  Other
    pictures at 256x256 (detail level / pyramid): immunohistochemistry 38.20 / 35.11, hubble
    deep field 41.76 / 40.66, retina 42.82 / 42.15, colorwheel 51.64 / 51.48, rocket 39.38 /
    40.22 (the one loss).  The square level serves other shapes too: at 256x170 chelsea 40.41 /
    37.94, coffee 36.54 / 33.79, rocket at 170x256 38.20 / 38.61; at 256x128 (crops) chelsea
    38.34 / 36.33, astronaut 33.49 / 31.98.  Wider than 2:1 was not measured.
    """
    return (mode == "rgb" and longest <= 256 and longest <= 2 * shortest and side >= 7 / 8 * shortest)


#: The most vertices :func:`pixel_spline`'s level has: 2^24 (``--table-log2``'s limit), a vertex per
#: pixel up to 16.8 MP (4096x4096 or any shape of as many pixels), fewer past it
#: (:func:`spline_sides`).  Measured in 60 s: 4096x4096, 59.84 dB at 1.01 GB peak (the pyramid:
#: 28.55 dB at 0.57 GB), its table 201 MB; 4096x3072, 60.21 dB at 0.75 GB.
PIXEL_SPLINE_PIXELS = 1 << 24
#: Features a vertex of :func:`pixel_spline`'s level, by mode.
PIXEL_SPLINE_FEATURES = {"rgb": 3, "gray": 1}


def spline_sides(width_px: int, height_px: int) -> tuple[int, int]:
    """Vertices across and down of :func:`pixel_spline`'s level: one per pixel up to
    :data:`PIXEL_SPLINE_PIXELS` pixels; past it, as many as that many rows hold, in the picture's
    proportions (a vertex for every 1.73 x 1.73 pixels at 50 MP, 2.44 x 2.44 at 100 MP), where the
    pyramid (a bounded budget of samples: half a sample a pixel in 60 s at 50 MP) drew a blur.
    Measured (``benchmarks/any_size.py``, 60 s, tiled photographs): 8192x6144 (50 MP) 34.33 dB at
    1.06 GB peak, 10000x10000 31.19 dB at 1.35 GB; the pyramid had fitted 25.45 dB at 1.01 GB and
    24.70 at 1.35.  Lanczos downsampling and bicubic upscaling lose about that much (32.95 and
    30.13 dB): training takes the level a little further."""
    pixels = width_px * height_px
    if pixels <= PIXEL_SPLINE_PIXELS:
        return width_px, height_px
    scale = math.sqrt(PIXEL_SPLINE_PIXELS / pixels)
    across, down = max(1, math.floor(width_px * scale)), max(1, math.floor(height_px * scale))
    # A side clamped up to 1 (a picture over 2^24:1) leaves the longer one to give way.
    if across >= down:
        return min(across, PIXEL_SPLINE_PIXELS // down), down
    return across, min(down, PIXEL_SPLINE_PIXELS // across)


def pixel_spline(mode: str, width_px: int, height_px: int) -> bool:
    """Whether a photograph past the thumbnails' 256 px gets one dense level of a vertex per pixel
    (as many down as across the picture), read by a cubic B-spline and then by a linear layer and
    a sigmoid (:func:`_one_spline_level`), of :data:`PIXEL_SPLINE_FEATURES`, in colour or gray, of
    any shape; past :data:`PIXEL_SPLINE_PIXELS` pixels, with that many vertices in the picture's
    proportions (:func:`spline_sides`).  The level starts as the picture (resized to it, when
    smaller: :func:`~ironlearn.fitting.run.start_from_picture`).

    Read linearly, a pyramid's finest level of a vertex per pixel redraws between pixels much as
    bilinear upscaling does; read by a B-spline, a level of a vertex per pixel holds a spline of
    the picture, which redraws as a spline interpolation does (at 2x, about Lanczos upscaling).
    A ReLU MLP on it folds between pixels (dots and contour lines at 4x); a sigmoid of a linear
    mix keeps it a spline.  Measured with ``benchmarks/redraw_sets.py`` (fit PSNR / 2x redraw
    against the originals, median of four; pyramid -> this level): the sporco photographs at
    384x256, 10 s, 40.21 / 32.24 -> 90.74 / 34.24 dB (bicubic upscaling 32.82); the 512x512
    mosaics, 15 s, 40.55 / 30.56 -> 64.27 / 32.52 (bicubic 31.63); in gray 42.67 / 31.55 ->
    65.62 / 33.31 (bicubic 32.42).  Every picture redraws above bicubic upscaling.  With the ReLU
    MLP instead (three features, two in gray, a random start): photographs 41.25 / 32.45,
    mosaics 45.65 / 32.07, gray 68.03 / 33.14.

    Its vertices learn from their own pixels only, so from a random start (``--start random``)
    it wants many samples a pixel, and loses to the pyramid on large pictures in short runs (a
    1024x1024 tiled photograph, 15 s: 33.96 -> 32.32 dB; 2048x2048, 60 s: 32.74 -> 29.67).
    Started as the picture it has nothing to wait for: 1024x1024 in 15 s, 62.77 dB; 2048x2048,
    62.37 dB (the pyramid in 60 s: 35.16 and 33.84); 4096x3072 in 60 s, 60.20 dB (28.27);
    4096x4096 in 60 s, 59.84 dB (28.55).
    """
    return mode in PIXEL_SPLINE_FEATURES and max(width_px, height_px) > 256


def grid_filter(o: dict) -> str:
    """How a hash grid trains between pixel centres by default: on pixel centres only where it has
    a detail level, or a spline level of several features or a linear head (:func:`pixel_spline`),
    through Lanczos targets otherwise (:data:`~ironlearn.image.sampling.BETWEEN`).

    A colour thumbnail's detail level has fewer vertices a side than the picture has pixels, and
    its pyramid a cell for every 4 x 4 pixels: the pixels alone pin every vertex, so samples
    between them have no freedom left to constrain.  Measured on astronaut at 700 steps (fit / 2x
    against the true 512): 37.16 / 30.06 dB with one sample between for 16 pixels, 37.13 / 30.03
    on pixels only, in steps 16% shorter (30.8 against 36.8 ms); rocket 39.38 against 39.41.  Its
    4x render shows no pattern either way, even on a flat wall with the contrast stretched 6x.
    """
    spline = o.get("levels") == 1 and o.get("interpolation") == "bspline"
    pinned = spline and (o.get("features", 1) > 1 or o.get("depth") == 0)
    return "centres" if o.get("detail") or pinned else "lanczos"


def _head_parameters(inputs: int, o: dict, mode: str) -> int:
    """The MLP's parameters: ``inputs`` features in, ``o["depth"]`` layers of ``o["width"]``."""
    width, depth, channels = o["width"], o["depth"], 3 if mode == "rgb" else 1
    if depth == 0:
        return (inputs + 1) * channels
    return (inputs + 1) * width + (depth - 1) * (width + 1) * width + (width + 1) * channels


def _spline_side(width_px: int, height_px: int, mode: str, o: dict) -> int:
    """Vertices a side of the largest square level of ``o["features"] or 1`` features that keeps
    the model within the pixel count."""
    features = o["features"] or 1
    return math.isqrt(max(1, (width_px * height_px - _head_parameters(features, o, mode)) // features))


def _one_spline_level(o: dict, side: int, down: int = 0) -> dict:
    """One dense level of ``side`` vertices across and ``down`` down (0: as many) read by a
    B-spline, centred (the options given are kept)."""
    return {**o, "levels": 1, "features": o["features"] or 1, "coarsest": side, "finest": side, "finest_y": down,
            "log2_table_size": o["log2_table_size"] or dense_log2_table_size(side * (down or side)),
            "vertices": o["vertices"] or "centres",
            "interpolation": "bspline", "detail": 0}


def _coarse_pyramid_with_detail(width_px: int, height_px: int, mode: str, o: dict) -> dict:
    """Two dense levels (16 cells a side, and a quarter of the picture's) and a detail level of
    as many vertices as the rest of the pixel count allows (the options given are kept)."""
    finest = max(16, max(width_px, height_px) // 4)
    coarsest, levels, features = min(16, finest), 2 if finest > 16 else 1, o["features"] or 2
    vertices = o["vertices"] or "corners"
    log2_table_size = o["log2_table_size"] or dense_log2_table_size((finest + (vertices == "corners")) ** 2)
    pyramid = sum(HashGrid.level_shapes(levels, log2_table_size, coarsest, finest, vertices == "centres")[1])
    rest = width_px * height_px - pyramid * features - _head_parameters(levels * features + 1, o, mode)
    return {**o, "levels": levels, "features": features, "coarsest": coarsest, "finest": finest,
            "log2_table_size": log2_table_size, "vertices": vertices, "interpolation": o["interpolation"] or "linear",
            "detail": math.isqrt(max(rest, 0)), "finest_y": 0}


#: A pyramid's table holds its finest level whole (a row per vertex) where that takes at most
#: 2**WHOLE_FINEST_LOG2 rows (pictures up to WHOLE_FINEST_SIDE px a side); larger ones keep the table of one
#: parameter per pixel, their finest level hashed.  Collisions there do not train away in a short
#: fit, and Instant-NGP's hash (x not multiplied) lays them out as runs along rows: the horizontal
#: dashes of a redraw.  Four sporco photographs at 384x256, 10 s, fit PSNR / 2x redraw against their
#: 768x512 originals, median (bicubic upscaling 32.82): 2**14 rows (the budget's, six vertices a
#: row) 28.97 / 26.10 dB, 2**16 34.16 / 27.63, whole (2**18) 39.29 / 32.16, in as many steps.
WHOLE_FINEST_LOG2 = 23
WHOLE_FINEST_SIDE = math.isqrt(1 << WHOLE_FINEST_LOG2) - 1  # a corner grid of this many cells a side fits


def hashgrid_size(width_px: int, height_px: int, mode: str, o: dict) -> dict:
    """Grid settings for a picture: the finest level at the picture's resolution, and a table (a power
    of two rows per level) that holds that level whole where that takes at most
    2**:data:`WHOLE_FINEST_LOG2` rows, else the largest that keeps the whole model within the pixel
    count (the larger of the two for a small picture).  A gray
    picture up to 256 px a side gets one dense B-spline level instead (:func:`grid_interpolation`),
    and a colour one a coarse pyramid and a detail level (:func:`grid_detail`), unless levels, the
    finest level or the detail level are given."""
    longest = max(width_px, height_px)
    chosen = o["levels"] or o["finest"] or o["finest_y"] or o["coarsest"] or o["detail"] is not None
    a_vertex_per_pixel = not chosen and o["interpolation"] != "linear" and pixel_spline(mode, width_px, height_px)
    if o["depth"] is None:
        o = {**o, "depth": 0 if a_vertex_per_pixel else 2}
    if mode == "gray" and not chosen and o["interpolation"] != "linear":
        side = _spline_side(width_px, height_px, mode, o)
        if grid_interpolation(mode, longest, side) == "bspline":
            return _one_spline_level(o, side)
    if a_vertex_per_pixel:
        o = {**o, "features": o["features"] or PIXEL_SPLINE_FEATURES[mode]}
        across, down = spline_sides(width_px, height_px)
        return _one_spline_level(o, across, down if down != across else 0)
    if mode == "rgb" and not chosen:
        sized = _coarse_pyramid_with_detail(width_px, height_px, mode, o)
        if grid_detail(mode, longest, min(width_px, height_px), sized["detail"]):
            return sized
    o = {**o, "interpolation": o["interpolation"] or "linear", "detail": o["detail"] or 0, "finest_y": o["finest_y"] or 0}
    finest = o["finest"] or max(width_px, height_px)
    if o["coarsest"] and o["coarsest"] > finest:
        given = "--finest" if o["finest"] else "the finest level (the picture's longest side)"
        raise ValueError(f"--coarsest {o['coarsest']} is above {given}, {finest} cells; give a smaller "
                         "--coarsest" + ("" if o["finest"] else " or a larger --finest"))
    # One level is the finest, as --help says (a lone level is built at --coarsest).
    default_coarsest = finest if o["levels"] == 1 else max(2, min(16, finest // 16))
    coarsest = min(o["coarsest"] or default_coarsest, finest)
    levels = o["levels"] or (4 if finest >= 4 * coarsest else 2)
    features = o["features"] or 2
    vertices = o["vertices"] or grid_vertices(mode, finest)
    sized = {**o, "levels": levels, "features": features, "coarsest": coarsest, "finest": finest,
             "vertices": vertices}
    if o["log2_table_size"]:
        return sized
    budget = width_px * height_px - o["detail"] ** 2 - _head_parameters(levels * features + bool(o["detail"]), o, mode)
    fitting = [t for t in LOG2_TABLE_SIZES
               if sum(HashGrid.level_shapes(levels, t, coarsest, finest, vertices == "centres", o["finest_y"])[1])
               * features <= budget]
    corner = vertices == "corners"  # a vertex more along each axis
    # The finest level without collisions.
    whole = dense_log2_table_size((finest + corner) * (HashGrid.down(finest, finest, o["finest_y"]) + corner))
    budgeted = max(fitting, default=LOG2_TABLE_SIZES[0])
    return {**sized, "log2_table_size": max(budgeted, whole) if whole <= WHOLE_FINEST_LOG2 else budgeted}


def _grid_options(o: dict) -> dict:
    """The hash grid's network arguments from its resolved options."""
    return {**{k: v for k, v in o.items() if k != "vertices"}, "centred": o["vertices"] == "centres"}


PRESETS = {p.name: p for p in (
    Preset("hashgrid", "multiresolution hash grid + two small ReLU layers",
           lambda c, o, rng: nets.hashgrid(2, c, **_grid_options(o), rng=rng), lr=2e-2, lr_min=2e-4, batch_size=1 << 16,
           defaults={"width": 32,
                     "depth": Auto("2; a vertex per pixel: 0, a linear layer and a sigmoid"),
                     "levels": Auto("4, or 2 when the finest level is under 4x the coarsest; 1 read by "
                                    "B-spline (gray pictures up to 256 px a side, colour and gray ones past "
                                    "256 px)"),
                     "features": Auto("2; a single B-spline level: 1 for gray pictures, 3 for colour ones"),
                     "log2_table_size": Auto(f"one that holds the finest level whole, up to {WHOLE_FINEST_LOG2} "
                                                             f"(pictures up to {WHOLE_FINEST_SIDE} px a side); "
                                                             "above, the largest that keeps the parameters within "
                                                             "the pixel count"),
                     "coarsest": Auto("the finest / 16, between 2 and 16; a single level: the finest"),
                     "finest": Auto("the picture's longest side; a single gray B-spline level: as many vertices "
                                    "as the parameter budget allows; a vertex per pixel: the picture's width "
                                    f"(past {PIXEL_SPLINE_PIXELS:,} pixels, {PIXEL_SPLINE_PIXELS:,} vertices in "
                                    "the picture's proportions)"),
                     "finest_y": Auto("as many as across; a vertex per pixel: the picture's height (past "
                                      f"{PIXEL_SPLINE_PIXELS:,} pixels, in the picture's proportions)"),
                     "vertices": Auto("centres for gray pictures up to 256 px a side, else corners"),
                     "interpolation": Auto("bspline for gray pictures up to 256 px a side, with one dense level "
                                           "of as many vertices as the parameter budget allows, and for colour "
                                           "and gray ones past 256 px, a vertex per pixel (up to "
                                           f"{PIXEL_SPLINE_PIXELS:,}); else linear"),
                     "detail": Auto("for colour pictures up to 256 px a side (and no more than 2:1), as many "
                                    "vertices as the parameter budget allows beside two levels of 16 cells and a "
                                    "quarter of the picture's; else 0")},
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


def option_help(name: str) -> str:
    """``--help`` text for a model option: what it is, which presets take it, and their defaults."""
    takers = [p for p in PRESETS.values() if name in p.defaults]
    defaults = {p.name: p.defaults[name] for p in takers}
    if len(set(map(str, defaults.values()))) == 1:
        value = next(iter(defaults.values()))
        default = value.rule if isinstance(value, Auto) else f"{value:g}"
    else:
        default = ", ".join(f"{p} {v.rule if isinstance(v, Auto) else format(v, 'g')}" for p, v in defaults.items())
    where = "all but " + ", ".join(p for p in PRESETS if p not in defaults) if len(takers) > 2 else \
        " and ".join(defaults)
    return f"{where}: {OPTIONS[name].help} (default: {default})"
