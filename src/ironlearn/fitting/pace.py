"""How a timed fit keeps to its budget: the re-plan.

A run given only a time budget sizes its learning-rate schedule to the steps the budget allows.
The machine's speed drifts (another process, a thermal limit), so the run measures its pace as
it goes (:class:`~ironlearn.train.pace.Pace`, which one stalled step does not sway) and re-sizes
the schedule (:class:`Replan`).
"""

from __future__ import annotations

from ..train import Callback, Every
from ..train.pace import Pace


class Replan(Callback):
    """Keeps a timed run's step count to what its budget allows at its :class:`Pace`, so that the
    schedule anneals as the budget ends, however the machine's speed drifts.

    Calibration times a few steps before the run; a machine that slows down later would end the
    run before the schedule does (its learning rate still high), one that speeds up would reach
    the planned steps early and leave time unused.  Measured on the bundled drawing in 5 s: runs
    planned 318 steps and made 299, or planned 281 and stopped at 4.6 s.  A re-plan never raises
    the learning rate (:meth:`RunPlan.replanned`), so the pace it reads must not take one stalled
    step for a slow machine.
    """

    #: The plan is revised each time this share of the budget has passed.
    share = 1 / 20

    def __init__(self, job, progress=None):
        """``job``: a :class:`~ironlearn.fitting.run.Job`, or anything with its ``plan``,
        ``replan(plan)`` and ``stalled_seconds`` (which this keeps up to date)."""
        super().__init__(1)  # each step: reads the clock only
        self.job, self.progress = job, progress
        plan = job.plan
        self.trigger = Every(seconds=plan.time_budget * self.share, since=plan.prior_seconds)
        self.pace = Pace(job.stalled_seconds)
        self.last = (plan.start_step, plan.prior_seconds)

    def step(self, trainer) -> None:
        (step, seconds), self.last = self.last, (trainer.step, trainer.train_seconds)
        if trainer.step > step:
            self.pace.add((trainer.train_seconds - seconds) / (trainer.step - step), trainer.last_step_seconds)
            self.job.stalled_seconds = self.pace.stalled
        if not self.trigger(trainer) or not self.pace:
            return
        plan = self.job.plan.replanned(trainer.step, trainer.train_seconds, self.pace.seconds_per_step)
        if plan.steps != self.job.plan.steps:
            self.job.replan(plan)
            if self.progress is not None:
                self.progress.retotal(plan.steps)
