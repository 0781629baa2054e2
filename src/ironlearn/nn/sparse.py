"""Gradients that are zero outside a few rows of their parameter (a hash-grid table's)."""

from __future__ import annotations

from dataclasses import dataclass

from ..backend import get_array_module


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
