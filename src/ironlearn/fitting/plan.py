"""The plan: every setting of a fit, resolved once, before anything is built or written.

:func:`resume_options` merges a run's saved settings into the options given on
``--resume``; :func:`make_plan` turns options and the picture into a frozen
:class:`RunPlan`.  Both are pure: they read no file, mutate nothing, and raise
:class:`UsageError` with a message that says what to do.
"""

from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass

from ..checks import is_finite, is_whole
from ..errors import OptionError
from ..image.fingerprint import fingerprint
from ..image.io import MODES
from ..image.sampling import FILTERS
from ..optim import constant, cosine, warmup_cosine
from ..train.timed import going_on
from .budget import sized
from .options import SCHEDULES, FitOptions, UsageError, check_model_option
from .presets import DEFAULT_PRESET, OPTIONS, PRESETS
from .regimes import PIXEL_SPLINE, Regime, drawn_thumbnail, regime_of, vertex_per_pixel
from .timelapse import frame_steps

DEFAULT_TIME_BUDGET = 40.0  # seconds, when neither --steps nor --time-budget is given
MIN_STEPS = 10  # a time budget never plans fewer steps than this
RETRY_LR_FACTOR = 0.3  # after divergence, the learning rate is multiplied by this and the run retried

# Settings a resumed run must share with the run it continues (given differently, they are refused).
_FIXED = ("model", "mode", "batch_size", "seed", "schedule", "filter", "params")
# What runs saved before a setting existed were trained with.
_BEFORE = {"filter": "centres"}
_BEFORE_MODEL = {"hashgrid": {"vertices": "corners", "interpolation": "linear", "detail": 0, "finest_y": 0}}
# Settings a resumed run takes from the run unless given again.
_INHERITED = ("lr", "lr_min", "checkpoint_every", "snapshot_every")


def _whole(low, none=False):
    return lambda v: (none and v is None) or (is_whole(v) and v >= low)


def _number(low, none=False):
    return lambda v: (none and v is None) or (is_finite(v) and v >= low)


def _takes(name: str, value) -> bool:
    """Whether the model option ``name`` takes ``value``, as a fit given it would check it."""
    try:
        check_model_option(name, value)
    except OptionError:
        return False
    return True


def _one_of(choices):
    return lambda v: v in choices


# What a run's saved settings must hold for --resume to rebuild its plan: name -> check.
# A file from elsewhere (or edited) is refused with one line instead of failing somewhere inside.
_SAVED = {
    "size": lambda v: isinstance(v, list) and len(v) == 2 and all(_whole(1)(n) for n in v),
    "fingerprint": lambda v: isinstance(v, str),
    "model": _one_of(PRESETS), "mode": _one_of(MODES), "schedule": _one_of((None, *SCHEDULES)),
    "filter": lambda v: v is None or v in FILTERS,
    "model_options": lambda v: isinstance(v, dict) and all(k in OPTIONS and _takes(k, v[k]) for k in v),
    "batch_size": _whole(0), "seed": _whole(0, none=True), "steps": _whole(1, none=True),
    "lr": _number(1e-30), "lr_min": _number(0), "time_budget": _number(1e-30, none=True),
    "checkpoint_every": _whole(1, none=True), "snapshot_every": _whole(1, none=True),
    "timed": lambda v: isinstance(v, bool), "train_seconds": _number(0), "stalled_seconds": _number(0),
    "start": _one_of(("picture", "random")), "blas_threads": _whole(1, none=True),
    "anneal_from": lambda v: v is None or (isinstance(v, list) and len(v) == 2 and _whole(0)(v[0])
                                           and _number(1e-30)(v[1])),
}
_SAVED_OPTIONAL = ("fingerprint", "filter", "schedule", "timed", "train_seconds", "time_budget", "checkpoint_every",
                   "snapshot_every", "anneal_from", "start", "stalled_seconds", "blas_threads")


