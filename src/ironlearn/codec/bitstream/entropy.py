"""The latents' entropy model: each latent a quantised Laplace whose scale its neighbours predict.

Latents cluster: where a picture has an edge or texture, a grid's values are large together, and
so are the coarser level's at the same place.  The model reads, for each latent, an integer
*activity* from what the decoder already has when it gets there (the rows above in the same grid,
and the whole coarser level of the same channel), and gives it a Laplace of mean 0 whose
log-scale is ``a + b * log(EPS + activity / 18)``: two numbers a grid, in the file's header.
On every benchmark photograph this spends fewer bits than one Laplace a grid (measured:
docs/compression.md, 'The codec').

The activity is integer arithmetic and its scale depends only on its *class* (a quarter of an
octave of activity): the encoder and the decoder compute the same classes exactly, and the few
scales a grid uses with :mod:`.portable`'s ``exp`` and ``log`` (from format 6; the C library's
before), so files decode alike on any machine and in the browser.  Only
rows above are read, not the value to the left, so a whole row decodes in one call of the range
coder (decoding a 768x512 picture takes a few thousand calls, not a million).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from . import portable

#: The most bits one symbol costs: constriction's range coder keeps every bin's probability at
#: 2**-24 or more.  (Counting outliers at 16 bits instead, as a first version did, chose scales
#: too narrow for sparse grids: their files came out larger, and above the estimate; measured:
#: docs/benchmark-log.md, 'Measurements the code's comments quoted'.)
FLOOR_BITS = 24.0
#: Log-scales a model gives, at most and at least.
LOG_SCALE_RANGE = (-12.0, 12.0)
#: The slope ``b`` is ``index / SLOPE_STEPS`` for an index in ``range(SLOPES)``: 0 to 1.5.
SLOPE_STEPS, SLOPES = 8, 13
#: Keeps ``log(EPS + activity)`` finite where nothing around is active (measured: 0.2).
EPS = 0.2
#: Activity classes: 0, then four a doubling of the activity (which stays below 2**40).
CLASSES_PER_OCTAVE, CLASSES = 4, 1 + 4 * 40


def laplace_bits(values, log_scale) -> np.ndarray:
    """Bits to code each of ``values`` (integers) under a Laplace of mean 0 and scale
    ``exp(log_scale)`` (a number, or one a value) quantised to bins of width 1, at most
    :data:`FLOOR_BITS` a value (the range coder's precision)."""
    b = np.exp(np.asarray(log_scale, np.float64))
    magnitude = np.abs(np.asarray(values, np.float64))
    # P(0) = 1 - e^{-1/(2b)}; P(v != 0) = e^{-(|v| - 1/2) / b} (1 - e^{-1/b}) / 2, in bits (log domain:
    # no overflow at any scale), capped at the floor.
    zero_bits = -np.log2(-np.expm1(-0.5 / b))
    bits = (magnitude - 0.5) / (b * math.log(2)) - np.log2(-np.expm1(-1 / b) / 2)
    return np.minimum(np.where(magnitude == 0, zero_bits, bits), FLOOR_BITS)


# -- activity -------------------------------------------------------------------------------------
def parent_box(parent) -> np.ndarray:
    """Each cell of ``parent`` ``(h, w)``: its 3x3 neighbourhood's ``|values|`` summed, int64."""
    padded = np.pad(np.abs(parent).astype(np.int64), 1)
    h, w = parent.shape
    return sum(padded[i:i + h, j:j + w] for i in range(3) for j in range(3))


def parent_activity(parent, shape) -> np.ndarray:
    """What the coarser level says about a grid of ``shape``: each cell's parent's 3x3
    neighbourhood, ``|values|`` summed, ``(h, w)`` int64 (zeros for the coarsest level,
    ``parent`` None)."""
    if parent is None:
        return np.zeros(shape, np.int64)
    return parent_box(parent)[np.arange(shape[0]) // 2][:, np.arange(shape[1]) // 2]


def above_activity(above, above2) -> np.ndarray:
    """What the rows above say, in integers: ``9 * (2|up| + |up-left| + |up-right| + |two up|)``.
    With :func:`parent_activity`, ``activity / 18 = |up| + (|up-left| + |up-right| + |two up|
    + the parent box's mean) / 2`` (the weights measured best).  Works on one row ``(w,)``
    (decoding) or a grid's worth ``(h, w)`` (encoding): the same integers either way."""
    left = np.zeros_like(above)
    left[..., 1:] = above[..., :-1]
    right = np.zeros_like(above)
    right[..., :-1] = above[..., 1:]
    return 9 * (2 * above + left + right + above2)


def activity(q, parent) -> np.ndarray:
    """The activity of every latent of grid ``q`` ``(h, w)``, as the decoder will compute it
    row by row: int64 ``(h, w)``."""
    magnitude = np.abs(q).astype(np.int64)
    above = np.zeros_like(magnitude)
    above[1:] = magnitude[:-1]
    above2 = np.zeros_like(magnitude)
    above2[2:] = magnitude[:-2]
    return parent_activity(parent, q.shape) + above_activity(above, above2)


def classes(activity) -> np.ndarray:
    """The class of each activity: 0 for none, else ``1 + 4 * octave + quarter``, exact (an
    integer below 2**53 is exact in float64, and so are its mantissa and exponent)."""
    mantissa, exponent = np.frexp(np.asarray(activity, np.float64))  # activity = m * 2**e, m in [0.5, 1)
    quarter = np.floor((mantissa - 0.5) * (2 * CLASSES_PER_OCTAVE)).astype(np.int64)
    return np.where(activity == 0, 0, 1 + CLASSES_PER_OCTAVE * (exponent.astype(np.int64) - 1) + quarter)


@lru_cache(maxsize=2)
def class_log_activity(log=portable.log) -> np.ndarray:
    """``log(EPS + x)`` for each class's typical activity ``x``: the middle of its quarter-octave,
    in the units of :class:`Model` (a latent above, times 1).  Computed once for each ``log``
    (:func:`.portable.for_version`'s); read-only."""
    middles = [0.0]
    for c in range(1, CLASSES):
        octave, quarter = divmod(c - 1, CLASSES_PER_OCTAVE)
        middles.append(2.0 ** octave * (1 + (quarter + 0.5) / CLASSES_PER_OCTAVE) / 18)
    table = np.array([log(EPS + x) for x in middles])
    table.setflags(write=False)
    return table


@dataclass(frozen=True)
class Model:
    """One grid's model: log-scale ``a + (slope / SLOPE_STEPS) * log(EPS + activity / 18)``
    (``a`` a float32, as the header stores it)."""

    a: float
    slope: int

    def log_scales(self, log=portable.log) -> np.ndarray:
        """The log-scale of each class, float64 ``(CLASSES,)``, from :func:`class_log_activity`
        of ``log``: a product, a sum and a clip, each exactly rounded, so the same everywhere."""
        return np.clip(self.a + (self.slope / SLOPE_STEPS) * class_log_activity(log), *LOG_SCALE_RANGE)

    def scale_table(self, arithmetic=portable.CURRENT) -> np.ndarray:
        """The Laplace scale of each class, float64 ``(CLASSES,)``, as the range coder takes
        them, by ``arithmetic``'s ``(exp, log)`` (:func:`.portable.for_version`'s)."""
        exp, log = arithmetic
        return np.array([exp(log_scale) for log_scale in self.log_scales(log)])


def header_float(value: float, bounds=LOG_SCALE_RANGE) -> float:
    """``value`` as the header stores it: float32, within ``bounds``."""
    return float(np.float32(min(max(float(value), bounds[0]), bounds[1])))



def laplace_size(symbols, log_scale) -> float:
    """Bits to code ``symbols`` under a Laplace of log-scale ``log_scale``."""
    return float(laplace_bits(symbols, log_scale).sum())


def mean_log_scale(symbols) -> float:
    """The continuous Laplace's estimate of ``symbols``' log-scale: ``log mean |q|``."""
    return math.log(max(float(np.mean(np.abs(symbols))), 1e-3))


def best_log_scale(symbols) -> float:
    """The log-scale (as the header stores it) under which ``symbols`` take the fewest bits: a
    search from :func:`mean_log_scale`, in steps of 1/16."""
    guess = mean_log_scale(symbols)
    candidates = [header_float(guess + d / 16) for d in range(-48, 17)]
    sample = symbols.reshape(-1)[:: max(1, symbols.size // 20000)]  # a fixed subsample: the search is cheap
    return min(candidates, key=lambda s: laplace_size(sample, s))


def fit(q, parent) -> tuple[Model, float]:
    """The model under which grid ``q`` (with coarser level ``parent``, or None) takes the
    fewest bits, and those bits: ``(Model, bits)``.

    The bits depend on the latents only through how many of each magnitude fall in each class,
    so the search runs on those counts: a golden-section search on ``a`` for every slope at once."""
    pair_class, magnitude, counts = _pair_counts(q, parent)
    x = class_log_activity()[pair_class]

    low, high = LOG_SCALE_RANGE
    slopes = np.arange(SLOPES) / SLOPE_STEPS

    def bits(a):  # of each slope's model, with intercepts a (SLOPES,)
        log_scales = np.minimum(np.maximum(a[:, None] + slopes[:, None] * x, low), high)
        return laplace_bits(magnitude, log_scales) @ counts

    # Every slope at once, each searching a around the continuous Laplace's estimate.
    mean = max(float(counts @ magnitude) / counts.sum(), 1e-3)
    centre = math.log(mean) - slopes * float(counts @ x) / counts.sum()
    found = golden_section(bits, centre - 4, centre + 4)
    models = [Model(header_float(a), slope) for slope, a in enumerate(found)]
    costs = [float(counts @ laplace_bits(magnitude, model.log_scales()[pair_class])) for model in models]
    best = int(np.argmin(costs))
    return models[best], costs[best]


def _pair_counts(q, parent, band_cells: int = 1 << 18):
    """How many latents of grid ``q`` fall in each (class, magnitude) pair: ``(class, magnitude,
    count)``, int64 arrays.  Counted a band of rows at a time: the whole grid's activity took a
    dozen int64 temporaries of its size, over a gigabyte for a 16.8 MP picture's finest grid."""
    height, width = q.shape
    base = int(np.abs(q).max()) + 1  # (class, magnitude) pairs as one key
    box = None if parent is None else parent_box(parent)
    rows, found_keys, found_counts = max(1, band_cells // width), [], []
    for top in range(0, height, rows):
        bottom, first = min(height, top + rows), max(0, top - 2)  # two rows above: what activity reads
        band = activity(q[first:bottom], None)[top - first:]
        if box is not None:  # parent_activity's rows of this band
            band += box[np.arange(top, bottom) // 2][:, np.arange(width) // 2]
        keys, counts = np.unique(classes(band) * base + np.abs(q[top:bottom]), return_counts=True)
        found_keys.append(keys)
        found_counts.append(counts)
    keys, where = np.unique(np.concatenate(found_keys), return_inverse=True)
    counts = np.bincount(where, weights=np.concatenate(found_counts)).astype(np.int64)
    pair_class, magnitude = np.divmod(keys, base)
    return pair_class, magnitude, counts


def golden_section(f, low, high, iterations: int = 20, keep_going=None):
    """The minimum of ``f`` on ``[low, high]`` (unimodal) by golden-section search, for arrays of
    independent problems at once (``f`` maps an array of points to an array of values); it stops
    early, the bracket as it stands, when ``keep_going()`` (if given) says False."""
    ratio = (math.sqrt(5) - 1) / 2
    a, b = high - ratio * (high - low), low + ratio * (high - low)
    fa, fb = f(a), f(b)
    for _ in range(iterations):
        if keep_going is not None and not keep_going():
            break
        left = fa < fb  # the minimum lies in [low, b], else in [a, high]; one point is kept
        low, high = np.where(left, low, a), np.where(left, b, high)
        kept, f_kept = np.where(left, a, b), np.where(left, fa, fb)
        new = np.where(left, high - ratio * (high - low), low + ratio * (high - low))
        f_new = f(new)
        a, fa = np.where(left, new, kept), np.where(left, f_new, f_kept)
        b, fb = np.where(left, kept, new), np.where(left, f_kept, f_new)
    return (low + high) / 2


# -- coding ---------------------------------------------------------------------------------------
def code(coder, grid, parent, model: Model, family, arithmetic=portable.CURRENT) -> np.ndarray:
    """Code ``grid`` (int32 ``(h, w)``) row by row under ``model``, the one walk both directions
    take: ``coder(row, family, means, scales)`` encodes the row it is given and returns it, or
    decodes a row (``grid`` then zeros, filled here) and returns that.  Each row's scales come
    from the rows coded before it and from ``parent`` (the coarser level, or None), so the
    encoder computes exactly the scales the decoder will (with the file's ``arithmetic``, as
    :meth:`Model.scale_table`); ``family`` is a ``QuantizedLaplace`` over the grid's range.
    Returns ``grid``."""
    h, w = grid.shape
    magnitude = np.zeros((h + 2, w), np.int64)  # two rows of zeros above the grid
    # The parent's boxes are read a row at a time: a grid's worth of int64 would be twice the grid.
    if parent is None:  # the coarsest level: nothing above it
        box, parent_rows, parent_columns = np.zeros((1, 1), np.int64), np.zeros(h, np.int64), np.zeros(w, np.int64)
    else:
        box, parent_rows, parent_columns = parent_box(parent), np.arange(h) // 2, np.arange(w) // 2
    table, means = model.scale_table(arithmetic), np.zeros(w)
    for i in range(h):
        from_parent = box[parent_rows[i], parent_columns]
        scales = table[classes(from_parent + above_activity(magnitude[i + 1], magnitude[i]))]
        grid[i] = coder(grid[i], family, means, scales)
        magnitude[i + 2] = np.abs(grid[i])
    return grid


def encode_grid(encoder, q, parent, model: Model, family) -> None:
    """Append grid ``q`` to ``encoder`` (constriction's range coder) under ``model``, as
    :func:`decode_grid` reads it back (:func:`code`, encoding)."""
    def row(symbols, family, means, scales):
        encoder.encode(symbols, family, means, scales)
        return symbols

    code(row, np.array(q, np.int32), parent, model, family)


def decode_grid(decoder, shape, parent, model: Model, family, encoder=None) -> np.ndarray:
    """The grid of ``shape`` that :func:`encode_grid` appended: int32 ``(h, w)`` (:func:`code`, decoding).

    Each row decoded is appended again to ``encoder``, when one is given, under the same scales:
    the words it ends with are the section's if, and only if, the section held exactly this
    coding."""
    def row(_, family, means, scales):
        symbols = decoder.decode(family, means, scales)
        if encoder is not None:
            encoder.encode(symbols, family, means, scales)
        return symbols

    return code(row, np.zeros(shape, np.int32), parent, model, family)
