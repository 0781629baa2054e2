"""The fit job, in the order it runs: load, plan, build, train, write outputs.

:func:`fit` is what ``ironlearn fit`` (and ``ironlearn.fit``) runs once its arguments are parsed.
Each step below is a small function; only :func:`fit` strings them together.
"""

from __future__ import annotations

import contextlib
import dataclasses
import os
import shlex
import signal
from dataclasses import dataclass

import numpy as np

from ..backend import get_backend
from ..errors import Note, OptionError, WordedError
from ..image import metrics
from ..image.coords import axis, pixel_grid
from ..image.io import load_picture
from ..image.sampling import BETWEEN, BETWEEN_WEIGHT, SPLINE_BETWEEN, EveryPixel, PictureSampler, TileSampler
from .timelapse import Snapshots
from ..nn import mse
from ..nn.lattice import Lattice
from ..optim import Adam, constant
from ..signals import handling, stop_now
from ..train import Checkpointer, DivergenceError, Every, Progress, Rollback, Trainer, checkpoint
from ..train.threads import ThreadPolicy
from ..train.timed import Replan, calibrate
from ..train.trainer import CoreShare
from . import folder
from .messages import describe_progress, kept_start_message, moments_restart_message, nothing_left_message, \
    progress_style, ResumeNote, start_message
from .options import FitOptions, UsageError, plain_numbers, validate
from .outputs import Recorder, write_outputs
from .plan import RunPlan, check_saved, make_plan, resume_options
from .start import held_parameters, kept_start, keeps_the_start, start_from_picture

MAX_RETRIES = 3  # after divergence: roll back and retry with a smaller learning rate this often
#: The share of a timed fit's budget its time-lapse frames may take (made smaller to keep to it).
FRAME_SHARE = 0.05
CHECKPOINT_SECONDS = 60.0  # also save after this much training time, whatever the step interval
#: The most of the training time the default checkpoints may take (``--checkpoint-every`` is kept
#: as given): a large picture's level and Adam's moments take seconds a save (measured:
#: docs/reliability.md, 'How a run stays safe').
SAVING_SHARE = 0.1
MAX_LOSS = 1e3  # an MSE on [0, 1] pixels above this is an explosion, not training


#: The signals that stop a fit cleanly: Ctrl-C, and what Ray, Slurm, Kubernetes and ``timeout``
#: send on preemption.  The first lets the step in flight finish and saves; a second stops at once.
STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Interrupted(WordedError):
    """Ctrl-C or SIGTERM: the checkpoint is saved; ``resume`` (a :class:`ResumeNote`) says how to
    go on, as a Python call and, :meth:`worded` by the command, as its command line.

    ``signal`` is the signal that stopped it (``signal.SIGINT`` for Ctrl-C).
    """

    def __init__(self, step: int, resume: ResumeNote, signum: int = signal.SIGINT):
        self.step, self.resume, self.signal = step, resume, signal.Signals(signum)
        what = "interrupted" if self.signal == signal.SIGINT else f"stopped by {self.signal.name}"
        super().__init__(f"{what} at step {step}; checkpoint saved. Resume with:\n  {{resume}}", resume=resume)


def fit(options: FitOptions, *, log=print, live=None) -> dict:
    """Run the fit described by ``options``; returns the metrics written to ``metrics.json``.
    ``live``, a :class:`~ironlearn.viewer.live.LiveServer`, shows the fit on its page as it trains.

    Raises
    ------
    UsageError, InputError, CheckpointError, BackendError
        Bad options or files (the CLI turns them into exit code 2).
    Interrupted
        After Ctrl-C, once the checkpoint is saved.
    DivergenceError
        When the loss stays non-finite after the retries (the last good checkpoint is kept).
    """
    options = check_start(options)
    if not options.resume:
        return _fit(options, None, log, live)
    path = folder.check_resumable(options.run_folder)
    with folder.RunLock(options.run_folder):  # before reading: a fit running there would change the file
        try:
            saved = checkpoint.load(path)
        except checkpoint.CheckpointError as exc:
            if getattr(exc, "why", None) is None:
                raise
            raise checkpoint.CheckpointError(f"{path} cannot be resumed: it is damaged ({exc.why}); put back a copy "
                                             "of it, or start over with {force}", force="force=True") from None
        return _fit(options, saved, log, live)


