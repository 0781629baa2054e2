"""A learned context model: each latent's Laplace mean and scale from the latents decoded before it.

The two-number model (:mod:`.entropy`) gives every latent a Laplace of mean 0 whose scale follows a
fixed formula of its neighbours' activity.  A file of format 7 may carry instead a small network
of its own, fitted by the encoder to its latents (Cool-chic's and C3's autoregressive model): for
each latent it reads the values of :data:`NEIGHBOURS` (decoded cells of the same grid, the two to
the left among them), the coarser level's :data:`PARENT` cells around the same place, and the
two-number model's log-scale for it, and gives the mean and a correction of that log-scale.  One
network a file; each grid says whether it is coded under it (``learned``) or under its two numbers.

Every decoder must compute the same probabilities to the bit, so the network's arithmetic is
*exact*: its inputs are integers times powers of two, clipped to :data:`INPUT_CLIP`; its weights
are integers (at most :data:`MAX_WEIGHT`) times a power of two a tensor; each hidden layer's
output is floored to a grid of ``2**-ACTIVATION_BITS`` and clipped to :data:`ACTIVATION_CLIP`.
Within those bounds every product and every partial sum is a float64 held exactly (fewer than 53
significant bits), so that any order of summation (BLAS's blocking, a fused multiply-add, the
page's plain loop) gives the same numbers.  The log-scale is rounded to :data:`LOG_SCALE_STEPS` a
unit and read from a table of :mod:`.portable`'s ``exp``.

A cell's neighbours to the left are decoded before it, so a grid is coded by *wavefronts*: cell
``(i, j)`` in step ``WAVE * i + j`` (every neighbour in an earlier step), a step's cells in one
call of the range coder: ``WAVE * h + w`` calls a grid rather than a call a latent.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property, lru_cache

import numpy as np

from . import entropy, portable

#: The neighbours a latent's model reads in its own grid ``(rows down, columns right)``, every one
#: decoded before it: nearest first.  Measured against twelve (two more two rows up) and eight
#: (none to the left): docs/compression.md, 'The learned context model'.
NEIGHBOURS = ((-1, 0), (-1, -1), (-1, 1), (-2, 0), (-1, -2), (-1, 2), (-2, -1), (-2, 1), (0, -1), (0, -2))
#: The coarser level's cells read, around the latent's parent ``(i // 2, j // 2)``.
PARENT = ((0, 0), (-1, 0), (1, 0), (0, -1), (0, 1))
#: The network's inputs: each neighbour's and parent cell's value and magnitude, and the
#: two-number model's log-scale in units of ``2**-TODAY_BITS``.
INPUTS = 2 * (len(NEIGHBOURS) + len(PARENT)) + 1
TODAY_BITS = 8
#: Cell ``(i, j)`` is coded in step ``WAVE * i + j``: the smallest that puts every neighbour first.
WAVE = 1 + max(dj for di, dj in NEIGHBOURS if di == -1)
#: The network's hidden layers (of the width the header gives), and its outputs (mean, log-scale).
DEPTH, OUTPUTS = 2, 2
#: Exactness: inputs within +-INPUT_CLIP after their shifts (at most MAX_SHIFT), weights' integers
#: within +-MAX_WEIGHT, hidden values on a grid of 2**-ACTIVATION_BITS within [0, ACTIVATION_CLIP].
INPUT_CLIP, MAX_SHIFT, MAX_WEIGHT = 4.0, 15, (1 << 9) - 1
ACTIVATION_BITS, ACTIVATION_CLIP = 12, 256.0
#: The widest network a header may declare.
MAX_HIDDEN = 16
#: Log-scales are rounded to 1/LOG_SCALE_STEPS and read from a table.
LOG_SCALE_STEPS = 64


def layer_shapes(hidden: int) -> list[tuple[int, int]]:
    """Each layer's ``(fan_in, fan_out)`` for a network of width ``hidden``."""
    sizes = [INPUTS] + [hidden] * DEPTH + [OUTPUTS]
    return list(zip(sizes[:-1], sizes[1:]))


def tensor_sizes(hidden: int) -> list[int]:
    """The sizes of the network's tensors, as the file codes them: each layer's weight, then its bias."""
    return [size for fan_in, fan_out in layer_shapes(hidden) for size in (fan_in * fan_out, fan_out)]


