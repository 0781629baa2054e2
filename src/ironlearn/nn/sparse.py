"""Gradients that are zero outside a few rows of their parameter (a hash-grid table's)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..backend import get_array_module


def _records(array):
    """A C-contiguous ``(rows, k)`` NumPy array seen as ``rows`` one-item records of k values."""
    return array.view(np.dtype((np.void, array.itemsize * array.shape[1]))).reshape(-1)


def take_rows(array, index):
    """``array[index]`` for a 2-D ``array``: shape ``index.shape + (k,)``.

    NumPy gathers one-item records through ``take`` several times faster than rows of a 2-D
    array through fancy indexing (463,890 rows of two float32 out of 4.6 million: 2.2 ms against
    8.0 ms; a hash grid's corners: 3.5 ms against 48); CuPy's fancy indexing is already one kernel.
    """
    if not isinstance(array, np.ndarray):
        return array[index]
    array = np.ascontiguousarray(array)
    return np.take(_records(array), index).view(array.dtype).reshape(*np.shape(index), array.shape[1])


def put_rows(array, rows, values) -> None:
    """``array[rows] = values`` for a 2-D ``array`` and distinct ``rows``, as :func:`take_rows` reads."""
    if not isinstance(array, np.ndarray) or not array.flags.c_contiguous:
        array[rows] = values
        return
    np.put(_records(array), rows, _records(np.ascontiguousarray(values, dtype=array.dtype)))


@dataclass
class RowGrad:
    """The gradient of a ``shape`` parameter that is zero outside ``rows``.

    Attributes
    ----------
    rows : int array ``(k,)``
        The rows that have a gradient, each once, sorted.
    values : array ``(k, features)``
        Their gradients.
    shape : tuple
        The parameter's shape.
    """

    rows: object
    values: object
    shape: tuple

    def dense(self):
        """The full gradient array, zeros outside ``rows``."""
        xp = get_array_module(self.values)
        out = xp.zeros(self.shape, dtype=self.values.dtype)
        out[self.rows] = self.values
        return out


def add_gradients(total: dict, grads: dict) -> dict:
    """Adds ``grads`` into ``total``'s dense arrays (from :func:`copy_gradients`), name by name;
    a :class:`RowGrad` adds into the rows it names.  Returns ``total``."""
    for name, grad in grads.items():
        if isinstance(grad, RowGrad):
            put_rows(total[name], grad.rows, take_rows(total[name], grad.rows) + grad.values)
        else:
            total[name] += grad
    return total


def copy_gradients(grads: dict, into: dict | None = None) -> dict:
    """The gradients as dense arrays of their own (the layers overwrite theirs on every backward
    pass), reusing ``into``'s arrays where they fit."""
    into = {} if into is None else into
    for name, grad in grads.items():
        held = into.get(name)
        if isinstance(grad, RowGrad):
            xp = get_array_module(grad.values)
            if held is None or held.shape != grad.shape:
                held = xp.zeros(grad.shape, dtype=grad.values.dtype)
            else:
                held[...] = 0
            put_rows(held, grad.rows, grad.values)
        elif held is None or held.shape != grad.shape:
            held = grad.copy()
        else:
            held[...] = grad
        into[name] = held
    return into