def check_start(options: FitOptions) -> FitOptions:
    """``options`` with plain numbers, once what can be checked before loading anything holds: the
    options, the input is no run folder, and the run folder takes a new run (or holds one to
    resume) and no other fit holds its lock.  A live page calls it before its server starts, so
    that a refusal comes first."""
    options = plain_numbers(options)
    validate(options)
    if os.path.isdir(options.input) and os.path.isfile(os.path.join(options.input, folder.CHECKPOINT)):
        raise _run_folder_given(options.input)
    if options.resume:
        folder.check_resumable(options.run_folder)
    else:
        folder.check_new(options.run_folder, force=options.force, input=options.input)
    running = folder.holder(options.run_folder)
    if running is not None:  # RunLock's refusal, which would come only once the picture is loaded
        raise folder.busy(options.run_folder, running)
    return options


def _run_folder_given(run_folder: str) -> WordedError:
    """The refusal of a run folder given as the picture, with how to resume it: with the picture
    its checkpoint names, when it does."""
    try:
        picture = checkpoint.read_meta(os.path.join(run_folder, folder.CHECKPOINT))["settings"]["input"]
    except (checkpoint.CheckpointError, KeyError, TypeError):
        picture = "PICTURE"
    return OptionError(f"{run_folder} is a run folder, not a picture; resume it with: {{resume}}",
                       resume=ResumeNote(picture, run_folder))


def check_kept_start(saved: dict, options: FitOptions) -> None:
    """OptionError when a resume of a run that kept its start (saved with no length) gives none."""
    if saved["steps"] is None and saved.get("time_budget") is None and options.steps is None \
            and options.time_budget is None:
        raise OptionError(f"the run in {options.run_folder} kept its start, the picture, and never trained: there "
                          "is nothing to continue; give {steps} or {time_budget} to train it", "steps", "time_budget")


def _fit(options: FitOptions, saved, log, live) -> dict:
    if saved is not None:
        check_saved(saved.settings, options.run_folder)
        check_kept_start(saved.settings, options)
        options = resume_options(options, saved.settings)
    picture = load_picture(options.input, mode=options.mode, size=options.size,
                           max_pixels=options.max_pixels)
    for note in [] if options.quiet else picture.notes:
        log(f"note: {note}")
    plan = make_plan(options, picture, saved and saved.settings, start_step=saved.step if saved else 0)
    if keeps_the_start(plan, asked_length=options.steps is not None or options.time_budget is not None):
        plan = dataclasses.replace(plan, steps=0, time_budget=None, timed=False)  # saved so: a resume adds steps
    if options.live and options.start is None and not plan.resume and not options.quiet and \
            dataclasses.replace(plan, start="picture").starts_as_picture:
        log(Note("note: the live page shows this fit learning from a random network; as the picture it would be "
                 "whole from the first step and fit better in the time: give {start} picture for that", "start"))
    if plan.resume:
        folder.check_not_input(plan.out, plan.input)
        folder.check_writable(plan.out)  # before training, not after it
    else:
        folder.check_new(plan.out, force=plan.force, input=plan.input)
    backend = get_backend(plan.device or "auto", notify=None if plan.quiet or plan.device is None else log)
    if plan.resume:
        return _run(plan, picture, saved, backend, log, live)
    folder.create(plan.out)  # only now, when nothing above can fail, touch the disk
    with folder.RunLock(plan.out):
        # Again: another fit may have begun here meanwhile.
        folder.check_new(plan.out, force=plan.force, input=plan.input)
        folder.start_over(plan.out)  # what check_new let through: a forced run's old outputs, a stale page
        return _run(plan, picture, None, backend, log, live)


def _run(plan: RunPlan, picture, saved, backend, log, live) -> dict:
    folder.clean(plan.out)
    job = build(plan, picture, saved, backend, None if plan.quiet else log)
    if live is not None:  # last of the build's callbacks: it reads the history the recorder has just added to
        job.trainer.callbacks.append(live.watch(job.trainer.model, job.settings(job.trainer), step=job.trainer.step,
                                                rows=lambda: job.recorder.rows, backend=backend))
    if kept_start(job.plan):
        if not plan.quiet:
            log(kept_start_message(job.plan))
        job.rollback.checkpointer.save(job.trainer)  # step 0: the model alone, Adam has no moments yet
    elif job.plan.nothing_left:
        log(nothing_left_message(job.plan))
    else:
        if not plan.quiet:
            if finished(saved) and saved.step > 0:
                log(moments_restart_message(saved.step, timelapse=not plan.starts_as_picture))
            log(start_message(job))
        train(job, log)
    if not plan.quiet:
        outputs = "reconstruction, model" + ("" if plan.starts_as_picture or finished(saved) else ", time-lapse") + \
            ("" if kept_start(job.plan) else ", plot")
        log(f"writing the outputs to {plan.out}/ ({outputs})")
    result = write_outputs(job, picture)
    finish(job)
    folder.clean(plan.out)
    return result


