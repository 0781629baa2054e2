"""The hash grid's sizing regimes: the layout a picture gets by default, and its sizes.

A picture gets the first of :data:`REGIMES` that fits it, unless the user chose the layout
(``--levels``, ``--finest``, ``--finest-y``, ``--coarsest`` or ``--detail``), which leaves the
pyramid:

=============  ==============================================================================
gray spline    gray pictures up to :data:`THUMBNAIL` px a side: one dense level of as many
               vertices as a parameter a pixel allows, read by a cubic B-spline, then an MLP
pixel spline   colour and gray pictures past :data:`THUMBNAIL` px, and binary drawings of any
               size: one level of a vertex per pixel (up to :data:`PIXEL_SPLINE_PIXELS`), read
               by a B-spline, a linear layer and a sigmoid; it starts as the picture
               (``fitting.start``), but for a drawing up to :data:`THUMBNAIL` px, which learns from
               random (its time-lapse shows it) between its pixels too, on the ``spline`` filter
colour detail  colour pictures up to :data:`THUMBNAIL` px a side and 2:1: a coarse pyramid of two
               levels and a dense detail level of one feature beside it, then an MLP
pyramid        everything else: Instant-NGP's multiresolution levels,
               hashed where the table is smaller than a level, then an MLP
=============  ==============================================================================

Each regime's rule and its sizing live together here; :data:`~ironlearn.fitting.presets.PRESETS`
builds ``--help`` from the rules, and a run's plan reads its regime back from its resolved
options (:func:`regime_of`) to choose its filter, whether it trains a tile a step, and which
parameters it holds.  How each regime was chosen, with its measurements: docs/any-size.md and
docs/benchmarks.md.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Callable

from ..errors import OptionError
from ..nn.encodings import LOG2_TABLE_SIZES, HashGrid, dense_log2_table_size

#: Pictures up to this many pixels a side are thumbnails: trained whole, and sized to a parameter
#: a pixel.  Past it, a photograph keeps a vertex per pixel.
THUMBNAIL = 256
#: A dense level serves a thumbnail only where a parameter a pixel leaves it at least this share
#: of the picture's side (the longer side for a gray spline, the shorter for a colour detail
#: level); a smaller level would blur it, and the pyramid wins.
DENSE_SHARE = 7 / 8
#: The most vertices the pixel spline's level has: 2^24 (``--table-log2``'s limit), a vertex per
#: pixel up to 16.8 MP (4096x4096 or any shape of as many pixels), fewer past it (:func:`spline_sides`).
PIXEL_SPLINE_PIXELS = 1 << 24
#: Features a vertex of the pixel spline's level, by mode.
PIXEL_SPLINE_FEATURES = {"rgb": 3, "gray": 1, "binary": 1}
#: A pyramid's table holds its finest level whole (a row per vertex) where that takes at most
#: 2**WHOLE_FINEST_LOG2 rows (pictures up to WHOLE_FINEST_SIDE px a side); larger ones keep the table of
#: one parameter per pixel, their finest level hashed.  Collisions there do not train away in a short
#: fit, and Instant-NGP's hash (x not multiplied) lays them out as runs along rows: the horizontal
#: dashes of a redraw.
WHOLE_FINEST_LOG2 = 23
WHOLE_FINEST_SIDE = math.isqrt(1 << WHOLE_FINEST_LOG2) - 1  # a corner grid of this many cells a side fits


@dataclass(frozen=True)
class Regime:
    """One default layout of the hash grid.

    ``when`` says which pictures get it and ``layout`` what it builds (both for ``--help``);
    ``size(width_px, height_px, mode, options)``
    returns the options filled in, or None where the regime does not fit the picture; ``filter``
    is the default way it trains between pixels, for resolved options and the picture's mode.
    """

    name: str
    when: str
    layout: str
    size: Callable
    filter: Callable = lambda o, mode: "lanczos"

    def __repr__(self) -> str:
        return f"Regime({self.name!r})"


# -- sizes ---------------------------------------------------------------------------------------
def spline_sides(width_px: int, height_px: int) -> tuple[int, int]:
    """Vertices across and down of the pixel spline's level: one per pixel up to
    :data:`PIXEL_SPLINE_PIXELS` pixels; past it, as many as that many rows hold, in the picture's
    proportions (a vertex for every 1.73 x 1.73 pixels at 50 MP, 2.44 x 2.44 at 100 MP), where the
    pyramid (a bounded budget of samples) drew a blur."""
    pixels = width_px * height_px
    if pixels <= PIXEL_SPLINE_PIXELS:
        return width_px, height_px
    scale = math.sqrt(PIXEL_SPLINE_PIXELS / pixels)
    across, down = max(1, math.floor(width_px * scale)), max(1, math.floor(height_px * scale))
    # A side clamped up to 1 (a picture over 2^24:1) leaves the longer one to give way.
    if across >= down:
        return min(across, PIXEL_SPLINE_PIXELS // down), down
    return across, min(down, PIXEL_SPLINE_PIXELS // across)


def grid_vertices(mode: str, finest: int) -> str:
    """Where a pyramid's vertices sit by default (see :class:`~ironlearn.nn.HashGrid`): on cell
    centres for gray thumbnails, where the finest level then holds a vertex per pixel; on corners
    otherwise (colour, sampled large pictures and the binary drawing in short runs do better so)."""
    return "centres" if mode == "gray" and finest <= THUMBNAIL else "corners"


def _head_parameters(inputs: int, o: dict, mode: str) -> int:
    """The MLP's parameters: ``inputs`` features in, ``o["depth"]`` layers of ``o["width"]``."""
    width, depth, channels = o["width"], o["depth"], 3 if mode == "rgb" else 1
    if depth == 0:
        return (inputs + 1) * channels
    return (inputs + 1) * width + (depth - 1) * (width + 1) * width + (width + 1) * channels