def macs(hidden: int) -> int:
    """The network's multiply-adds a latent."""
    return sum(fan_in * fan_out for fan_in, fan_out in layer_shapes(hidden))


@dataclass(frozen=True)
class ContextModel:
    """A file's context model: the inputs' shifts, each tensor's ``(integers, exponent)`` (a
    layer's weight ``(fan_in, fan_out)``, then its bias), and for each grid (level-major) whether
    it is coded under the network."""

    shifts: tuple
    tensors: tuple
    learned: tuple

    @property
    def hidden(self) -> int:
        return self.tensors[0][0].shape[1]

    @cached_property
    def layers(self) -> list:
        """``[(weight, bias)]`` as float64, each exactly its integers times its power of two (made once)."""
        values = [q.astype(np.float64) * 2.0 ** exponent for q, exponent in self.tensors]
        return list(zip(values[0::2], values[1::2]))


@lru_cache(maxsize=1)
def scale_table() -> np.ndarray:
    """The Laplace scale of each rounded log-scale, ``exp(k / LOG_SCALE_STEPS)`` over
    :data:`~.entropy.LOG_SCALE_RANGE` by :func:`.portable.exp`: float64, read-only."""
    low, high = (int(bound * LOG_SCALE_STEPS) for bound in entropy.LOG_SCALE_RANGE)
    table = np.array([portable.exp(k / LOG_SCALE_STEPS) for k in range(low, high + 1)])
    table.setflags(write=False)
    return table