def finish(job: Job) -> None:
    """Shrink the checkpoint of a run that has reached its end to its settings and step: model.npz,
    written (atomically) before, holds the same model, and the optimizer's moments (twice the
    model) are dropped, to start again from zero should the run be resumed with more steps.  A
    run that stops before its end (Ctrl-C, a kill, divergence) never comes here: its checkpoint
    keeps everything."""
    trainer = job.trainer
    checkpoint.save(os.path.join(job.plan.out, folder.CHECKPOINT), trainer.model, trainer.optimizer,
                    seed=trainer.seed, settings=job.settings(trainer), model_in=folder.MODEL)
    with contextlib.suppress(FileNotFoundError):  # the time-lapse's frames: timelapse.gif shows them
        os.unlink(os.path.join(job.plan.out, folder.FRAMES))


def finished(saved) -> bool:
    """Whether ``saved`` (a checkpoint, or None) is that of a run that reached its end (:func:`finish`)."""
    return saved is not None and "model_in" in saved.meta


# -- build -------------------------------------------------------------------------------------
@dataclass
class Job:
    """A fit ready to train: the plan (replaced, never edited, on a retry) and what it built."""

    plan: RunPlan
    backend: object
    trainer: Trainer
    recorder: Recorder
    snapshots: Snapshots
    rollback: Rollback
    stalled_seconds: float = 0.0  # of the training time, while the process did not run (train.timed)
    calibrated_pace: float | None = None  # seconds a step, as calibration measured it (a timed run's plan)
    calibrated_share: float | None = None  # the share of a core calibration had (train.trainer.CoreShare)
    step_seconds: float = 0.0  # this session's steps' own time, their callbacks' left out (train.timed)

    @property
    def slowdown(self) -> float | None:
        """How many times the calibrated pace this session's steps took on average, their
        callbacks and stalls left out (None when the run was not calibrated or made no step)."""
        steps = self.trainer.step - self.plan.start_step
        if self.calibrated_pace is None or steps < 1:
            return None
        seconds = self.step_seconds - (self.stalled_seconds - self.plan.prior_stalled)
        return max(seconds, 0.0) / steps / self.calibrated_pace

    def settings(self, trainer) -> dict:
        settings = self.plan.settings(device=self.backend.device, train_seconds=trainer.train_seconds,
                                      stalled_seconds=self.stalled_seconds)
        if kept_start(self.plan):  # no length: a resume must be given one (check_kept_start)
            settings["steps"] = None
        return settings

    def replan(self, plan: RunPlan) -> None:
        """Go on under ``plan``, a timed plan with another step count: the schedule follows it."""
        self.plan = plan
        self.trainer.optimizer.schedule = plan.make_schedule()

    def retry_gentler(self) -> None:
        """Back to the state last saved, with lower learning rates (saved with the run from now on)."""
        self.rollback.restore(self.trainer)
        self.plan = self.plan.gentler()
        self.trainer.optimizer.schedule = self.plan.make_schedule()
        self.recorder.forget_after(self.trainer.step)
        self.snapshots.forget_after(self.trainer.step)


