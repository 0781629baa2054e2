"""A run given a time, not a step count: how it sizes its schedule, and keeps it sized.

Before the run, :func:`calibrate` times a few steps that change nothing; the schedule is sized
to the steps the budget allows at that pace.  The machine's speed drifts (another process, a
thermal limit, a stall), so :class:`Replan` reads the pace as the run goes
(:class:`~.pace.Pace`, which one stalled step does not sway) and re-sizes the schedule, by one
rule (:func:`going_on`).  A timed fit (``ironlearn fit --seconds``), the codec's MLP and its
latents' refinement (``compress``) all train so; the codec's two run a :class:`CosinePlan`
through :func:`run_planned`.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
import time
from dataclasses import dataclass

from ..nn import mse
from ..optim import Adam, cosine, warmup_cosine
from .callbacks import Callback, Every
from .pace import BLOCKS, Pace
from .threads import TRIAL_STEPS, ThreadPolicy
from .trainer import Trainer

#: Steps timed one at a time after calibration's two warm-up ones (their median is the pace).
CALIBRATION_STEPS = 6
#: A re-plan lifts the rate when the rate reached is under this share of the fresh cosine's.
LIFT = 0.5
#: Seconds between the progress reports of a planned run (:class:`EndOfPlan`).
REPORT_SECONDS = 1.0


def _no_step(step: int) -> float:
    """Calibration's learning rate: none."""
    return 0.0


def calibrate(model, data: dict, loss=mse, threads: ThreadPolicy | None = None, clock=None) -> float:
    """Seconds per training step of ``model`` on ``data`` (Trainer keyword arguments: ``inputs``
    and ``targets``, or ``batches``), measured with a throwaway optimizer whose learning rate is
    zero: every step's update is exactly zero, so the real run starts untouched, with no copy of
    the model (a deep copy and its Adam moments took hundreds of megabytes more on a large picture;
    measured: docs/benchmark-log.md, 'Measurements the code's comments quoted').

    The median of single steps after two warm-up ones: a mean let one slow step (a page fault,
    another process) shorten a whole run's plan.  Given the CPU's ``threads`` policy,
    the steps are the policy's first measurement, and the pace is that of the thread count it
    chose: the training runs on the same (calibrated on two spinning threads beside a neighbour,
    a plan came out 20 to 100 times too short; measured: docs/benchmark-log.md, 'On a shared
    machine: a timed fit beside other work').
    """
    trainer = Trainer(model, Adam(model.named_parameters(), lr=_no_step), loss, **data, check_every=0,
                      blas_threads=threads.chosen if threads is not None else None, clock=clock)
    trainer.run(2)
    if threads is not None and threads.auto:
        trainer.threads = threads
        trainer.run(trainer.step + 2 * TRIAL_STEPS)
        return max(threads.seconds_per_step, 1e-6)
    clock = clock or time.perf_counter
    times = []
    for _ in range(CALIBRATION_STEPS):
        trainer.loss  # noqa: B018  (a sync, so each timing is real on a GPU)
        t0 = clock()
        trainer.run(trainer.step + 1)
        trainer.loss  # noqa: B018
        times.append(clock() - t0)
    return max(statistics.median(times), 1e-6)


class Replan(Callback):
    """Keeps a timed run's step count to what its budget allows at its :class:`Pace`, so that the
    schedule anneals as the budget ends, however the machine's speed drifts.

    Calibration times a few steps before the run; a machine that slows down later would end the
    run before the schedule does (its learning rate still high), one that speeds up would reach
    the planned steps early and leave time unused (measured: docs/reliability.md, 'How a run stays
    safe').  A re-plan goes on from
    the rate reached, lifting it only when the first plan was far too short
    (a fit's :meth:`~ironlearn.fitting.plan.RunPlan.replanned`), so the pace it reads must not take one stalled step for a slow
    machine.

    It re-plans each :attr:`share` of the budget, and at once when the run is far ahead of its
    plan (:meth:`ahead`): a plan calibrated while a neighbour held the cores can be tens of times
    too short (:func:`calibrate`), and its cosine would reach the floor in the first second.
    """

    #: The plan is revised each time this share of the budget has passed.
    share = 1 / 20

    def __init__(self, job):
        """``job``: what it keeps to its budget (a fit's :class:`~ironlearn.fitting.run.Job`, the
        codec's :class:`Timed`): its ``plan`` (with
        ``time_budget``, ``prior_seconds``, ``start_step``, ``steps`` and ``replanned(step,
        train_seconds, seconds_per_step)``), ``replan(plan)``, and ``stalled_seconds`` and
        ``step_seconds``, which this keeps up to date."""
        super().__init__(1)  # each step: reads the clock only
        self.job = job
        plan = job.plan
        self.trigger = Every(seconds=plan.time_budget * self.share, since=plan.prior_seconds)
        self.pace = Pace(job.stalled_seconds)
        self.last = (plan.start_step, plan.prior_seconds)
        self.replanned_at = plan.start_step

    def ahead(self, trainer) -> bool:
        """Whether the run has gone through its planned steps more than twice as fast as through
        its budget (and a tenth more), with enough steps since the last re-plan to read a pace."""
        plan = self.job.plan
        if trainer.step - self.replanned_at < BLOCKS:
            return False
        done = (trainer.step - plan.start_step) / max(1, plan.steps - plan.start_step)
        spent = (trainer.train_seconds - plan.prior_seconds) / max(1e-9, plan.time_budget - plan.prior_seconds)
        return done > 2 * spent + 0.1

    def step(self, trainer) -> None:
        (step, seconds), self.last = self.last, (trainer.step, trainer.train_seconds)
        if trainer.step > step:
            self.pace.add((trainer.train_seconds - seconds) / (trainer.step - step), trainer.last_step_seconds)
            self.job.stalled_seconds = self.pace.stalled
            self.job.step_seconds += trainer.last_step_seconds
        due = self.trigger(trainer)
        if not self.pace or not (due or self.ahead(trainer)):
            return
        self.replanned_at = trainer.step
        plan = self.job.plan.replanned(trainer.step, trainer.train_seconds, self.pace.seconds_per_step)
        if plan != self.job.plan:  # another step count, or another rate to go on from
            self.job.replan(plan)


