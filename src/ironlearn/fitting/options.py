"""What ``ironlearn fit`` accepts, and the checks that need no file: :class:`FitOptions`, :func:`validate`."""

from __future__ import annotations

import dataclasses
import os
import reprlib
from dataclasses import dataclass, field

import numpy as np

from ..checks import check_argument, is_finite, is_number, is_whole
from ..image.sampling import FILTERS
from ..errors import OptionError, UsageError
from ..limits import MAX_SECONDS
from .presets import OPTIONS, PRESETS

SCHEDULES = ("cosine", "constant")
PROGRESS = ("bar", "plain", "none")
#: How a new fit's network begins: ``picture`` sets a hash-grid level of a vertex per pixel to the
#: picture (``fitting.start.start_from_picture``; other models start random), ``random`` starts
#: every layer random.
STARTS = ("picture", "random")
# Upper bounds that catch typos (an extra zero or three) before they cost hours or all the memory;
# the model options carry their own (presets.OPTIONS).
LIMITS = {"steps": 10**9, "checkpoint_every": 10**9, "snapshot_every": 10**9, "time_budget": MAX_SECONDS,
          "lr": 10.0}


@dataclass(frozen=True)
class FitOptions:
    """Everything ``ironlearn fit`` accepts; ``None`` means "the preset's choice" (or, on
    ``--resume``, "what the run used").

    ``model_options`` holds the preset options (``width``, ``levels``, ...: the names of
    :data:`ironlearn.fitting.presets.OPTIONS`); the rest are the run's own settings.
    """

    input: str
    out: str | None = None
    mode: str | None = None
    size: object = None  # N (the longest side) or (W, H)
    model: str | None = None
    model_options: dict = field(default_factory=dict)
    params: int | None = None  # a new network sized to about this many parameters (fitting.budget)
    steps: int | None = None
    time_budget: float | None = None
    lr: float | None = None
    lr_min: float | None = None
    schedule: str | None = None  # cosine
    batch_size: int | None = None  # 0 = full batch
    filter: str | None = None  # the preset's for the picture (lanczos; its regime's for the hash grid)
    start: str | None = None  # how a new fit's network begins (STARTS); None: plan.default_start (picture; a drawing random)
    max_pixels: int | None = None  # image.io.MAX_PIXELS
    seed: int | None = None  # 0
    device: str | None = None  # cpu, cuda or auto; None: auto, without the notice that auto prints
    checkpoint_every: int | None = None
    snapshot_every: int | None = None
    resume: bool = False
    force: bool = False
    quiet: bool = False  # no progress, notices or notes: errors and the result only
    progress: str | None = None  # bar, plain or none; None: a bar on a terminal, plain lines elsewhere
    live: bool = False  # shown on a live page: a new fit starts random unless --start says (plan.default_start)

    @property
    def run_folder(self) -> str:
        """``out``, or ``runs/<input name>``."""
        return self.out or os.path.join("runs", os.path.splitext(os.path.basename(self.input))[0])


#: FitOptions' on/off options: each is True or False, never a string (``force='no'`` is true).
FLAGS = tuple(f.name for f in dataclasses.fields(FitOptions) if f.type == "bool")


def flag(name: str) -> str:
    """The command's flag for option ``name`` (``time_budget`` -> ``--time-budget``)."""
    return OPTIONS[name].flag if name in OPTIONS else "--" + name.replace("_", "-")


def _check_positive(name: str, value, integer: bool, low: int = 1) -> None:
    if value is None:
        return
    # Python callers pass values the command line would have parsed: "10", 1.5 or True.
    if integer and not is_whole(value):
        raise OptionError(f"{{{name}}} must be a whole number (got {value!r})", name)
    if not integer and not is_number(value):
        raise OptionError(f"{{{name}}} must be a number (got {value!r})", name)
    if integer and value < low:
        raise OptionError(f"{{{name}}} must be at least {low} (got {value})", name)
    if not integer and not (is_finite(value) and value > 0):
        raise OptionError(f"{{{name}}} must be a positive number (got {value})", name)


def _check_limit(name: str, value, limit) -> None:
    if value is not None and limit is not None and value > limit:
        shown = f"{value:g}" if is_finite(value) else reprlib.repr(value)  # an int past float's range has no :g
        raise OptionError(f"{{{name}}} {shown} is beyond what makes sense (at most {limit:g}); check the value", name)