def build(plan: RunPlan, picture, saved, backend, log=None) -> Job:
    """The model, data, optimizer, trainer and callbacks for ``plan`` (calibrating its step count
    when only a time budget was given); ``log`` gets its notes."""
    model = (saved.model if saved is not None else new_model(plan, picture)).to(backend)
    data = training_data(plan, picture, backend)
    plan, threads = thread_policy(plan, model, data, backend)
    with CoreShare() as calibration:
        calibrated_pace = calibrate(model, data, threads=threads) if plan.steps is None else None
    if calibrated_pace is not None:
        plan = plan.calibrated(calibrated_pace)
    # A run that keeps its start makes no step, and a schedule needs one: a resume plans its own.
    params, schedule = model.named_parameters(), plan.make_schedule() if plan.steps else constant(plan.lr)
    optimizer = saved.optimizer(params, schedule=schedule) if saved is not None else Adam(params, lr=schedule)
    # The budget is the training's wall time, its checkpoints and time-lapse frames included.
    trainer = Trainer(model, optimizer, mse, **data, seed=plan.seed, check_every=plan.check_interval,
                      max_loss=MAX_LOSS, backend=backend, count_callbacks=True, held=held_parameters(plan, model),
                      blas_threads=threads)
    trainer.train_seconds = plan.prior_seconds
    timelapse = not plan.starts_as_picture and not finished(saved)
    recorder, snapshots = _records(plan, model, backend, log or (lambda message: None), timelapse)
    checkpointer = Checkpointer(
        os.path.join(plan.out, folder.CHECKPOINT), trigger=_save_trigger(plan),
        settings=lambda trainer: job.settings(trainer),
        then=[lambda trainer: recorder.write(os.path.join(plan.out, folder.HISTORY), trainer),
              lambda _: snapshots.save(os.path.join(plan.out, folder.FRAMES))],
        max_share=None if plan.checkpoint_every else SAVING_SHARE)
    rollback = Rollback(checkpointer=checkpointer)
    rollback.remember(trainer)  # the state the run starts from, until the checkpointer writes one
    job = Job(plan, backend, trainer, recorder, snapshots, rollback, stalled_seconds=plan.prior_stalled,
              calibrated_pace=calibrated_pace, calibrated_share=calibration.share if calibrated_pace else None)
    trainer.callbacks = [recorder, *([snapshots] if timelapse else []), checkpointer, rollback]
    backend.release_unused()  # the setup's one-off arrays: the pool holds the training's alone
    return job


def thread_policy(plan: RunPlan, model, data, backend) -> tuple[RunPlan, ThreadPolicy | None]:
    """The plan, with its BLAS thread count once chosen, and the policy its steps run under on the
    CPU (None on a GPU, whose steps make no BLAS call).

    A timed run, whose steps are the clock's anyway, keeps measuring which count is faster.  A
    run of fixed steps promises the same numbers on a resume and on its live page, and BLAS gives
    other last bits on another thread count, so it measures once, on throwaway steps as
    calibration's (the model untouched), and keeps that count: the plan records it, and a resume
    goes on with it.  Before, such a run kept one thread: one core of sixteen on a large machine,
    and SIREN's products at two thirds of their speed on two cores (measured: docs/benchmarks.md,
    'How does a fit hold on a busy machine?').
    """
    if backend.device != "cpu":
        return plan, None
    if plan.steps is None or plan.timed:
        return plan, ThreadPolicy()
    if plan.steps <= plan.start_step:  # nothing to train (a kept start, or done): nothing to measure
        return plan, ThreadPolicy(fixed=plan.blas_threads or 1)
    if plan.blas_threads is None:
        policy = ThreadPolicy()
        if policy.auto:
            calibrate(model, data, threads=policy)
        plan = dataclasses.replace(plan, blas_threads=policy.chosen or 1)
    return plan, ThreadPolicy(fixed=plan.blas_threads)


def training_data(plan: RunPlan, picture, backend) -> dict:
    """The Trainer's data, as keyword arguments.

    A picture trained whole (one batch) comes as its pixel grid, the same every step so that
    the model reuses what it derives from it, with samples between the pixels beside it unless
    the filter is ``centres``.  A larger one comes from a sampler that draws each step's batch
    from the picture, kept once on the device as compact as it was loaded.

    A hash grid reads pixels as a :class:`~ironlearn.nn.lattice.Lattice`: the whole picture's,
    or, for a larger picture on pixel centres only with a linear head, one tile's a step
    (:class:`TileSampler`, :func:`trains_tiles`).
    """
    values = backend.asarray(picture.values, dtype=picture.values.dtype)
    lattices = plan.model == "hashgrid"  # the presets whose first layer is a HashGrid
    if plan.trains_tiles:
        return {"batches": TileSampler(values, plan.batch_size, plan.seed)}
    if not plan.every_pixel:
        return {"batches": PictureSampler(values, plan.batch_size, plan.seed, plan.filter)}
    pixels = Lattice(axis(plan.width), axis(plan.height)) if lattices else \
        backend.asarray(pixel_grid(plan.width, plan.height))
    if plan.filter == "centres":
        return {"inputs": pixels, "targets": backend.asarray(picture.pixels.reshape(-1, plan.channels))}
    between, weight = SPLINE_BETWEEN if plan.filter == "spline" else (BETWEEN[plan.mode], BETWEEN_WEIGHT[plan.mode])
    return {"batches": EveryPixel(values, pixels, plan.seed, plan.filter, between=between, weight=weight)}


