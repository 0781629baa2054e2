"""The hash grid encoding (Mueller et al. 2022, "Instant-NGP"), as a layer with forward and backward
passes: trainable feature tables on a pyramid of grids, read by bilinear interpolation or a cubic
B-spline (:mod:`~ironlearn.nn.splines`).  It takes ``(n, 2)`` coordinates in [-1, 1] (or a
:class:`~ironlearn.nn.lattice.Lattice` of them) and returns features that a small MLP turns
into pixels.  The other encoding, :class:`~ironlearn.nn.fourier.FourierFeatures`, has its own module.
"""

from __future__ import annotations

import math

import numpy as np

from .. import fused, kernels
from ..backend import get_array_module, on_device, take_rows
from . import lattice_reads
from .lattice import Lattice, LevelReads, Reads
from .layers import Layer, bound_arguments, check_count, register
from .splines import INTERPOLATIONS
from .sparse import BlockGrad, MaskedGrad, RowGrad, sparse_gradient


LOOKUP_CACHE = 3  # the pixel grid, and a batch between pixels or a time-lapse frame's tile


#: The hash-table sizes :class:`HashGrid` accepts, as ``log2`` of the rows per level: 6..24.
#: Fewer than 64 rows cannot hold even an 8x8-vertex level; 2**24 rows of two float32 features
#: are 128 MiB a level, and Adam keeps two more tables like it.
LOG2_TABLE_SIZES = range(6, 25)
#: The most levels a saved hash grid may have: twice the 32 that ``fit --levels`` allows.  A
#: pixel's multiply-adds and table reads are at most a few times the parameters a file stores, so
#: they follow its size; a level's own work does not: an 84 KB model of 4096 levels took 8.7 s and
#: 1.75 GB to render 64x64, and its page a 3.46 MB shader (measured: docs/benchmark-log.md,
#: 'reliability.md: what it held before it became documentation').
MAX_GRID_LEVELS = 64


def dense_log2_table_size(vertices: int) -> int:
    """The smallest of :data:`LOG2_TABLE_SIZES` whose table holds ``vertices`` rows (a level of
    that many vertices is then dense), or the largest."""
    return min(max(LOG2_TABLE_SIZES[0], (vertices - 1).bit_length()), LOG2_TABLE_SIZES[-1])

# Primes from Instant-NGP's spatial hash; the first dimension is not multiplied.
_HASH_PRIMES = (1, 2654435761)


