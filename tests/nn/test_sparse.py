import numpy as np

from ironlearn.backend import put_rows, take_rows
from ironlearn.nn.sparse import RowGrad, add_gradients, copy_gradients


def test_take_rows_and_put_rows_read_and_write_as_fancy_indexing(rng):
    table = rng.normal(size=(50, 3)).astype(np.float32)
    index = rng.integers(0, 50, size=(4, 7, 2))
    np.testing.assert_array_equal(take_rows(table, index), table[index])
    rows, values = np.array([1, 8, 30]), rng.normal(size=(3, 3))  # float64 values are cast
    expected = table.copy()
    expected[rows] = values
    put_rows(table, rows, values)
    np.testing.assert_array_equal(table, expected)
    strided = np.zeros((50, 6), np.float32)[:, ::2]  # not contiguous: written through indexing
    put_rows(strided, rows, values)
    np.testing.assert_array_equal(strided[rows], values.astype(np.float32))


def test_row_gradients_copy_and_add_into_dense_arrays(rng):
    values = rng.normal(size=(2, 2)).astype(np.float32)
    grads = {"t": RowGrad(np.array([1, 3]), values, (5, 2))}
    total = copy_gradients(grads)
    np.testing.assert_array_equal(total["t"], grads["t"].dense())
    add_gradients(total, grads)
    np.testing.assert_array_equal(total["t"], 2 * grads["t"].dense())