def check_saved(saved: dict, where: str) -> None:
    """UsageError unless ``saved`` (a run's settings) holds every setting a resume reads, each valid."""
    for name, valid in _SAVED.items():
        if name not in saved and name in _SAVED_OPTIONAL:
            continue
        if name not in saved or not valid(saved[name]):
            what = "lacks" if name not in saved else "holds a bad value for"
            raise OptionError(f"the checkpoint in {where} {what} the setting {name!r} (damaged, or not written by "
                              "ironlearn fit), so it cannot be resumed; use {force} to start a new run",
                              force="force=True")


def resume_options(options: FitOptions, saved: dict) -> FitOptions:
    """``options`` with what ``--resume`` leaves unset taken from the run's ``saved`` settings.

    Raises UsageError when a setting the run fixed is given with another value (``saved`` is
    taken as valid: see :func:`check_saved`).
    """
    mismatches, changes = {}, {}
    for name in _FIXED:
        given, was = getattr(options, name), saved.get(name, _BEFORE.get(name))
        if given is None:
            changes[name] = was
        elif given != was:
            mismatches[name] = f"{{{name}}} {given} (the run used {was})"
    saved_model = {**_BEFORE_MODEL.get(saved.get("model"), {}), **saved.get("model_options", {})}
    for name, value in options.model_options.items():
        if value is not None and saved_model.get(name) != value:
            mismatches[name] = f"{{{name}}} {value} (the run used {saved_model.get(name)})"
    if mismatches:
        raise OptionError(f"cannot resume with different settings: {'; '.join(mismatches.values())}; "
                          "drop them, or use {force} to start a new run", *mismatches, force="force=True")
    changes["model_options"] = dict(saved_model)
    changes.update({name: saved.get(name) for name in _INHERITED if getattr(options, name) is None})
    if options.size is None:
        changes["size"] = tuple(saved["size"])
    return dataclasses.replace(options, **changes)  # the run's length: make_plan (_length)