def waves(height: int, width: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """The cells of a ``height x width`` grid in the order they are coded: ``(rows, columns)`` a
    step, step ``t`` holding the cells with ``WAVE * i + j == t``."""
    rows, columns = np.divmod(np.arange(height * width), width)
    step = WAVE * rows + columns
    order = np.argsort(step, kind="stable")
    bounds = np.cumsum(np.bincount(step))[:-1]
    return list(zip(np.split(rows[order], bounds), np.split(columns[order], bounds)))


class Surroundings:
    """What a grid's model reads, for any set of its cells: the grid itself as decoded so far
    (:meth:`write` a step's values in as they are decoded; two cells of zeros round it), its
    parent's cells and boxes, and the two-number model's log-scale of each activity class."""

    def __init__(self, grid: np.ndarray, parent, log_scales: np.ndarray):
        h, w = grid.shape
        self.padded = np.zeros((h + 2, w + 4), np.int64)
        self.padded[2:, 2:-2] = grid
        self.near = np.array([di * (w + 4) + dj for di, dj in NEIGHBOURS])  # offsets in the flat padded grid
        self.has_parent, self.log_scales = parent is not None, log_scales
        if parent is not None:
            self.parent = np.pad(parent.astype(np.int64), 1)
            self.box = entropy.parent_box(parent)
            self.around = np.array([di * self.parent.shape[1] + dj for di, dj in PARENT])

    def write(self, rows, columns, values) -> None:
        """The cells ``(rows, columns)`` decoded to ``values``."""
        self.padded[rows + 2, columns + 2] = values

    def raw(self, rows, columns) -> tuple[np.ndarray, np.ndarray]:
        """The cells' inputs before their shifts, integers as float64 ``(n, INPUTS)``, and the
        two-number model's log-scale of each ``(n,)``."""
        cells = (rows + 2) * self.padded.shape[1] + columns + 2
        near = self.padded.reshape(-1)[cells[:, None] + self.near]
        magnitude = np.abs(near)
        # entropy.activity's integers: 9 * (2|up| + |up-left| + |up-right| + |two up|) + the parent's box
        activity = 9 * (2 * magnitude[:, 0] + magnitude[:, 1] + magnitude[:, 2] + magnitude[:, 3])
        if self.has_parent:
            up_rows, up_columns = rows // 2, columns // 2
            activity += self.box[up_rows, up_columns]
            parents = (up_rows + 1) * self.parent.shape[1] + up_columns + 1
            above = self.parent.reshape(-1)[parents[:, None] + self.around]
        else:
            above = np.zeros((len(rows), len(PARENT)), np.int64)
        today = self.log_scales[entropy.classes(activity)]
        raw = np.empty((len(rows), INPUTS))
        raw[:, :len(NEIGHBOURS)], raw[:, len(NEIGHBOURS):2 * len(NEIGHBOURS)] = near, magnitude
        raw[:, 2 * len(NEIGHBOURS):-1] = np.concatenate([above, np.abs(above)], 1)
        raw[:, -1] = np.floor(today * 2 ** TODAY_BITS + 0.5)
        return raw, today


def scaled(raw: np.ndarray, shifts) -> np.ndarray:
    """The network's inputs: ``raw`` times ``2**-shift`` a column, within :data:`INPUT_CLIP` (exact)."""
    return np.clip(raw * 2.0 ** -np.asarray(shifts, np.float64), -INPUT_CLIP, INPUT_CLIP)


def forward(x: np.ndarray, layers) -> np.ndarray:
    """The network's outputs ``(n, 2)`` for inputs ``x``, exactly (see the module's note)."""
    for weight, bias in layers[:-1]:
        x = np.maximum(x @ weight + bias, 0.0)
        x = np.minimum(np.floor(x * 2.0 ** ACTIVATION_BITS) * 2.0 ** -ACTIVATION_BITS, ACTIVATION_CLIP)
    weight, bias = layers[-1]
    return x @ weight + bias


def laplaces(out: np.ndarray, today: np.ndarray, magnitude: int) -> tuple[np.ndarray, np.ndarray]:
    """``(means, scales)`` from the network's outputs and the two-number log-scales: the mean
    within the grid's range, the log-scale ``today + correction`` rounded to
    1/:data:`LOG_SCALE_STEPS` within :data:`~.entropy.LOG_SCALE_RANGE`, its scale from
    :func:`scale_table`."""
    low, high = (int(bound * LOG_SCALE_STEPS) for bound in entropy.LOG_SCALE_RANGE)
    means = np.clip(out[:, 0], -magnitude, magnitude)
    steps = np.clip(np.floor((today + out[:, 1]) * LOG_SCALE_STEPS + 0.5), low, high).astype(np.int64)
    return means, scale_table()[steps - low]


def predict(surroundings: Surroundings, rows, columns, context: ContextModel, magnitude: int):
    """``(means, scales)`` of the cells ``(rows, columns)``, from what ``surroundings`` holds."""
    raw, today = surroundings.raw(rows, columns)
    return laplaces(forward(scaled(raw, context.shifts), context.layers), today, magnitude)


def batches(cells, size: int = 1 << 16):
    """``cells`` (:func:`waves`) in runs of consecutive steps of about ``size`` cells or more:
    ``[(rows, columns, step bounds)]``, each run's cells joined, the bounds to split them again."""
    run, count = [], 0
    for index, step in enumerate(cells):
        run.append(step)
        count += len(step[0])
        if count >= size or index == len(cells) - 1:
            rows, columns = np.concatenate([r for r, _ in run]), np.concatenate([c for _, c in run])
            yield rows, columns, np.cumsum([len(r) for r, _ in run])[:-1]
            run, count = [], 0


def code(coder, grid, parent, model: entropy.Model, context: ContextModel, family, magnitude: int,
         arithmetic=portable.CURRENT, known: bool = False) -> np.ndarray:
    """Code ``grid`` (int32 ``(h, w)``) under ``context``, wavefront by wavefront, the walk both
    directions take: ``coder(symbols, family, means, scales)`` as :func:`.entropy.code`'s.  The
    two-number ``model`` (its log-scales by the file's ``arithmetic``) gives the network its
    input.  ``known``: the whole grid is given (encoding), so the cells' distributions are
    computed many steps at once: the same numbers, as every input a cell reads is coded before
    it.  Returns ``grid``."""
    around = Surroundings(grid if known else np.zeros(grid.shape, np.int64), parent, model.log_scales(arithmetic[1]))
    cells = waves(*grid.shape)
    if known:
        for rows, columns, bounds in batches(cells):
            means, scales = predict(around, rows, columns, context, magnitude)
            for r, c, mean, scale in zip(np.split(rows, bounds), np.split(columns, bounds),
                                         np.split(means, bounds), np.split(scales, bounds)):
                coder(np.ascontiguousarray(grid[r, c], np.int32), family, mean, scale)
        return grid
    for rows, columns in cells:
        means, scales = predict(around, rows, columns, context, magnitude)
        values = coder(np.zeros(len(rows), np.int32), family, means, scales)
        grid[rows, columns] = values
        around.write(rows, columns, values)
    return grid
