"""What every job of the API checks first, and where its lines go: each argument against its
annotation (:func:`checked`, on every public function), a fit's options by their Python names, a
size, scale and view as the command checks them, and ``progress`` turned into a log."""

from __future__ import annotations

import dataclasses
import functools
import inspect
import os
import sys

from ..checks import check_argument, is_finite, is_whole
from ..errors import UsageError
from ..fitting import OPTIONS, FitOptions
from ..fitting.options import FLAGS
from ..image.coords import check_view

#: The names fit() takes: the command's options (FitOptions) and the model's (``width``, ...).
FIT_NAMES = ({f.name for f in dataclasses.fields(FitOptions)} - {"input", "out", "model_options", "quiet"}) | set(OPTIONS)


def checked(function=None, **own):
    """Make a public function check the arguments it is given at its entry, before it reads or
    writes any file: each against its parameter's annotation, as
    :func:`~ironlearn.checks.check_argument` reads it (``force: bool`` takes only True or False,
    ``scale: float | None`` a finite number or None, ``options: FitOptions | None`` one of those);
    ``own`` names parameters that a function of their own checks instead (``port=check_port``).

    ``force='no'`` is a true string: ``view(out='mine.html', force='no')`` replaced the user's page,
    ``with_picture='no'`` embedded the picture.  A parameter added later is checked too, by the
    annotation it is given (``tests/test_api.py`` tries every flag of every public function).
    """
    if function is None:
        return functools.partial(checked, **own)
    signature = inspect.signature(function, eval_str=True)
    variadic = (inspect.Parameter.VAR_POSITIONAL, inspect.Parameter.VAR_KEYWORD)
    checks = {name: own.get(name, functools.partial(check_argument, name, annotation=parameter.annotation))
              for name, parameter in signature.parameters.items()
              if parameter.kind not in variadic and (name in own or parameter.annotation is not parameter.empty)}

    @functools.wraps(function)
    def entry(*args, **kwargs):
        for name, value in signature.bind(*args, **kwargs).arguments.items():  # defaults are ours: not checked
            if name in checks:
                checks[name](value)
        return function(*args, **kwargs)
    entry.checks_arguments = True
    return entry


def named_fit_options(caller: str, picture, out, *, progress: bool, live: bool = False, **options) -> FitOptions:
    """:class:`FitOptions` from the options ``caller`` (``fit``, ``fit_many``) was given by their
    Python names, the model's own (``width``, ...) among them; UsageError for a name it does not
    take, TypeError for an on/off option that is not a bool."""
    for name in set(FLAGS) & set(options):
        check_argument(name, options[name], bool)
    model_options = {name: options.pop(name) for name in list(options) if name in OPTIONS}
    if isinstance(options.get("size"), list):
        options["size"] = tuple(options["size"])  # (W, H), as the command's WxH gives it
    quiet = options.pop("quiet", not progress)
    unknown = sorted(set(options) - FIT_NAMES)
    if unknown:
        hint = " (table_log2 is log2_table_size)" if "table_log2" in unknown else ""
        raise UsageError(f"{caller}() takes no option {unknown[0]!r}{hint}; it takes the command's options by their "
                         f"Python names: {', '.join(sorted(FIT_NAMES))}")
    return FitOptions(input=os.fspath(picture), out=None if out is None else os.fspath(out),
                      model_options=model_options, quiet=quiet, live=live, **options)


def checked_size(size, scale, view):
    """``size`` as the renderers take it (N, or a tuple ``(W, H)``); ValueError for a size, scale or
    view the command line would have refused."""
    sides = list(size) if isinstance(size, (tuple, list)) else [] if size is None else [size]
    whole = all(is_whole(n) and n >= 1 for n in sides)
    if size is not None and not (whole and len(sides) == (2 if isinstance(size, (tuple, list)) else 1)):
        raise ValueError(f"size must be N (the longest side) or (width, height), whole numbers from 1 (got {size!r})")
    if scale is not None and not (is_finite(scale) and scale > 0):
        raise ValueError(f"scale must be a finite number above 0 (got {scale!r})")
    if view is not None:
        if not isinstance(view, (tuple, list)) or len(view) != 4:
            raise ValueError(f"view must be (x0, y0, x1, y1), four numbers (got {view!r})")
        check_view(tuple(view))
    return tuple(size) if isinstance(size, list) else size


def silent(message: str) -> None:
    """The log of a job asked for no progress."""


def _on_stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def log_of(progress):
    """Where a job's lines go: ``progress`` itself when it is a function of one line (the command
    passes its own, which words a :class:`~ironlearn.errors.Note` with flags), stderr for True,
    nowhere for False."""
    if callable(progress):
        return progress
    return _on_stderr if progress else silent