@register
class HashGrid(Layer):
    """Multiresolution hash-grid encoding in 2-D.

    Parameters
    ----------
    levels : int
        Grids from ``coarsest`` to ``finest`` cells per side, growing geometrically.
    features : int
        Features stored per grid vertex; the output has ``levels * features``.
    log2_table_size : int
        At most ``2**log2_table_size`` vertices per level, one of :data:`LOG2_TABLE_SIZES`.  A level whose
        ``(res + 1)**2`` vertices fit is indexed densely (no collisions);
        finer levels are hashed into the table.
    coarsest, finest : int
        Cells across (along x) the first and last level.
    finest_y : int
        Cells down (along y) the last level; 0 (the default): as many as across, square cells
        in [-1, 1]^2.  Each level then has ``finest_y / finest`` times its cells across, rounded
        (at least 1).  A non-square picture fitted on a level of a vertex per pixel needs it:
        ``finest`` its width and ``finest_y`` its height puts a vertex on every pixel centre and
        none between them, which no pixel would pin.
    interpolation : {"linear", "bspline"}
        How a level is read between its vertices: ``linear`` mixes the 4 around the point
        (bilinear, Instant-NGP's read); ``bspline`` the 16 around it with a cubic B-spline's
        weights, which makes the encoding smooth (C2) between vertices as well as at them.  A
        dense level read this way holds a spline of the picture, and the network then redraws
        it larger as smoothly as a spline interpolation would (see ``docs/benchmarks.md``).
    centred : bool
        Where a level's vertices sit.  ``False`` (Instant-NGP's layout): on cell corners, ``res + 1``
        per side.  ``True``: on cell centres, ``res`` per side, read like a texture (texel ``k``
        at ``(k + 0.5) / res``, clamped at the edges).  A level with as many cells per side as
        the picture has pixels then gives each pixel centre a vertex of its own; on corners,
        each pixel reads four vertices, a quarter each, shared with its neighbours.
    detail : int
        Vertices a side of one more level, after the pyramid's (0: none): dense, of one feature,
        on cell centres, read by a cubic B-spline, in a parameter of its own (``detail``).  The
        output then has ``levels * features + 1`` features.  A colour thumbnail fits best as
        such a level, which holds what the channels share (much as luma), beside a coarse
        pyramid for what they do not (see ``hashgrid_size`` in ``fitting/presets.py``).
    rng : numpy.random.Generator
        Tables start at U(-1e-4, 1e-4), as in Instant-NGP.

    All levels live in one parameter ``table`` of shape ``(sum of level sizes,
    features)`` (the detail level in ``detail``, ``(detail**2, 1)``), so the
    optimizers treat it like any other array.  Its gradient
    is scattered with ``bincount``, a vectorised sum per vertex (on a GPU, by a
    kernel: reads and scatters go through :mod:`ironlearn.kernels`).  When a batch
    reads fewer rows than the table holds, the gradient is a :class:`RowGrad`
    of the rows read, so that a step costs what the batch touches, not what the
    table holds (the optimizers then update those rows only); on a GPU it is a
    :class:`~ironlearn.nn.sparse.MaskedGrad`, which marks them without a sync.

    A :class:`~ironlearn.nn.lattice.Lattice` (a grid of points, such as a tile of pixels;
    :mod:`~ironlearn.nn.lattice_reads`) reads each dense level as two matrix products, one along each axis, of the 1-D weights with the
    rectangle of vertices the lattice covers; its gradient falls on that rectangle (a
    :class:`~ironlearn.nn.sparse.BlockGrad` when it is a small part of a one-level table).  A
    level that is hashed has no rectangle: the lattice is then read point by point.
    """

    _cached = ("_x", "_marks", "_slots", "_reads_on", "_rectangles", "_fused_levels", "_lattice_on")

    #: The gradient is a :class:`RowGrad` (and the optimizers lazy) when a batch makes fewer
    #: lookups than this share of the table's rows.  Dense Adam learns more per step; lazy steps
    #: cost less as the table grows, and below this share they win (measured:
    #: docs/benchmark-log.md, 'Measurements the code's comments quoted').
    sparse_reads = 0.5

    def __init__(self, levels: int = 16, features: int = 2, log2_table_size: int = 14, coarsest: int = 16,
                 finest: int = 512, centred: bool = False, interpolation: str = "linear", detail: int = 0,
                 finest_y: int = 0, *, rng):
        super().__init__()
        if levels < 1 or features < 1 or not 1 <= coarsest <= finest:
            raise ValueError("HashGrid needs levels >= 1, features >= 1 and 1 <= coarsest <= finest "
                             f"(got {levels}, {features}, {coarsest}, {finest})")
        if log2_table_size not in LOG2_TABLE_SIZES:
            raise ValueError(f"log2_table_size must lie in {LOG2_TABLE_SIZES[0]}..{LOG2_TABLE_SIZES[-1]} "
                             f"(got {log2_table_size})")
        if detail < 0:
            raise ValueError(f"detail counts vertices a side, 0 for none (got {detail})")
        if finest_y < 0:
            raise ValueError(f"finest_y counts cells down the finest level, 0 for as many as across (got {finest_y})")
        if interpolation not in INTERPOLATIONS:
            raise ValueError(f"unknown interpolation {interpolation!r}: use one of {', '.join(INTERPOLATIONS)}")
        self.levels, self.features, self.log2_table_size = levels, features, log2_table_size
        self.coarsest, self.finest, self.finest_y, self.centred = coarsest, finest, finest_y, bool(centred)
        self.interpolation = interpolation
        self.resolutions, self.sizes = self.level_shapes(levels, log2_table_size, coarsest, finest, centred, finest_y)
        self.resolutions_y = [self.down(res, finest, finest_y) for res in self.resolutions]
        # Vertices across and down each level.
        self.sides = [res if centred else res + 1 for res in self.resolutions]
        self.sides_y = [res if centred else res + 1 for res in self.resolutions_y]
        self.hashed = [across * down > size for across, down, size in zip(self.sides, self.sides_y, self.sizes)]
        self.offsets = np.concatenate([[0], np.cumsum(self.sizes)[:-1]]).astype(np.int64)
        table = rng.uniform(-1e-4, 1e-4, size=(sum(self.sizes), features)).astype(np.float32)
        self.params = {"table": table}
        self.grads = {"table": np.zeros_like(table)}
        self.detail = int(detail)
        self.detail_grid = None  # the detail level, a HashGrid of its own whose table this layer shares
        if self.detail:
            self.detail_grid = HashGrid(1, 1, dense_log2_table_size(self.detail ** 2), self.detail, self.detail, True,
                                        "bspline", rng=rng)
            self._link_detail()
        # Recent lookups, newest last: (input array, Reads).  A few are kept so
        # that rendering a time-lapse frame (one or two tiles) does not evict the training batch's.
        self._lookups = []
        self._marks = self._slots = None  # row bookkeeping for sparse gradients, made on first use
        self._reads_on = None  # each level's numbers on a device, made on first use: (device and dtype, LevelReads)
        self._axes = {}  # reads of recent lattices' axes: (device, level, axis, coordinates) -> AxisRead
        self._rectangles = None  # where the last lattice read each level, for backward
        self._fused_levels = None  # the levels' numbers for fused.py's kernels, on the device
        self._fused = False  # whether the last forward read through fused.read_grid
        self._lattice_on = None  # the last lattice's axes on the device, for the fused kernels

    def _link_detail(self):
        """Share the detail level's table and gradient under this layer's own names."""
        grid = self.detail_grid
        self.params["detail"], self.grads["detail"] = grid.params["table"], grid.grads["table"]

    @property
    def taps(self) -> int:
        """Vertices a read weighs along each axis: 2 (bilinear) or 4 (B-spline)."""
        return len(INTERPOLATIONS[self.interpolation][0])

    @property
    def out_features(self) -> int:
        return self.levels * self.features + (1 if self.detail else 0)

    @staticmethod
    def level_shapes(levels: int, log2_table_size: int, coarsest: int, finest: int, centred: bool = False,
                     finest_y: int = 0):
        """Cells across and table rows of each level: ``(resolutions, sizes)``."""
        growth = (finest / coarsest) ** (1.0 / (levels - 1)) if levels > 1 else 1.0
        resolutions = [int(math.floor(coarsest * growth ** level + 1e-9)) for level in range(levels)]
        side = 0 if centred else 1
        return resolutions, [min(1 << log2_table_size, (res + side) * (HashGrid.down(res, finest, finest_y) + side))
                             for res in resolutions]

    @staticmethod
    def down(res: int, finest: int, finest_y: int) -> int:
        """Cells down a level of ``res`` cells across (see ``finest_y``)."""
        return max(1, round(res * finest_y / finest)) if finest_y else res

    def config(self) -> dict:
        config = {"levels": self.levels, "features": self.features, "log2_table_size": self.log2_table_size,
                  "coarsest": self.coarsest, "finest": self.finest}
        # Files from before these options hold linear reads of corner grids, the defaults.
        if self.centred:
            config["centred"] = True
        if self.interpolation != "linear":
            config["interpolation"] = self.interpolation
        if self.detail:
            config["detail"] = self.detail
        if self.finest_y:
            config["finest_y"] = self.finest_y
        return config

    @classmethod
    def shapes(cls, config: dict) -> tuple[dict, int, int]:
        arguments = bound_arguments(cls, config)
        levels = check_count(arguments["levels"], "levels", high=MAX_GRID_LEVELS)
        features = check_count(arguments["features"], "features")
        log2_table_size = check_count(arguments["log2_table_size"], "log2_table_size", LOG2_TABLE_SIZES[0],
                                      LOG2_TABLE_SIZES[-1])
        coarsest = check_count(arguments["coarsest"], "coarsest")
        finest = check_count(arguments["finest"], "finest", coarsest)
        detail = check_count(arguments["detail"], "detail", 0)
        finest_y = check_count(arguments["finest_y"], "finest_y", 0, 65536)
        centred, interpolation = arguments["centred"], arguments["interpolation"]
        if not isinstance(centred, bool):
            raise ValueError(f"centred must be true or false (got {centred!r})")
        if not isinstance(interpolation, str) or interpolation not in INTERPOLATIONS:
            raise ValueError(f"unknown interpolation: use one of {', '.join(INTERPOLATIONS)}")
        shapes = {"table": (sum(cls.level_shapes(levels, log2_table_size, coarsest, finest, centred, finest_y)[1]),
                            features)}
        if detail:  # the one dense level the constructor builds for it
            shapes["detail"] = (cls.level_shapes(1, dense_log2_table_size(detail ** 2), detail, detail, True)[1][0], 1)
        return shapes, 2, levels * features + (1 if detail else 0)

    # -- where each point reads ------------------------------------------------------------
    def _lookup(self, x) -> Reads:
        """The :class:`Reads` of points ``x``: the ``K`` vertices each point reads at each level
        (4 for linear reads, 16 for B-splines; x varies fastest) and their weights.

        The point-major layout lets forward sum the vertices straight into ``(n, L, F)``.
        Full-batch training feeds the same coordinate array every step, so the
        result is cached against it (coordinates are constants, tables are not),
        the least recently used of :data:`LOOKUP_CACHE` giving way to a new one.
        """
        for i, cached in enumerate(self._lookups):
            if cached[0] is x:
                self._lookups.append(self._lookups.pop(i))  # the most recently used goes last
                return cached[1]
        xp = get_array_module(x)
        offsets, weights_along = INTERPOLATIONS[self.interpolation]
        levels = self._read_constants(xp, x.dtype)
        unit = xp.ascontiguousarray(((x + 1) * 0.5).T)  # [-1, 1] -> [0, 1], an axis a row
        # All levels at once as (L, n) arrays: a GPU launches a few dozen operations, not that many
        # a level, and NumPy's loops run along the points (along the levels, a read took far longer;
        # measured: docs/benchmark-log.md, 'Measurements the code's comments quoted').
        (fx, along_x), (fy, along_y) = [self._axis_reads(xp, unit[axis], *levels.axes[axis],
                                                         0.5 if self.centred else 0.0, offsets) for axis in (0, 1)]
        (wx, _), (wy, _) = weights_along(fx), weights_along(fy)
        taps = len(offsets) ** 2
        indices = xp.empty((taps, len(x), self.levels), dtype=xp.int64)
        weights = xp.empty((taps, len(x), self.levels), dtype=x.dtype)
        for k in range(taps):
            j, i = divmod(k, len(offsets))
            indices[k] = self._index(xp, levels, along_x[i], along_y[j]).T
            weights[k] = (wx[i] * wy[j]).T
        fractions = xp.stack([fx.T, fy.T])
        spread = weights[..., None] if self.features == 1 else xp.repeat(weights[..., None], self.features, axis=-1)
        reads = Reads(indices, weights, fractions, spread)
        self._lookups = self._lookups[-(LOOKUP_CACHE - 1):] + [(x, reads)]
        return reads

    @staticmethod
    def _axis_reads(xp, unit, res, last, corner_max, last_index, shift, offsets):
        """Along one axis: the positions within their cells, and the vertices read (``offsets`` from
        each cell's first).  ``res`` cells with vertices up to ``last`` (``last_index`` as an int,
        ``corner_max`` the last cell's first vertex): numbers, or ``(L, 1)`` arrays of each level's
        (``unit`` then ``(n,)``, and the results ``(L, n)``)."""
        position = xp.clip(unit * res - shift, 0, last)
        corner = xp.minimum(xp.floor(position), corner_max)  # the last vertex closes the last cell
        first = corner.astype(xp.int64)
        # Vertices past the edge read the edge's (a level of one vertex reads it every time).
        return position - corner, [xp.clip(first + o, 0, last_index) for o in offsets]

    def _index(self, xp, levels, ix, iy):
        """The table rows of vertices ``(ix, iy)``, ``(L, n)``: hashed on the levels that hash."""
        hashed = None
        if levels.any_hashed:
            h = (ix.astype(xp.uint64) * _HASH_PRIMES[0]) ^ (iy.astype(xp.uint64) * _HASH_PRIMES[1])
            hashed = (h & levels.masks).astype(xp.int64)
            if levels.all_hashed:
                return hashed + levels.offsets
        dense = iy * levels.sides + ix
        return (dense if hashed is None else xp.where(levels.hashed, hashed, dense)) + levels.offsets

    def _read_constants(self, xp, dtype) -> "LevelReads":
        """Each level's numbers that a read needs, on ``xp``'s device (made once: from the lists each
        step, they would be copied to the GPU)."""
        key = (xp.__name__, np.dtype(dtype).str)
        if self._reads_on is None or self._reads_on[0] != key:
            self._reads_on = (key, LevelReads.of(self, xp, dtype))
        return self._reads_on[1]

    def _corner_features(self, indices):
        """``table[indices]``: ``(K, n, L, F)``."""
        return take_rows(self.params["table"], indices)

    # -- forward and backward ------------------------------------------------------------
    def forward(self, x):
        """``(n, 2)`` in [-1, 1], or a :class:`Lattice` of ``n`` points -> ``(n, levels * features)``,
        level-major (then the detail level's feature, if any)."""
        self._rectangles = None
        if isinstance(x, Lattice):
            if not any(self.hashed):
                return lattice_reads.forward(self, x)
            x = x.points(get_array_module(self.params["table"]))
        self._x = x
        self._fused = fused.applies(x, self.params["table"])
        if self._fused:  # one kernel for every level, where the lookup takes dozens of operations
            mixed = fused.read_grid(self, x)
        else:
            reads = self._lookup(x)
            mixed = kernels.gather_weighted(self.params["table"], reads.indices, reads.weights, reads.spread)
        mixed = mixed.reshape(len(x), -1)
        if not self.detail:
            return mixed
        return get_array_module(x).concatenate([mixed, self.detail_grid.forward(x)], axis=1)

    def backward(self, grad_out, need_grad_in: bool = True):
        xp = get_array_module(grad_out)
        detail_grad = None
        if self.detail:
            detail_grad = self.detail_grid.backward(grad_out[:, -1:], need_grad_in)
            self._link_detail()  # its backward made a new gradient array
            grad_out = grad_out[:, :-1]
        if self._rectangles is not None:
            if need_grad_in:
                raise ValueError("a lattice's points have no gradient: a HashGrid reads a Lattice as a "
                                 "network's first layer only")
            lattice_reads.backward(self, xp, grad_out)
            return None
        if self._fused and not need_grad_in:
            self._backward_fused(xp, grad_out)
            return None
        indices, weights, fractions, _ = self._lookup(self._x)
        n = len(grad_out)
        per_level = grad_out.reshape(n, self.levels, self.features)  # (n, L, F)
        flat_index = indices.reshape(-1)
        rows = self.params["table"].shape[0]
        if flat_index.size < rows * self.sparse_reads:
            grad, index = sparse_gradient(flat_index, self.params["table"].shape, grad_out.dtype,
                                          lambda flat: self._compact(xp, flat))
            self.grads["table"], grad_table = grad, grad.values
        else:
            grad_table = self.grads["table"] = self._dense_grad(xp)
            index = flat_index
        # The table's own rows (not renumbered): the scatter may then sum small levels apart.
        levels = (self.offsets, self.sizes) if index is flat_index else None
        kernels.scatter_weighted(grad_table, index, weights, per_level, levels)
        if not need_grad_in:
            return None
        grad = self._input_grad(xp, per_level, indices, fractions)
        return grad if detail_grad is None else grad + detail_grad

    def _backward_fused(self, xp, grad_out):
        """The table's gradient in one kernel (:func:`~ironlearn.fused.read_grid_backward`): a
        :class:`MaskedGrad` of the rows read where the batch reads few of them, as the lookup's
        path decides, else the dense gradient."""
        table = self.params["table"]
        reads = self.taps ** 2 * len(grad_out) * self.levels
        if reads < table.shape[0] * self.sparse_reads:
            grad = MaskedGrad(xp.zeros(table.shape[0], dtype=bool), xp.empty_like(table))
            fused.read_grid_backward(self, self._x, grad_out, grad.values, grad.touched)
        else:
            grad = self._dense_grad(xp)
            fused.read_grid_backward(self, self._x, grad_out, grad)
        self.grads["table"] = grad

    def _dense_grad(self, xp):
        grad = self.grads["table"]
        return grad if not isinstance(grad, (RowGrad, MaskedGrad, BlockGrad)) else xp.zeros_like(self.params["table"])

    def _compact(self, xp, flat_index):
        """The rows ``flat_index`` reads, sorted, and ``flat_index`` renumbered into them.

        Marks and slots are two arrays the size of the table, kept between steps: marking
        and a scan cost a few milliseconds on millions of rows, where ``unique`` (a sort of
        the whole batch) costs tens.
        """
        if self._marks is None:  # Layer.to() drops them, so they follow the table's device
            rows = self.params["table"].shape[0]
            self._marks, self._slots = xp.zeros(rows, dtype=bool), xp.zeros(rows, dtype=xp.int32)
        self._marks[flat_index] = True
        touched = xp.flatnonzero(self._marks)
        self._marks[touched] = False
        self._slots[touched] = xp.arange(len(touched), dtype=xp.int32)
        return touched, self._slots[flat_index]

    def _input_grad(self, xp, per_level, indices, fractions):
        """d(loss)/d(x) through the read's weights: each is a product of one weight along x and
        one along y, so d/d(fx) swaps the first for its slope (and d/d(fy) the second)."""
        along = (self._corner_features(indices) * per_level).sum(axis=-1)  # (K, n, L): g . vertex feature
        offsets, weights_along = INTERPOLATIONS[self.interpolation]
        fx, fy = fractions
        (wx, sx), (wy, sy) = weights_along(fx), weights_along(fy)
        d_fx = xp.zeros_like(fx)
        d_fy = xp.zeros_like(fy)
        for k in range(len(along)):
            j, i = divmod(k, len(offsets))
            d_fx += along[k] * sx[i] * wy[j]
            d_fy += along[k] * wx[i] * sy[j]
        grad = xp.empty((per_level.shape[0], 2), dtype=per_level.dtype)
        for axis, d_f in enumerate((d_fx, d_fy)):
            resolutions, last = (column.T for column in self._read_constants(xp, per_level.dtype).axes[axis][:2])
            # d position / d x: res / 2 where the position is not clamped at the grid's edge, else 0
            position = (self._x[:, axis, None] + 1) * 0.5 * resolutions - (0.5 if self.centred else 0.0)
            inside = (position >= 0) & (position <= last)
            grad[:, axis] = (d_f * (resolutions * 0.5) * inside).sum(axis=1)
        return grad

    def to(self, backend) -> "HashGrid":
        self._lookups, self._axes = [], {}
        super().to(backend)
        table = self.params["table"]
        self._read_constants(get_array_module(table), table.dtype)  # copied to the device here, not in a step
        if on_device(table):
            fused.levels_on(self, get_array_module(table))  # the fused kernels' numbers too
        if self.detail:
            self.detail_grid.to(backend)
            self._link_detail()  # its moved arrays under this layer's names again
        return self

