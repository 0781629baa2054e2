"""What counts as a number where a user gives one: the tests every layer makes of its arguments,
in one home (the command line's own text parsing is ``cli.argtypes``).

A bool is never a number here (``True`` for ``steps`` is a mistake, not 1), NumPy's scalars are
numbers, and finiteness is tested without ``float()``, which raises OverflowError for an int past
float's range.
"""

from __future__ import annotations

import numbers
import sys


def is_whole(value) -> bool:
    """Whether ``value`` is a whole number (a NumPy one too), and not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_number(value) -> bool:
    """Whether ``value`` is a real number (a NumPy one too), and not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def is_finite(value) -> bool:
    """Whether ``value`` is a real number that a float holds: not NaN, infinite, or an int beyond."""
    return is_number(value) and -sys.float_info.max <= value <= sys.float_info.max
