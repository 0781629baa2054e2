"""Gradients that are zero outside a few rows of their parameter (a hash-grid table's)."""

from __future__ import annotations

from dataclasses import dataclass

from ..backend import get_array_module, put_rows, take_rows


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
