"""What counts as a number, or as True or False, where a user gives one: the tests every layer makes
of its arguments, in one home (the command line's own text parsing is ``cli.argtypes``), and
:func:`check_argument`, which checks an argument against its annotation.

A bool is never a number here (``True`` for ``steps`` is a mistake, not 1), NumPy's scalars are
numbers, and finiteness is tested without ``float()``, which raises OverflowError for an int past
float's range.
"""

from __future__ import annotations

import collections.abc
import numbers
import os
import reprlib
import sys
import types
import typing

import numpy as np


def is_whole(value) -> bool:
    """Whether ``value`` is a whole number (a NumPy one too), and not a bool."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_number(value) -> bool:
    """Whether ``value`` is a real number (a NumPy one too), and not a bool."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool)


def is_finite(value) -> bool:
    """Whether ``value`` is a real number that a float holds: not NaN, infinite, or an int beyond."""
    return is_number(value) and -sys.float_info.max <= value <= sys.float_info.max


def is_flag(value) -> bool:
    """Whether ``value`` is True or False (NumPy's bool too): ``'False'`` is a true string, and
    ``force='no'`` replaced a user's file."""
    return isinstance(value, (bool, np.bool_))


def check_argument(name: str, value, annotation) -> None:
    """Raise TypeError unless ``value`` is of a kind that ``annotation`` (resolved, as
    ``inspect.signature(..., eval_str=True)`` gives it) admits (a value that a ``Literal`` does not
    list too: ``progress='no'``), and ValueError for a number that is not finite where a number is
    asked for.

    An annotation is a type or a union of them: ``bool`` takes only True and False, ``int`` only a
    whole number, ``float`` any finite number, ``None`` None, ``Literal[...]`` those values,
    ``Callable`` a function, another class its instances.  Anything else (``tuple[int, int]``) is
    not checked here.

    Examples
    --------
    >>> check_argument("force", "no", bool)
    Traceback (most recent call last):
    TypeError: force must be True or False (got 'no', of type str)
    >>> check_argument("scale", float("nan"), float | None)
    Traceback (most recent call last):
    ValueError: scale must be a finite number (got nan)
    """
    members = typing.get_args(annotation) if typing.get_origin(annotation) in (typing.Union, types.UnionType) \
        else (annotation,)
    kinds = [kind for member in members for kind in _kinds(member)]
    if not kinds or any(test is None for test, _ in kinds):
        return  # an annotation this does not read
    if not any(test(value) for test, _ in kinds):
        words = [word for _, word in kinds]
        listed = words[0] if len(words) == 1 else f"{', '.join(words[:-1])} or {words[-1]}"
        raise TypeError(f"{name} must be {listed} (got {reprlib.repr(value)}, of type {type(value).__name__})")
    if float in members and is_number(value) and not is_finite(value):
        raise ValueError(f"{name} must be a finite number (got {reprlib.repr(value)})")


_NAMES = {str: "text", os.PathLike: "a path"}


def _kinds(member) -> list[tuple]:
    """``(test, words)`` for each kind of value ``member`` (one type of a union) admits; a test of
    None for a member that is not read here."""
    if member is bool:
        return [(is_flag, "True"), (is_flag, "False")]
    if member is int:
        return [(is_whole, "a whole number")]
    if member is float:
        return [(is_number, "a number")]
    if member is type(None) or member is None:
        return [(lambda value: value is None, "None")]
    if typing.get_origin(member) is typing.Literal:
        return [(lambda value, allowed=allowed: type(value) is type(allowed) and value == allowed, repr(allowed))
                for allowed in typing.get_args(member)]
    if member is collections.abc.Callable:
        return [(callable, "a function")]
    if isinstance(member, type):
        return [(lambda value: isinstance(value, member), _NAMES.get(member, f"a {member.__name__}"))]
    return [(None, "")]