@dataclass(frozen=True)
class RunPlan:
    """Every resolved setting of one fit.

    ``steps`` and ``time_budget`` are totals for the run, across resumes; ``steps`` is None
    until :meth:`calibrated` sets it from the measured speed.  ``start_step`` and
    ``prior_seconds`` say where a resumed run stands.

    A run given only a time budget is ``timed``: its steps are an estimate of what the budget
    allows, which :meth:`replanned` revises as the run learns its real pace, so that the
    learning-rate schedule ends with the budget however the machine's speed changes.  Past the
    warm-up, a revision goes on down from the rate reached (``anneal_from``: that step and rate)
    to ``lr_min`` at the new end, unless the first plan was far too short (:meth:`replanned`).
    """

    input: str
    out: str
    fingerprint: str
    mode: str
    width: int
    height: int
    channels: int
    model: str
    model_options: dict
    params: int | None  # the parameter budget the network was sized to (fitting.budget), if any
    lr: float
    lr_min: float
    schedule: str
    batch_size: int | None  # None: the full batch
    filter: str  # how targets are read between pixel centres (image.sampling.FILTERS)
    seed: int
    device: str
    steps: int | None
    time_budget: float | None
    timed: bool = False  # steps estimated from time_budget, and revised on the way
    anneal_from: tuple | None = None  # (step, lr) where a revised schedule goes on from, or None
    checkpoint_every: int | None = None  # as given; None: from the step count
    snapshot_every: int | None = None
    start_step: int = 0
    prior_seconds: float = 0.0
    prior_stalled: float = 0.0  # of prior_seconds, stalled (train.timed)
    resume: bool = False
    force: bool = False
    quiet: bool = False
    progress: str | None = None  # as FitOptions.progress
    start: str = "picture"  # as FitOptions.start; a resumed run keeps its own (runs saved without one: picture)
    #: The BLAS threads a run of fixed steps trains on, chosen once and kept across resumes (None:
    #: not chosen yet, or a timed run, whose policy keeps measuring; ``fitting.run.thread_policy``).
    blas_threads: int | None = None

    @property
    def preset(self):
        return PRESETS[self.model]

    @property
    def regime(self) -> Regime | None:
        """The hash grid's layout (``fitting.regimes``); None for the other presets."""
        return regime_of(self.model_options) if self.model == "hashgrid" else None

    @property
    def starts_as_picture(self) -> bool:
        """Whether the model starts as the picture (``fitting.start``): the pixel spline's level
        of a vertex per pixel, unless ``--start random``.  Such a run has no learning to show, so
        it keeps no time-lapse."""
        return (self.start == "picture" and self.model == "hashgrid"
                and vertex_per_pixel(self.model_options, self.width, self.height, self.channels))

    @property
    def trains_tiles(self) -> bool:
        """Whether a step trains one tile of the picture (``image.sampling.TileSampler``): a pixel
        spline on pixel centres, for a picture larger than one batch."""
        return self.regime is PIXEL_SPLINE and self.filter == "centres" and not self.every_pixel

    # -- derived settings --------------------------------------------------------------------
    @property
    def every_pixel(self) -> bool:
        """Each step trains on all the picture's pixels (a full batch, with samples between pixels
        beside it unless the filter is ``centres``), so the step's loss is the picture's: no estimate."""
        return self.batch_size is None

    @property
    def remaining_seconds(self) -> float | None:
        return None if self.time_budget is None else max(0.0, self.time_budget - self.prior_seconds)

    @property
    def nothing_left(self) -> bool:
        """A resumed run that already reached its steps or its time budget.  A timed run that
        reached the steps its budget was planned into is done too when its clock stopped within
        :data:`TIMED_SLACK` of the budget (0.998 s of 1), so that the same command again does not
        train a step or three more and rewrite every output.  With more of its budget left it trains on."""
        if self.remaining_seconds == 0.0:
            return True
        if self.steps is None or self.start_step < self.steps:
            return False
        return not self.timed or self.remaining_seconds <= TIMED_SLACK * self.time_budget

    @property
    def checkpoint_interval(self) -> int:
        return self.checkpoint_every or max(50, self.steps // 20)

    @property
    def frame_steps(self) -> list[int]:
        """The steps the time-lapse captures: geometrically spaced, or every ``snapshot_every``."""
        return frame_steps(self.steps, every=self.snapshot_every)

    @property
    def history_interval(self) -> int:
        return max(1, self.steps // 500)

    @property
    def check_interval(self) -> int:
        """Steps between NaN checks of the loss (each is a device sync on a GPU)."""
        return max(1, min(100, self.steps // 20))

    def make_schedule(self):
        """The learning-rate schedule over the whole run."""
        if self.schedule == "constant":
            return constant(self.lr)
        if self.anneal_from is not None:  # a revised plan: on from the rate reached (or lifted)
            step, lr = self.anneal_from
            return cosine(lr, min(self.lr_min, lr), self.steps, warmup_steps=step)
        return warmup_cosine(self.lr, min(self.lr_min, self.lr), self.steps)

    # -- the plan changes only by making a new one ---------------------------------------------
    def calibrated(self, seconds_per_step: float) -> "RunPlan":
        """This plan with as many steps as the rest of its time budget allows at ``seconds_per_step``
        (all of it for a new run), its schedule starting afresh."""
        left = int(self.remaining_seconds / max(seconds_per_step, 1e-9))
        return dataclasses.replace(self, steps=max(MIN_STEPS, self.start_step + max(1, left)), timed=True,
                                   anneal_from=None)

    def replanned(self, step: int, train_seconds: float, seconds_per_step: float) -> "RunPlan":
        """This timed plan with as many steps as the rest of its budget allows, at step ``step``
        after ``train_seconds`` of training, at ``seconds_per_step``.

        Past the warm-up, its schedule goes on down to ``lr_min`` at the new end from the rate
        that the timed runs' one rule gives (:func:`~ironlearn.train.timed.going_on`).
        """
        left = max(0.0, self.time_budget - train_seconds) / max(seconds_per_step, 1e-9)
        steps = max(MIN_STEPS, step + 1, step + int(left))
        schedule = self.make_schedule()
        if self.schedule == "constant" or step < getattr(schedule, "warmup_steps", 0):
            return dataclasses.replace(self, steps=steps)
        reached = schedule(step)
        fresh = warmup_cosine(self.lr, min(self.lr_min, self.lr), steps)(step)
        return dataclasses.replace(self, steps=steps, anneal_from=(step, going_on(reached, fresh)))

    def gentler(self) -> "RunPlan":
        """This plan with the learning rates lowered for a retry after divergence."""
        anneal_from = self.anneal_from and (self.anneal_from[0], self.anneal_from[1] * RETRY_LR_FACTOR)
        return dataclasses.replace(self, lr=self.lr * RETRY_LR_FACTOR, lr_min=self.lr_min * RETRY_LR_FACTOR,
                                   anneal_from=anneal_from)

    def settings(self, *, device: str, train_seconds: float, stalled_seconds: float = 0.0) -> dict:
        """What a checkpoint stores, so that ``--resume`` can rebuild this plan."""
        return {"input": os.path.abspath(self.input), "fingerprint": self.fingerprint, "mode": self.mode,
                "size": [self.width, self.height], "model": self.model, "model_options": self.model_options,
                "lr": self.lr, "lr_min": self.lr_min, "schedule": self.schedule, "batch_size": self.batch_size or 0, "filter": self.filter,
                "seed": self.seed, "steps": self.steps, "time_budget": self.time_budget, "timed": self.timed,
                "anneal_from": None if self.anneal_from is None else list(self.anneal_from), "device": device,
                "checkpoint_every": self.checkpoint_every, "snapshot_every": self.snapshot_every,
                "train_seconds": train_seconds, "stalled_seconds": stalled_seconds, "start": self.start,
                "blas_threads": self.blas_threads, "params": self.params}


def _batch_size(options: FitOptions, preset, points: int) -> int | None:
    batch = preset.batch_size if options.batch_size is None else (options.batch_size or None)
    return None if batch is not None and batch >= points else batch


def _budgeted(options: FitOptions, preset, picture, saved: dict | None) -> dict:
    """The model options given, with the preset's size solved for ``params`` when given (a new
    run's: a resumed one has its network's options, and :func:`resume_options` checked that
    ``params``, if given, is the run's)."""
    if options.params is None or saved is not None:
        return options.model_options
    return sized(preset, options.model_options, options.params, picture.width, picture.height, picture.mode,
                 picture.channels)


def make_plan(options: FitOptions, picture, saved: dict | None = None, *, start_step: int = 0) -> RunPlan:
    """Resolve ``options`` (already merged with :func:`resume_options` on ``--resume``) for ``picture``.

    ``saved`` is the run's saved settings on ``--resume`` (its image and step count).
    """
    if saved is not None and list(saved.get("size", [])) != [picture.width, picture.height]:
        width, height = saved["size"]
        raise OptionError(f"the run in {options.run_folder} was trained at {width}x{height}, and {{size}} gives "
                          f"{picture.width}x{picture.height}; drop {{size}} to resume it, or use {{force}} to start "
                          "a new run at this size", "size", force="force=True")
    print_ = fingerprint(picture)
    if saved is not None and saved.get("fingerprint") != print_:
        raise OptionError(f"{options.input} is not the image the run in {options.run_folder} was trained on "
                          f"({saved.get('input')}); use {{force}} to start a new run", force="force=True")
    preset = PRESETS[options.model or DEFAULT_PRESET]
    try:
        model_options = preset.resolve(_budgeted(options, preset, picture, saved), picture.width, picture.height,
                                       picture.mode)
    except OptionError:
        raise  # worded with the command's flags where the command reports it
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    lr = preset.lr if options.lr is None else options.lr
    # The preset's floor is a hundredth of its peak; a peak of one's own keeps that ratio.
    lr_min = options.lr_min if options.lr_min is not None else \
        preset.lr_min if options.lr is None else options.lr * (preset.lr_min / preset.lr)
    if lr_min > lr:  # only a given --lr-min can be
        source = "{lr}" if options.lr is not None else f"the learning rate of {{model}} {preset.name}"
        raise OptionError(f"{{lr_min}} {lr_min:g} is above {source} ({lr:g}), where the schedule starts; "
                          "give a smaller {lr_min}", "lr_min", "lr", "model")
    steps, time_budget, timed, anneal_from = _length(options, saved)
    return RunPlan(
        input=options.input, out=options.run_folder, fingerprint=print_, mode=picture.mode,
        width=picture.width, height=picture.height, channels=picture.channels, model=preset.name,
        model_options=model_options, params=options.params, lr=lr, lr_min=lr_min,
        schedule=options.schedule or "cosine",
        batch_size=_batch_size(options, preset, picture.width * picture.height),
        filter=options.filter or preset.default_filter(model_options, picture.mode),
        seed=0 if options.seed is None else options.seed, device=options.device, steps=steps,
        time_budget=time_budget, timed=timed, anneal_from=anneal_from,
        checkpoint_every=options.checkpoint_every, snapshot_every=options.snapshot_every,
        start_step=start_step, prior_seconds=float(saved.get("train_seconds", 0.0)) if saved else 0.0,
        prior_stalled=float(saved.get("stalled_seconds", 0.0)) if saved else 0.0,
        resume=options.resume, force=options.force, quiet=options.quiet, progress=options.progress,
        start=options.start or (saved or {}).get("start") or default_start(preset.name, model_options, picture.mode,
                                                                           live=options.live),
        blas_threads=None if timed or steps is None else _saved_threads(saved))


def default_start(model: str, model_options: dict, mode: str, *, live: bool = False) -> str:
    """How a new fit begins unless ``--start`` says: as the picture where its model can
    (``fitting.start``), but a drawing up to 256 px, from random, so that its time-lapse shows it
    learning (its redraws are as good: ``regimes.drawn_thumbnail``, docs/benchmarks.md), and a fit
    shown ``live`` from random too: a page that shows the finished picture from the first frame
    shows nothing learning."""
    return "random" if live or (model == "hashgrid" and drawn_thumbnail(model_options, mode)) else "picture"


def _saved_threads(saved: dict | None) -> int | None:
    """The BLAS threads a resumed run of fixed steps goes on with: the count it recorded, or one
    for a run of fixed steps saved before the count was recorded (they all ran on one); None for
    a new run, or one that was timed or never trained (its count is chosen afresh)."""
    if saved is None or saved.get("timed") or saved.get("steps") is None:
        return None
    return saved.get("blas_threads") or 1


#: The share of a time budget a timed run may stop short of it, at its planned steps, and be done.
TIMED_SLACK = 0.01


def _length(options: FitOptions, saved: dict | None) -> tuple:
    """``(steps, time_budget, timed, anneal_from)``: how long the run trains, as asked last.

    Both are totals across resumes.  ``--steps`` runs to that step (within ``--time-budget``
    when both are given); a budget alone is timed, its steps planned from the rest of it (None
    here: calibrated once the model is built); a bare ``--resume`` goes on as the run was.
    """
    steps, budget = options.steps, options.time_budget
    if steps is not None:
        return steps, budget, False, None
    if saved is None:
        return None, budget or DEFAULT_TIME_BUDGET, False, None
    was_timed = bool(saved.get("timed", False)) and saved.get("time_budget") is not None
    if budget is not None and not (was_timed and budget == saved["time_budget"]):
        return None, budget, False, None  # a new budget: the rest of it is planned afresh
    anneal_from = saved.get("anneal_from")
    return int(saved["steps"]), saved.get("time_budget"), was_timed, anneal_from and tuple(anneal_from)