def new_model(plan: RunPlan, picture=None):
    """The untrained model for ``plan``; given the ``picture``, a level of a vertex per pixel
    starts as the picture (:func:`start_from_picture`) unless the plan starts random."""
    try:
        model = plan.preset.build(plan.channels, plan.model_options, np.random.default_rng(plan.seed))
    except ValueError as exc:
        raise OptionError(f"cannot build {{model}} {plan.model}: {exc}", "model") from None
    if picture is not None and plan.starts_as_picture and not start_from_picture(model, picture):
        raise AssertionError(f"the plan starts {plan.model} as the picture, but its layout is not one that can")
    return model


def _save_trigger(plan: RunPlan) -> Every:
    return Every(plan.checkpoint_interval, CHECKPOINT_SECONDS, since=plan.prior_seconds)


def _records(plan: RunPlan, model, backend, log, timelapse: bool) -> tuple[Recorder, Snapshots]:
    """The history and the time-lapse, continued from the run folder on a resume (each starts
    again at the resume's step, with a note, when its file there is damaged).  A model that
    starts as the picture has no learning to show: its time-lapse captures nothing, and a note
    says how to watch one learn.  Nor does a resume of a finished run, which kept no frames
    (:func:`finish`): its timelapse.gif stays that of the steps before."""
    recorder = Recorder(plan.history_interval, exact=plan.every_pixel)
    records = [(recorder, folder.HISTORY, "loss history")]
    if not timelapse:
        snapshots = Snapshots([], plan.width, plan.height, backend)
        if plan.starts_as_picture and not kept_start(plan):  # else the line that says it does not train says so
            log(Note("note: no time-lapse: the model starts as the picture, so there is no learning to show; "
                     "give {start} random to watch a network learn", "start"))
    else:
        # A timed fit's frames count against its budget: they keep to a share of it.
        seconds = FRAME_SHARE * plan.remaining_seconds if plan.timed else None
        snapshots = Snapshots(plan.frame_steps, plan.width, plan.height, backend, seconds=seconds)
        records.append((snapshots, folder.FRAMES, "time-lapse"))
    for record, name, what in records if plan.resume else ():
        if not record.restore(os.path.join(plan.out, name), plan.start_step):
            log(f"note: {name} could not be read; the {what} starts again at step {plan.start_step:,}")
    if not snapshots.frames and timelapse:
        snapshots.capture(model, plan.start_step)
    return recorder, snapshots


# -- train -------------------------------------------------------------------------------------
def train(job: Job, log) -> None:
    """Train to the plan's steps or time budget; after divergence, roll back and retry more gently.

    Raises Interrupted after Ctrl-C (the checkpoint is saved) and DivergenceError when the
    retries run out.
    """
    trainer = job.trainer
    style = progress_style(job.plan)
    timed = job.plan.timed  # counted in seconds: its step count is an estimate, revised as it goes
    progress = None if style == "none" else Progress(
        job.plan.steps, job.plan.start_step, plain=style == "plain", describe=describe_progress(job.plan),
        budget=job.plan.time_budget if timed else None, spent=job.plan.prior_seconds)
    if progress is not None:
        trainer.callbacks.append(progress)
    if timed:
        trainer.callbacks.append(Replan(job))
    with stop_on_signals(trainer) as interrupted:
        for attempt in range(MAX_RETRIES + 1):
            try:
                # A timed run trains to the end of its budget, its steps being an estimate.
                trainer.run(None if job.plan.timed else job.plan.steps, time_budget=job.plan.remaining_seconds)
                break
            except DivergenceError as exc:
                if attempt == MAX_RETRIES:
                    if progress is not None:
                        progress.close()
                    raise DivergenceError(exc.step, exc.loss, exc.lr) from None
                job.retry_gentler()
                log(f"loss became {exc.loss:.3g} at step {exc.step}; rolled back to step {trainer.step}, "
                    f"retrying with learning rate {job.plan.lr:.3g} ({attempt + 1} of {MAX_RETRIES})")
    if interrupted:
        raise Interrupted(trainer.step, ResumeNote(job.plan.input, job.plan.out), interrupted[0])


@contextlib.contextmanager
def stop_on_signals(trainer):
    """While inside: the first Ctrl-C or SIGTERM lets the step in flight finish and stops the run
    (which then saves); a second one stops at once.  Yields a list of the signals that came."""
    interrupted = []

    def on_signal(signum, frame):
        if interrupted:
            raise stop_now(signum)  # a second SIGTERM is still a SIGTERM (exit 143, not Ctrl-C's 130)
        interrupted.append(signum)
        trainer.request_stop()

    with handling(STOP_SIGNALS, on_signal):
        yield interrupted
