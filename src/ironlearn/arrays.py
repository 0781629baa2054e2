"""NumPy's inner loops kept long: the same arithmetic as plain broadcasting and slicing, faster.

NumPy runs an elementwise operation as an outer loop over an inner one, and the inner loop is
the last axis the operands share.  Where that axis is short (a bias of 32 values added to each of
65,536 rows, the 2 features of a level taken from 8 columns), the step pays a loop's overhead for
a few values; these helpers arrange the same work so that the inner loop runs down a long axis.
They give the same values as the plain expression, value for value, and on CuPy (one kernel
either way) they are the plain expression.
"""

from __future__ import annotations

import numpy as np

from .backend import get_array_module


#: Values in one row of :func:`broadcast_rows`' blocks: long enough that NumPy's inner loop runs at
#: its vector speed (longer blocks ran no faster, much shorter ones slower).
ROW_BLOCK = 8192


def broadcast_rows(ufunc, matrix, row, out):
    """``ufunc(matrix, row, out=out)``, ``row`` applied to every row of the 2-D ``matrix``.

    NumPy runs a broadcast of a short row one inner loop a row: adding a bias of 32 to 65,536
    rows is 65,536 loops of 32 values.  Here the rows go in blocks of ``ROW_BLOCK`` values against
    the row tiled as many times, a few long loops, with the same arithmetic value for value
    (measured: docs/benchmark-log.md, '(f) How far is a step from its floor?').  CuPy arrays, arrays that
    are not C-contiguous and arrays that are not 2-D
    broadcast as usual.
    """
    if get_array_module(matrix) is not np or matrix.ndim != 2 or not (
            matrix.flags.c_contiguous and out.flags.c_contiguous):
        return ufunc(matrix, row, out=out)
    n, width = matrix.shape
    per_block = max(1, ROW_BLOCK // max(width, 1))
    whole = n - n % per_block
    if whole == 0:
        return ufunc(matrix, row, out=out)
    blocks = (-1, per_block * width)
    ufunc(matrix[:whole].reshape(blocks), np.tile(row, per_block), out=out[:whole].reshape(blocks))
    ufunc(matrix[whole:], row, out=out[whole:])
    return out


def outer(column, row):
    """The ``(n, 1) x (1, m)`` product ``column @ row``, a product a value.

    A matrix product of inner size 1 is slow in OpenBLAS; NumPy's einsum is the fastest of the
    three ways (one product a value in each: the same result; measured: docs/benchmark-log.md,
    'Measurements the code's comments quoted').
    """
    xp = get_array_module(column)
    if xp is not np:
        return column * row
    return np.einsum("i,j->ij", column.ravel(), row.ravel())


def join_columns(parts):
    """``concatenate(parts, axis=1)`` of 2-D arrays with the same number of rows.

    Concatenated along the columns, each part's rows are copied a few values at a time; copied a
    column at a time, each copy runs down the rows (measured: docs/benchmark-log.md,
    '(f) How far is a step from its floor?').
    """
    xp = get_array_module(parts[0])
    if xp is not np or len(parts) == 1:
        return xp.concatenate(parts, axis=1)
    out = np.empty((len(parts[0]), sum(part.shape[1] for part in parts)), dtype=np.result_type(*parts))
    column = 0
    for part in parts:
        for j in range(part.shape[1]):
            out[:, column] = part[:, j]
            column += 1
    return out


def take_columns(matrix, start: int, stop: int):
    """``matrix[:, start:stop]`` as a C-contiguous array (a copy), a column at a time on NumPy
    (see :func:`join_columns`; measured: docs/benchmark-log.md, 'Measurements the code's comments quoted')."""
    xp = get_array_module(matrix)
    if xp is not np or stop - start == matrix.shape[1]:
        return matrix[:, start:stop].copy()  # C order
    out = np.empty((len(matrix), stop - start), dtype=matrix.dtype)
    for j in range(start, stop):
        out[:, j - start] = matrix[:, j]
    return out
