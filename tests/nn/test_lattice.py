"""A Lattice read as two products a level gives what reading its points one by one gives."""

import numpy as np
import pytest

from ironlearn.image.coords import axis, pixel_grid
from ironlearn.nn import HashGrid, Linear, Sequential
from ironlearn.nn.lattice import AxisRead, Lattice
from ironlearn.nn.sparse import BlockGrad, RowGrad, add_gradients, copy_gradients
from ironlearn.optim import SGD, Adam

GRIDS = {  # name: (HashGrid settings, picture width and height, the lattice's columns and rows)
    "a vertex per pixel, a tile": (dict(levels=1, features=3, log2_table_size=12, coarsest=48, finest=48,
                                        centred=True, interpolation="bspline", finest_y=40),
                                   (48, 40), (slice(13, 37), slice(0, 21))),
    "fewer vertices than pixels": (dict(levels=1, features=1, log2_table_size=12, coarsest=29, finest=29,
                                        centred=True, interpolation="bspline"), (40, 40), (slice(None), slice(None))),
    "a dense pyramid on corners": (dict(levels=3, features=2, log2_table_size=12, coarsest=4, finest=30),
                                   (50, 30), (slice(None), slice(None))),
    "a pyramid and a detail level": (dict(levels=2, features=2, log2_table_size=12, coarsest=4, finest=16, detail=23),
                                     (37, 23), (slice(5, None), slice(None))),
}


def _read_both_ways(grid, lattice, rng):
    """Output and table gradient through the lattice, then through its points one by one."""
    upstream = rng.normal(size=(len(lattice), grid.out_features)).astype(np.float32)
    results = []
    for x in (lattice, lattice.points().copy()):
        out = grid.forward(x)
        grid.backward(upstream, need_grad_in=False)
        grads = {name: g.dense() if isinstance(g, (RowGrad, BlockGrad)) else g.copy() for name, g in grid.grads.items()}
        results.append((out, grads))
    return results


@pytest.mark.parametrize("name", GRIDS)
def test_a_lattice_reads_and_trains_a_grid_as_its_points_do(rng, name):
    settings, (width, height), (columns, rows) = GRIDS[name]
    grid = HashGrid(**settings, rng=rng)
    for table in grid.params.values():
        table[...] = rng.normal(size=table.shape)
    lattice = Lattice(axis(width)[columns], axis(height)[rows])
    (out, grads), (point_out, point_grads) = _read_both_ways(grid, lattice, rng)
    np.testing.assert_allclose(out, point_out, rtol=1e-5, atol=1e-5)
    for name_ in grads:
        np.testing.assert_allclose(grads[name_], point_grads[name_], rtol=1e-4, atol=1e-4)


def test_a_tile_of_a_large_level_gets_a_block_gradient_that_the_optimizers_update_lazily(rng):
    grid = HashGrid(levels=1, features=2, log2_table_size=14, coarsest=100, finest=100, centred=True,
                    interpolation="bspline", finest_y=80, rng=rng)
    lattice = Lattice(axis(100)[40:56], axis(80)[10:20])
    grid.forward(lattice)
    grid.backward(rng.normal(size=(len(lattice), 2)).astype(np.float32), need_grad_in=False)
    block = grid.grads["table"]
    assert isinstance(block, BlockGrad) and block.values.shape == (10 + 3, 16 + 3, 2)  # a vertex past each side
    rows = np.flatnonzero(block.dense().any(axis=1))
    assert len(rows) >= 10 * 16 and _block_rows(block)[rows].all()  # the rows of the pixels, within the block
    for make in (lambda p: Adam(p, lr=0.1), lambda p: SGD(p, lr=0.1, momentum=0.9)):
        table = grid.params["table"]
        by_block, by_rows = table.copy(), table.copy()
        blocks, row_steps = make({"t": by_block}), make({"t": by_rows})
        all_rows = np.flatnonzero(_block_rows(block))
        for _ in range(3):
            blocks.step({"t": block})
            row_steps.step({"t": RowGrad(all_rows, block.dense()[all_rows], block.shape)})
        np.testing.assert_allclose(by_block, by_rows, rtol=1e-6, atol=1e-7)
        untouched = np.setdiff1d(np.arange(len(table)), all_rows)
        np.testing.assert_array_equal(by_block[untouched], table[untouched])


def _block_rows(block):
    marks = np.zeros((block.shape[0], 1), np.float32)
    block.view(marks)[...] = 1
    return marks[:, 0] > 0


def test_block_gradients_copy_and_add_into_dense_arrays(rng):
    values = rng.normal(size=(2, 3, 1)).astype(np.float32)
    grads = {"t": BlockGrad(4, (5, 6), (1, 2), values, (40, 1))}
    total = copy_gradients(grads)
    np.testing.assert_array_equal(total["t"], grads["t"].dense())
    assert total["t"][4 + 1 * 6 + 2, 0] == values[0, 0, 0]
    add_gradients(total, grads)
    np.testing.assert_array_equal(total["t"], 2 * grads["t"].dense())


def test_an_axis_read_in_blocks_is_its_matrix(rng):
    matrix = np.zeros((70, 80), np.float32)
    for i in range(70):  # a band, as nearby points read nearby vertices
        matrix[i, i:i + 4] = rng.uniform(size=4)
    read = AxisRead(3, matrix, np, features=2)
    values = rng.normal(size=(80, 5)).astype(np.float32)
    np.testing.assert_allclose(read.down(values, np), matrix @ values, rtol=1e-5)
    grad = rng.normal(size=(70, 5)).astype(np.float32)
    np.testing.assert_allclose(read.down_transposed(grad, np), matrix.T @ grad, rtol=1e-5, atol=1e-6)
    rows = rng.normal(size=(4, 80, 2)).astype(np.float32)
    expected = np.einsum("ia,jaf->jif", matrix, rows).reshape(4, -1)
    np.testing.assert_allclose(read.across(rows.reshape(4, -1), np), expected, rtol=1e-5, atol=1e-6)
    back = rng.normal(size=(4, 70, 2)).astype(np.float32)
    np.testing.assert_allclose(read.across_transposed(back.reshape(4, -1), np),
                               np.einsum("ia,jif->jaf", matrix, back).reshape(4, -1), rtol=1e-5, atol=1e-5)


def test_a_lattice_is_its_points_in_pixel_grid_order():
    lattice = Lattice(axis(7), axis(5))
    assert len(lattice) == 35 and lattice.shape == (5, 7)
    np.testing.assert_array_equal(lattice.points(), pixel_grid(7, 5))
    assert lattice.points() is lattice.points()  # made once: a layer may cache what it derives


def test_a_hashed_level_reads_a_lattice_point_by_point(rng):
    grid = HashGrid(levels=2, features=2, log2_table_size=6, coarsest=4, finest=32, rng=rng)
    assert grid.hashed[-1]
    lattice = Lattice(axis(20), axis(10))
    np.testing.assert_array_equal(grid.forward(lattice), grid.forward(lattice.points()))


def test_only_a_first_layer_reads_a_lattice(rng):
    grid = HashGrid(levels=1, features=1, log2_table_size=10, coarsest=8, finest=8, rng=rng)
    grid.forward(Lattice(axis(8), axis(8)))
    with pytest.raises(ValueError, match="first layer"):
        grid.backward(np.ones((64, 1), np.float32), need_grad_in=True)
    model = Sequential(grid, Linear(1, 1, rng=rng))
    model.backward(model.forward(Lattice(axis(8), axis(8))))  # the first layer needs no input gradient