def going_on(reached: float, fresh: float) -> float:
    """The rate a re-planned cosine goes on down from: the rate ``reached`` at the step of the
    re-plan, so that the small ups and downs of a pace that includes checkpoints and frames do not
    move the rate up and down (going on from a fresh cosine each time cost a 5 s fit over a dB at
    worst; measured: docs/benchmark-log.md, 'On a shared machine: a timed fit beside other work').
    But when it is under :data:`LIFT` of the ``fresh`` cosine's over the new count at that step, the
    first plan was far too short (calibrated on a busy machine, it can be tens of times too short
    and reach the floor in a second), and it goes on from the fresh rate instead: before, most of
    such a fit's steps sat at the floor (measured: docs/benchmark-log.md, 'Measurements the code's
    comments quoted')."""
    return fresh if reached < LIFT * fresh else reached


@dataclass(frozen=True)
class CosinePlan:
    """A timed run's cosine, as :class:`Replan` reads and revises it: from ``peak`` (after
    :func:`~ironlearn.optim.warmup_cosine`'s warm-up, with ``warmup``) down to ``floor`` at
    ``steps``, when the ``time_budget`` is spent but for the time of ``held_back`` steps (what
    follows the run, priced in its steps); ``most`` steps at most, if given.  ``anneal_from``
    ``(step, rate)``: a revised plan's cosine goes on from that rate (:func:`going_on`)."""

    peak: float
    floor: float
    steps: int
    time_budget: float
    held_back: int = 0
    warmup: bool = True
    most: int | None = None
    anneal_from: tuple[int, float] | None = None
    start_step: int = 0  # Replan's terms for a run that starts anew
    prior_seconds: float = 0.0

    def make_schedule(self):
        if self.anneal_from is None:
            return (warmup_cosine if self.warmup else cosine)(self.peak, self.floor, self.steps)
        step, lr = self.anneal_from
        return cosine(lr, min(self.floor, lr), self.steps, warmup_steps=step)

    def replanned(self, step: int, train_seconds: float, seconds_per_step: float) -> "CosinePlan":
        """The plan at ``step`` after ``train_seconds``, when a step takes ``seconds_per_step``:
        as many steps as the time left allows; past the warm-up the cosine goes on down from the
        rate :func:`going_on` gives, within it the warm-up is kept and the cosine re-sized."""
        left = int(max(0.0, self.time_budget - train_seconds) / max(seconds_per_step, 1e-9)) - self.held_back
        steps = step + max(1, left)
        if self.most is not None:
            steps = max(step + 1, min(self.most, steps))
        schedule = self.make_schedule()
        reached = schedule(step)
        if steps == self.steps or reached <= 0:  # the same plan, or a cosine ended at a floor of 0
            return self
        if step < schedule.warmup_steps:
            return dataclasses.replace(self, steps=max(steps, schedule.warmup_steps + 1))
        fresh = dataclasses.replace(self, steps=steps, anneal_from=None).make_schedule()(step)
        return dataclasses.replace(self, steps=steps, anneal_from=(step, going_on(reached, fresh)))


class Timed:
    """A run that :class:`Replan` keeps to its time: the plan, and the trainer whose schedule
    follows it."""

    def __init__(self, plan: CosinePlan, trainer: Trainer):
        self.plan, self.trainer = plan, trainer
        self.stalled_seconds = self.step_seconds = 0.0

    def replan(self, plan: CosinePlan) -> None:
        self.plan = plan
        self.trainer.optimizer.schedule = plan.make_schedule()


class EndOfPlan(Callback):
    """Stops a run at its plan's last step (the plan moves as :class:`Replan` revises it), and
    calls ``report(trainer, plan)``, if given, after the first step and every
    :data:`REPORT_SECONDS` after."""

    def __init__(self, job: Timed, report=None, clock=None):
        super().__init__(1)
        self.job, self.report, self.clock = job, report, clock or time.perf_counter
        self.reported = -math.inf

    def step(self, trainer) -> None:
        if trainer.step >= self.job.plan.steps:
            trainer.request_stop()
        if self.report is not None and self.clock() - self.reported > REPORT_SECONDS:
            self.reported = self.clock()
            self.report(trainer, self.job.plan)


def run_planned(trainer: Trainer, plan: CosinePlan, report=None, callbacks=(), clock=None) -> Trainer:
    """Run ``trainer`` (its ``callbacks`` first, each step) on ``plan``'s cosine until the plan's
    last step or its time budget, re-planned as the pace drifts (:class:`Replan`), ``report``
    called as :class:`EndOfPlan` says."""
    job = Timed(plan, trainer)
    trainer.optimizer.schedule = plan.make_schedule()
    trainer.callbacks = [*callbacks, Replan(job), EndOfPlan(job, report, clock)]
    if plan.steps > 0 and plan.time_budget > 0:
        trainer.run(time_budget=plan.time_budget)
    return trainer
