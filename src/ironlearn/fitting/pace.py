"""How a timed fit keeps to its budget: the re-plan.

A run given only a time budget sizes its learning-rate schedule to the steps the budget allows.
The machine's speed drifts (another process, a thermal limit), so the run measures its pace as
it goes (:class:`~ironlearn.train.pace.Pace`, which one stalled step does not sway) and re-sizes
the schedule (:class:`Replan`).
"""

from __future__ import annotations

from ..train import Callback, Every
from ..train.pace import BLOCKS, Pace


class Replan(Callback):
    """Keeps a timed run's step count to what its budget allows at its :class:`Pace`, so that the
    schedule anneals as the budget ends, however the machine's speed drifts.

    Calibration times a few steps before the run; a machine that slows down later would end the
    run before the schedule does (its learning rate still high), one that speeds up would reach
    the planned steps early and leave time unused.  Measured on the bundled drawing in 5 s: runs
    planned 318 steps and made 299, or planned 281 and stopped at 4.6 s.  A re-plan goes on from
    the rate reached, lifting it only when the first plan was far too short
    (:meth:`RunPlan.replanned`), so the pace it reads must not take one stalled step for a slow
    machine.

    It re-plans each :attr:`share` of the budget, and at once when the run is far ahead of its
    plan (:meth:`ahead`): a plan calibrated while a neighbour held the cores can be 40 times too
    short, and its cosine would reach the floor in the first second.
    """

    #: The plan is revised each time this share of the budget has passed.
    share = 1 / 20

    def __init__(self, job):
        """``job``: a :class:`~ironlearn.fitting.run.Job`, or anything with its ``plan``,
        ``replan(plan)``, ``stalled_seconds`` and ``step_seconds`` (which this keeps up to date)."""
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
