"""How a :class:`~ironlearn.nn.HashGrid` reads a :class:`~ironlearn.nn.lattice.Lattice` (a tile of
pixel centres): each dense level as two small matrix products, one along each axis, of the 1-D
weights with the rectangle of vertices the lattice covers, or on a GPU every level in one fused
kernel (:mod:`ironlearn.fused`).  The gradient falls on that rectangle: a
:class:`~ironlearn.nn.sparse.BlockGrad` when it is a small part of a one-level table.
"""

from __future__ import annotations

import numpy as np

from .. import fused
from ..arrays import join_columns, take_columns
from ..backend import get_array_module
from .lattice import AxisRead, Lattice
from .sparse import BlockGrad, rectangle
from .splines import INTERPOLATIONS

AXIS_CACHE = 1024  # a level's reads along the axes of recent lattices (tiles recur every epoch)


def axis_read(grid, xp, level: int, axis: int, coords) -> AxisRead:
    """A level's read along one axis at a lattice's ``coords`` (host float32), worked out on the
    host and kept for the next lattice with the same axis (a tile's recur every epoch)."""
    key = (xp.__name__, level, axis, coords.tobytes())
    known = grid._axes.get(key)
    if known is not None:
        return known
    offsets, weights_along = INTERPOLATIONS[grid.interpolation]
    res = (grid.resolutions, grid.resolutions_y)[axis][level]
    last = (grid.sides, grid.sides_y)[axis][level] - 1
    fractions, vertices = grid._axis_reads(np, (coords + 1) * np.float32(0.5), res, last, max(last - 1, 0),
                                           last, 0.5 if grid.centred else 0.0, offsets)
    first = int(min(v.min() for v in vertices))
    matrix = np.zeros((len(coords), int(max(v.max() for v in vertices)) - first + 1), np.float32)
    points = np.arange(len(coords))
    for vertex, weight in zip(vertices, weights_along(fractions)[0]):
        matrix[points, vertex - first] += weight  # past an edge, offsets read the same vertex
    if len(grid._axes) >= AXIS_CACHE:
        grid._axes.clear()
    grid._axes[key] = known = AxisRead(first, matrix, xp, grid.features if axis == 0 else None)
    return known


def device_axes(grid, xp, lattice: Lattice) -> tuple:
    """The lattice's axes on ``xp``'s device, for the fused kernels: kept with the levels'
    reads of them (a tile's axes recur every epoch, so each is copied once)."""
    axes = []
    for axis, coords in enumerate((lattice.xs, lattice.ys)):
        key = (xp.__name__, "coordinates", axis, coords.tobytes())
        if key not in grid._axes:
            if len(grid._axes) >= AXIS_CACHE:
                grid._axes.clear()
            grid._axes[key] = xp.asarray(coords)
        axes.append(grid._axes[key])
    return tuple(axes)


def forward(grid, lattice: Lattice):
    """``grid``'s read of ``lattice``: ``(n, levels * features)`` (then the detail level's)."""
    table = grid.params["table"]
    xp = get_array_module(table)
    grid._rectangles = [(level, axis_read(grid, xp, level, 1, lattice.ys), axis_read(grid, xp, level, 0, lattice.xs))
                        for level in range(grid.levels)]
    grid._fused = fused.applies(table)
    if grid._fused:  # every level in one kernel, where the products take a few operations a level
        grid._lattice_on = device_axes(grid, xp, lattice)
        parts = [fused.read_grid(grid, lattice=grid._lattice_on)]
    else:
        parts = _products(grid, xp, table, lattice)
    if grid.detail:
        parts.append(grid.detail_grid.forward(lattice))
    return join_columns(parts)


def _products(grid, xp, table, lattice: Lattice) -> list:
    """Each level's read of a lattice as two matrix products: ``(n, features)`` a level."""
    parts = []
    for level, along_y, along_x in grid._rectangles:
        # The rectangle of vertices read, as rows of ``across * features`` (a view, no copy).
        vertices = rectangle(table, int(grid.offsets[level]), (grid.sides_y[level], grid.sides[level]),
                             (along_y.first, along_x.first), (along_y.vertices, along_x.vertices))
        # out[j, i] = sum over (b, a) of along_y[j, b] along_x[i, a] vertices[b, a]: down, then across.
        mixed = along_x.across(along_y.down(vertices.reshape(along_y.vertices, -1), xp), xp)  # (h, w * F)
        parts.append(mixed.reshape(len(lattice), grid.features))
    return parts


def backward(grid, xp, grad_out):
    """The table's gradient from a lattice's read: each level's products transposed, onto the
    rectangle of vertices the lattice read (a :class:`BlockGrad` of a one-level table when the
    rectangle is a small part of it)."""
    features = grid.features
    blocks = []
    for level, along_y, along_x in grid._rectangles:
        corner = (along_y.first, along_x.first)
        if grid._fused:
            spread = xp.empty((along_y.vertices, along_x.vertices, features), dtype=grad_out.dtype)
            fused.read_lattice_backward(grid, grid._lattice_on, grad_out, level, spread, corner)
        else:
            g = take_columns(grad_out, level * features, (level + 1) * features).reshape(along_y.points, -1)
            spread = along_y.down_transposed(along_x.across_transposed(g, xp), xp)  # (down, across * F)
        blocks.append(BlockGrad(int(grid.offsets[level]), (grid.sides_y[level], grid.sides[level]), corner,
                                spread.reshape(along_y.vertices, along_x.vertices, features),
                                tuple(grid.params["table"].shape)))
    if grid.levels == 1 and blocks[0].values[..., 0].size < len(grid.params["table"]) * grid.sparse_reads:
        grid.grads["table"] = blocks[0]
        return
    grad = grid.grads["table"] = grid._dense_grad(xp)
    grad.fill(0)
    for block in blocks:
        block.view(grad)[...] = block.values