def check_model_option(name: str, value) -> None:
    """Raise :class:`OptionError` unless ``value`` is one the model option ``name`` takes (None:
    the preset's default): its type, its lower bound, its limit and its choices."""
    option = OPTIONS[name]
    if value is None:
        return
    if option.type is str and not isinstance(value, str):
        raise OptionError(f"{{{name}}} must be text (got {value!r})", name)
    if option.type is not str:
        _check_positive(name, value, integer=option.type is int, low=0 if option.zero else 1)
        _check_limit(name, value, option.limit)
    if option.choices is not None and value not in option.choices:
        valid = option.choices
        allowed = f"lie in {valid[0]}..{valid[-1]}" if isinstance(valid, range) else f"be one of {', '.join(valid)}"
        raise OptionError(f"{{{name}}} must {allowed} (got {value})", name)


def plain_numbers(options: FitOptions) -> FitOptions:
    """``options`` with NumPy scalars (``np.int64(2000)``, ``np.float32(0.01)``) as the Python
    numbers they hold: a run's settings are saved as JSON, which has no NumPy types (a fit given
    them would train, then fail at its first checkpoint)."""
    def plain(value):
        if isinstance(value, tuple):  # a size (W, H)
            return tuple(map(plain, value))
        return value.item() if isinstance(value, np.generic) else value

    changed = {f.name: plain(getattr(options, f.name)) for f in dataclasses.fields(options)
               if f.name != "model_options"}
    return dataclasses.replace(options, **changed,
                               model_options={name: plain(v) for name, v in options.model_options.items()})


def validate(options: FitOptions) -> None:
    """Raise :class:`UsageError` for options that are wrong on their own (no file is read), and
    TypeError for an on/off option that is not a bool (a FitOptions built in Python)."""
    for name in FLAGS:
        check_argument(name, getattr(options, name), bool)
    unknown = [name for name in options.model_options if name not in OPTIONS]
    if unknown:
        raise UsageError(f"unknown model option {unknown[0]!r}: use one of {', '.join(OPTIONS)}")
    for name in ("steps", "checkpoint_every", "snapshot_every", "params"):
        _check_positive(name, getattr(options, name), integer=True)
    for name in ("time_budget", "lr"):
        _check_positive(name, getattr(options, name), integer=False)
    for name in ("seed", "batch_size", "max_pixels"):
        _check_positive(name, getattr(options, name), integer=True, low=0 if name != "max_pixels" else 1)
    size = options.size
    if size is not None and not (is_whole(size) or (isinstance(size, tuple) and len(size) == 2
                                                    and all(is_whole(side) for side in size))):
        raise OptionError("{size} must be N (the longest side) or a tuple (width, height), whole numbers "
                          f"(got {size!r})", "size")
    if size is not None and min(size if isinstance(size, tuple) else [size]) < 1:
        raise OptionError(f"{{size}} must be at least 1 (got {size!r})", "size")
    for name, value in options.model_options.items():
        check_model_option(name, value)
    for name, limit in LIMITS.items():
        _check_limit(name, getattr(options, name), limit)
    lr_min = options.lr_min
    if lr_min is not None and not (is_finite(lr_min) and lr_min >= 0):
        raise OptionError(f"{{lr_min}} must be zero or a positive number (got {lr_min!r})", "lr_min")
    if options.model is not None and options.model not in PRESETS:
        raise UsageError(f"unknown model {options.model!r}: use one of {', '.join(PRESETS)}")
    if options.filter not in (None, *FILTERS):
        raise UsageError(f"unknown filter {options.filter!r}: use one of {', '.join(FILTERS)}")
    if options.start not in (None, *STARTS):
        raise UsageError(f"unknown start {options.start!r}: use {' or '.join(STARTS)}")
    if options.start is not None and options.resume:
        raise OptionError("{start} says how a new fit begins, and {resume} goes on from the run's checkpoint: "
                          "drop {start} (or use {force} to start the run over)", "start", resume="resume=True",
                          force="force=True")
    if options.progress not in (None, *PROGRESS):
        raise UsageError(f"unknown progress style {options.progress!r}: use {', '.join(PROGRESS)}")
    if options.schedule not in (None, *SCHEDULES):
        raise UsageError(f"unknown schedule {options.schedule!r}: use {' or '.join(SCHEDULES)}")
    if options.resume and options.force:
        raise OptionError("{resume} and {force} contradict each other: {resume} continues the run, "
                          "{force} starts it over", resume="resume=True", force="force=True")
