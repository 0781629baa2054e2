"""The helpers that keep NumPy's inner loops long give what plain NumPy gives, value for value."""

import numpy as np
import pytest

from ironlearn.arrays import broadcast_rows, join_columns, take_columns


@pytest.mark.parametrize("rows", [1, 255, 256, 257, 1000])
@pytest.mark.parametrize("width", [1, 3, 32, 9000])
@pytest.mark.parametrize("ufunc", [np.add, np.maximum], ids=lambda u: u.__name__)
def test_broadcast_rows_is_numpy_broadcasting_value_for_value(rows, width, ufunc):
    rng = np.random.default_rng(rows + width)
    matrix = rng.normal(size=(rows, width)).astype(np.float32)
    row = rng.normal(size=width).astype(np.float32)
    out = broadcast_rows(ufunc, matrix, row, out=np.empty_like(matrix))
    np.testing.assert_array_equal(out, ufunc(matrix, row))
    transposed = np.asfortranarray(matrix)  # not C-contiguous: broadcast as usual
    np.testing.assert_array_equal(broadcast_rows(ufunc, transposed, row, out=np.empty_like(transposed)), out)


@pytest.mark.parametrize("widths", [[2, 2, 2, 2], [1], [3, 1, 5]])
def test_join_columns_is_concatenate(widths):
    rng = np.random.default_rng(len(widths))
    parts = [rng.normal(size=(257, w)).astype(np.float32) for w in widths]
    joined = join_columns(parts)
    np.testing.assert_array_equal(joined, np.concatenate(parts, axis=1))
    assert joined.dtype == np.float32 and joined.flags.c_contiguous


@pytest.mark.parametrize("start, stop", [(0, 2), (2, 4), (6, 8), (0, 8), (3, 4)])
def test_take_columns_is_a_contiguous_slice(start, stop):
    matrix = np.random.default_rng(start).normal(size=(300, 8)).astype(np.float32)
    taken = take_columns(matrix, start, stop)
    np.testing.assert_array_equal(taken, matrix[:, start:stop])
    assert taken.flags.c_contiguous
    taken[...] = 0  # a copy: the matrix is untouched
    assert np.count_nonzero(matrix[:, start:stop]) == matrix[:, start:stop].size
