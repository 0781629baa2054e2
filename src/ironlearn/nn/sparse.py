"""Gradients that are zero outside a few rows of their parameter (a hash-grid table's).

Two forms of the same thing: on the host a :class:`RowGrad` lists the rows, so that a step
costs what the batch touches; on a GPU a :class:`MaskedGrad` marks them in a mask as large as
the table, because listing them (``nonzero``) needs their count on the host, a sync every step.
A third, :class:`BlockGrad`, holds the rows of one rectangle of a level, where a tile of pixels
reads a level (a :class:`~ironlearn.nn.lattice.Lattice`): the optimizers update it through
views, with no list of rows at all.  The optimizers update only the rows each names ("lazy"
updates), so all three train alike.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..backend import get_array_module, on_device, put_rows, take_rows


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


@dataclass
class MaskedGrad:
    """The gradient of a ``(rows, features)`` parameter that is zero outside the rows ``touched``
    marks: a :class:`RowGrad` for a GPU, whose size never depends on the data.

    Attributes
    ----------
    touched : bool array ``(rows,)``
        The rows that have a gradient.
    values : array ``(rows, features)``
        The whole gradient, zeros outside ``touched``.
    """

    touched: object
    values: object

    @property
    def shape(self) -> tuple:
        return tuple(self.values.shape)

    def dense(self):
        """The full gradient array (``values`` itself)."""
        return self.values

    @classmethod
    def marking(cls, index, shape, dtype) -> "MaskedGrad":
        """Zeros of ``shape``, with the rows ``index`` reads marked."""
        xp = get_array_module(index)
        touched = xp.zeros(shape[0], dtype=bool)
        touched[index] = True
        return cls(touched, xp.zeros(shape, dtype=dtype))


def rectangle(table, offset: int, sides: tuple, corner: tuple, size: tuple):
    """The vertices ``corner[0] <= y < corner[0] + size[0]`` and ``corner[1] <= x < corner[1] +
    size[1]`` of a level laid out row-major, ``sides = (down, across)`` vertices from row ``offset``
    of ``table``: a ``(h, w, features)`` view."""
    (down, across), (y, x), (h, w) = sides, corner, size
    return table[offset:offset + down * across].reshape(down, across, -1)[y:y + h, x:x + w]


@dataclass
class BlockGrad:
    """The gradient of a ``(rows, features)`` table that is zero outside one rectangle of a level.

    The level holds ``sides = (down, across)`` vertices row-major from row ``offset`` of the table;
    the rectangle is its vertices ``corner[0] <= y < corner[0] + h`` and ``corner[1] <= x <
    corner[1] + w``, and ``values``, ``(h, w, features)``, their gradients.
    """

    offset: int
    sides: tuple
    corner: tuple
    values: object
    shape: tuple

    def view(self, array):
        """The rectangle's rows of a table shaped as the parameter, as a ``(h, w, features)`` view."""
        return rectangle(array, self.offset, self.sides, self.corner, self.values.shape[:2])

    def dense(self):
        """The full gradient array, zeros outside the rectangle."""
        out = get_array_module(self.values).zeros(self.shape, dtype=self.values.dtype)
        self.view(out)[...] = self.values
        return out


def sparse_gradient(index, shape, dtype, compact):
    """The gradient of a ``shape`` table whose rows ``index`` reads (a flat int array, repeats
    allowed), not filled in yet, and where each entry of ``index`` adds into its values.

    On the host: a :class:`RowGrad` of the rows read, found by ``compact(index) -> (rows,
    index renumbered into them)``.  On a GPU: a :class:`MaskedGrad`, with ``index`` as it is.

    Returns
    -------
    gradient : RowGrad or MaskedGrad
    index : int array
        ``index`` as rows of ``gradient.values``.
    """
    if on_device(index):
        return MaskedGrad.marking(index, shape, dtype), index
    rows, index = compact(index)
    return RowGrad(rows, get_array_module(index).empty((len(rows), shape[1]), dtype=dtype), tuple(shape)), index


def add_gradients(total: dict, grads: dict) -> dict:
    """Adds ``grads`` into ``total``'s dense arrays (from :func:`copy_gradients`), name by name;
    a :class:`RowGrad` adds into the rows it names.  Returns ``total``."""
    for name, grad in grads.items():
        if isinstance(grad, RowGrad):
            put_rows(total[name], grad.rows, take_rows(total[name], grad.rows) + grad.values)
        elif isinstance(grad, BlockGrad):
            grad.view(total[name])[...] += grad.values
        elif isinstance(grad, MaskedGrad):
            total[name] += grad.values
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
        elif isinstance(grad, BlockGrad):
            if held is None or held.shape != grad.shape:
                held = get_array_module(grad.values).zeros(grad.shape, dtype=grad.values.dtype)
            else:
                held[...] = 0
            grad.view(held)[...] = grad.values
        elif isinstance(grad, MaskedGrad):
            if held is None or held.shape != grad.shape:
                held = grad.values.copy()
            else:
                held[...] = grad.values
        elif held is None or held.shape != grad.shape:
            held = grad.copy()
        else:
            held[...] = grad
        into[name] = held
    return into