def _one_spline_level(o: dict, side: int, down: int = 0) -> dict:
    """One dense level of ``side`` vertices across and ``down`` down (0: as many) read by a
    B-spline, centred (the options given are kept)."""
    return {**o, "levels": 1, "features": o["features"] or 1, "coarsest": side, "finest": side, "finest_y": down,
            "log2_table_size": o["log2_table_size"] or dense_log2_table_size(side * (down or side)),
            "vertices": o["vertices"] or "centres", "interpolation": "bspline", "detail": 0}


def _gray_spline(width_px: int, height_px: int, mode: str, o: dict) -> dict | None:
    """The largest square level of ``o["features"] or 1`` features that keeps the model within
    the pixel count, where that is :data:`DENSE_SHARE` of the longer side or more."""
    longest = max(width_px, height_px)
    if mode != "gray" or longest > THUMBNAIL or o["interpolation"] == "linear":
        return None
    o = {**o, "depth": 2 if o["depth"] is None else o["depth"]}
    features = o["features"] or 1
    side = math.isqrt(max(1, (width_px * height_px - _head_parameters(features, o, mode)) // features))
    return _one_spline_level(o, side) if side >= DENSE_SHARE * longest else None


def _pixel_spline(width_px: int, height_px: int, mode: str, o: dict) -> dict | None:
    """A vertex per pixel (:func:`spline_sides`) of :data:`PIXEL_SPLINE_FEATURES`, a linear head:
    photographs past :data:`THUMBNAIL` px, drawings at any size."""
    small = max(width_px, height_px) <= THUMBNAIL and mode != "binary"
    if mode not in PIXEL_SPLINE_FEATURES or small or o["interpolation"] == "linear":
        return None
    o = {**o, "depth": 0 if o["depth"] is None else o["depth"], "features": o["features"] or PIXEL_SPLINE_FEATURES[mode]}
    across, down = spline_sides(width_px, height_px)
    return _one_spline_level(o, across, down if down != across else 0)


def _colour_detail(width_px: int, height_px: int, mode: str, o: dict) -> dict | None:
    """Two dense levels (16 cells a side, and a quarter of the picture's) and a detail level of as
    many vertices as the rest of the pixel count allows, where that is :data:`DENSE_SHARE` of the
    shorter side or more, for pictures up to 2:1."""
    longest, shortest = max(width_px, height_px), min(width_px, height_px)
    if mode != "rgb" or longest > THUMBNAIL or longest > 2 * shortest:
        return None
    o = {**o, "depth": 2 if o["depth"] is None else o["depth"]}
    finest = max(16, longest // 4)
    coarsest, levels, features = min(16, finest), 2 if finest > 16 else 1, o["features"] or 2
    vertices = o["vertices"] or "corners"
    log2_table_size = o["log2_table_size"] or dense_log2_table_size((finest + (vertices == "corners")) ** 2)
    pyramid = sum(HashGrid.level_shapes(levels, log2_table_size, coarsest, finest, vertices == "centres")[1])
    rest = width_px * height_px - pyramid * features - _head_parameters(levels * features + 1, o, mode)
    detail = math.isqrt(max(rest, 0))
    if detail < DENSE_SHARE * shortest:
        return None
    return {**o, "levels": levels, "features": features, "coarsest": coarsest, "finest": finest,
            "log2_table_size": log2_table_size, "vertices": vertices, "interpolation": o["interpolation"] or "linear",
            "detail": detail, "finest_y": 0}


def _pyramid(width_px: int, height_px: int, mode: str, o: dict) -> dict:
    """The finest level at the picture's resolution, and a table (a power of two rows per level)
    that holds that level whole where that takes at most 2**:data:`WHOLE_FINEST_LOG2` rows, else
    the largest that keeps the whole model within the pixel count (the larger of the two for a
    small picture)."""
    o = {**o, "depth": 2 if o["depth"] is None else o["depth"], "interpolation": o["interpolation"] or "linear",
         "detail": o["detail"] or 0, "finest_y": o["finest_y"] or 0}
    finest = o["finest"] or max(width_px, height_px)
    if o["coarsest"] and o["coarsest"] > finest:
        given = "{finest}" if o["finest"] else "the finest level (the picture's longest side)"
        raise OptionError(f"{{coarsest}} {o['coarsest']} is above {given}, {finest} cells; give a smaller "
                          "{coarsest}" + ("" if o["finest"] else " or a larger {finest}"), "coarsest", "finest")
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


# -- the regimes ---------------------------------------------------------------------------------
GRAY_SPLINE = Regime("gray spline", f"gray pictures up to {THUMBNAIL} px a side",
                     "a dense level read by a B-spline, and a small MLP", _gray_spline,
                     # A level of several features is pinned by the pixels alone.
                     filter=lambda o, mode: "centres" if o.get("features", 1) > 1 else "lanczos")
# A photograph's level is pinned by its pixels, and starts as the picture.  A drawing up to a
# thumbnail learns from random, between its pixels too: the spline filter there is what redraws
# it larger above bicubic (docs/benchmarks.md, "How does a line drawing redraw at 474 and 1024 px?").
# A larger drawing trains a tile a step as a photograph does: from random, the samples between
# left a 2500x2500 drawing with many of its pixels wrong after a short fit, where started as the
# picture on tiles every pixel was right (measured: docs/any-size.md, 'Drawings: a vertex per
# pixel, learning the spline between them').
PIXEL_SPLINE = Regime("pixel spline", f"colour and gray pictures past {THUMBNAIL} px, and binary drawings",
                      "the picture itself, as B-spline coefficients (a value a pixel and channel: model.npz "
                      "takes about 4 bytes a pixel value, the checkpoint 12), read by a linear layer and a "
                      "sigmoid; a photograph starts where training would end, a drawing learns from random",
                      _pixel_spline, filter=lambda o, mode: "spline" if drawn_thumbnail(o, mode) else "centres")
# The detail level and the pyramid's cell for every 4 x 4 pixels are pinned by the pixels alone:
# samples between them have no freedom left to constrain, and cost a sixth of the step (measured:
# docs/benchmark-log.md, 'Why the defaults: measurements behind the hash grid's regimes').
COLOUR_DETAIL = Regime("colour detail", f"colour pictures up to {THUMBNAIL} px a side and 2:1",
                       "a coarse pyramid of two levels and a dense detail level, and a small MLP", _colour_detail,
                       filter=lambda o, mode: "centres")
PYRAMID = Regime("pyramid", "the rest, and any picture whose layout is given",
                 "Instant-NGP's multiresolution levels, hashed where a level outgrows its table, and a small MLP",
                 _pyramid)
#: Tried in this order; the pyramid fits every picture.
REGIMES = (GRAY_SPLINE, PIXEL_SPLINE, COLOUR_DETAIL, PYRAMID)

#: The options that choose the layout: given any, a picture gets the pyramid.
LAYOUT_OPTIONS = ("levels", "finest", "finest_y", "coarsest")


def hashgrid_size(width_px: int, height_px: int, mode: str, o: dict) -> dict:
    """The hash grid's options for a picture, in the first regime of :data:`REGIMES` that fits it
    (the options given are kept)."""
    chosen = any(o[name] for name in LAYOUT_OPTIONS) or o["detail"] is not None
    for regime in (PYRAMID,) if chosen else REGIMES:
        sized = regime.size(width_px, height_px, mode, o)
        if sized is not None:
            return sized
    raise AssertionError("the pyramid fits every picture")


def regime_of(o: dict) -> Regime:
    """The regime whose layout resolved options ``o`` have: a detail level is the colour detail's,
    one B-spline level a spline (with a linear head, the pixel spline's), the rest a pyramid."""
    if o.get("detail"):
        return COLOUR_DETAIL
    if o.get("levels") == 1 and o.get("interpolation") == "bspline":
        return PIXEL_SPLINE if o.get("depth") == 0 else GRAY_SPLINE
    return PYRAMID


def vertex_per_pixel(o: dict, width_px: int, height_px: int, channels: int) -> bool:
    """Whether resolved options ``o`` build the pixel spline's level for a ``width_px x height_px``
    picture of ``channels``, a vertex at each pixel (:func:`spline_sides`), whole in its table,
    centred, read through a linear head: the model ``fitting.start`` can start as the picture."""
    across, down = spline_sides(width_px, height_px)
    return (regime_of(o) is PIXEL_SPLINE and o.get("vertices") == "centres" and o.get("features") == channels
            and o.get("coarsest") == o.get("finest") == across and (o.get("finest_y") or across) == down
            and 2 ** o.get("log2_table_size", 0) >= across * down)


def drawn_thumbnail(o: dict, mode: str) -> bool:
    """Whether resolved options ``o`` are the pixel spline of a binary drawing up to
    :data:`THUMBNAIL` px a side: one that learns from random on the ``spline`` filter."""
    return mode == "binary" and regime_of(o) is PIXEL_SPLINE and max(o["finest"], o.get("finest_y") or 0) <= THUMBNAIL


def grid_filter(o: dict, mode: str) -> str:
    """How a hash grid trains between pixel centres by default: its regime's way for a ``mode`` picture."""
    return regime_of(o).filter(o, mode)
