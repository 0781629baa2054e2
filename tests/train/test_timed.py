"""A timed fit's pace and re-plan, driven by a fake clock: a stall costs its own time and no more."""

import numpy as np
import pytest

from ironlearn.fitting import FitOptions, make_plan
from ironlearn.train.timed import LIFT, CosinePlan, Replan, going_on
from ironlearn.image.io import Picture
from ironlearn.train.pace import RECENT_STEPS, Pace

BUDGET = 12.0
STEP = 0.01  # seconds a step, on the fake clock


def test_one_slow_step_does_not_move_the_pace_but_counts_as_stalled():
    pace = Pace()
    for _ in range(30):
        pace.add(STEP)
    pace.add(4.0)
    assert pace.seconds_per_step == pytest.approx(STEP)
    assert pace.stalled == pytest.approx(4.0 - STEP)


def test_a_machine_that_really_slows_down_moves_the_pace_within_its_window():
    pace = Pace()
    for _ in range(RECENT_STEPS):
        pace.add(STEP)
    for _ in range(RECENT_STEPS // 2 + 8):
        pace.add(3 * STEP)
    assert pace.seconds_per_step == pytest.approx(3 * STEP)
    assert pace.stalled == 0.0  # three times slower is a slow machine, not a stopped one


def test_a_callbacks_slow_write_is_not_a_stall_and_alternating_steps_average():
    pace = Pace()
    for i in range(RECENT_STEPS):
        pace.add(1.0 if i % 20 == 19 else STEP, own_seconds=STEP)  # a checkpoint every 20 steps
    assert pace.stalled == 0.0
    alternating = Pace()
    for i in range(RECENT_STEPS):
        alternating.add(STEP if i % 2 else 3 * STEP)
    assert alternating.seconds_per_step == pytest.approx(2 * STEP)  # not either mode


class FakeTrainer:
    def __init__(self):
        self.step, self.train_seconds, self.last_step_seconds = 0, 0.0, 0.0


class FakeJob:
    """What Replan needs of a fit job."""

    def __init__(self, plan):
        self.plan, self.stalled_seconds, self.step_seconds = plan, 0.0, 0.0

    def replan(self, plan):
        self.plan = plan


def first_near_floor(rates, floor):
    """The first step past the warm-up whose rate is within 2% of the way from the floor to the peak."""
    peak = rates.argmax()
    return peak + np.flatnonzero(rates[peak:] < floor + 0.02 * (rates[peak] - floor))[0]


def timed_run(budget, stall_at=None, stall=0.0, step_seconds=lambda t: STEP, calibrated=STEP):
    """A timed fit's steps on a fake clock: ``stall`` seconds inside the step that starts at
    ``stall_at`` seconds, its plan calibrated at ``calibrated`` seconds a step.  Returns (the
    learning rate of each step, the job)."""
    pixels = np.zeros((48, 64, 1), np.float32)
    plan = make_plan(FitOptions("p.png", time_budget=budget), Picture(values=pixels, mode="gray", source="p.png"))
    job = FakeJob(plan.calibrated(calibrated))
    replan, trainer, rates = Replan(job), FakeTrainer(), []
    while trainer.train_seconds < budget:
        rates.append(job.plan.make_schedule()(trainer.step))
        seconds = step_seconds(trainer.train_seconds)
        if stall_at is not None and trainer.train_seconds >= stall_at:
            seconds, stall_at = seconds + stall, None
        trainer.step += 1
        trainer.train_seconds += seconds
        trainer.last_step_seconds = seconds
        replan.step(trainer)
    return np.array(rates), job


# Stalls of several lengths at several points, each leaving at least a tenth of the budget after it.
STALLS = [(at, stall) for at in (0.05, 0.25, 0.5, 0.8) for stall in (0.5, 2.0, 4.0, 8.0) if at + stall / BUDGET <= 0.9]


@pytest.mark.parametrize("at, stall", STALLS)
def test_a_stall_costs_its_own_time_and_the_schedule_still_anneals(at, stall):
    rates, job = timed_run(BUDGET, stall_at=at * BUDGET, stall=stall)
    clean, _ = timed_run(BUDGET - stall)
    floor, peak = job.plan.lr_min, rates.max()
    # The stalled run trains the steps a clean run of the shorter budget trains, a step or two aside.
    assert abs(len(rates) - len(clean)) <= 2
    # It ends annealed, and never sits near its floor before the last tenth of its steps.
    assert rates[-1] < floor + 0.01 * (peak - floor)
    assert first_near_floor(rates, floor) >= 0.9 * len(rates)
    assert job.stalled_seconds == pytest.approx(stall, abs=2 * STEP)


def test_after_a_slow_spell_the_schedules_end_moves_later_again():
    # Three times slower for 2 s from 3 s on, then as fast as before.
    rates, job = timed_run(BUDGET, step_seconds=lambda t: 3 * STEP if 3.0 <= t < 5.0 else STEP)
    expected = (BUDGET - 2.0) / STEP + 2.0 / (3 * STEP)
    assert abs(len(rates) - expected) <= 0.02 * expected
    floor, peak = job.plan.lr_min, rates.max()
    assert rates[-1] < floor + 0.01 * (peak - floor)
    assert first_near_floor(rates, floor) >= 0.9 * len(rates)
    assert job.stalled_seconds == 0.0


@pytest.mark.parametrize("wrong_by", [40.0, 1 / 10])
def test_a_first_plan_far_from_the_real_pace_does_not_leave_the_rate_at_its_floor(wrong_by):
    """Calibrated beside a neighbour that then left (a plan 40 times too short), or on a quiet
    machine that then got busy (10 times too long): the rate follows the clock all the same.
    Before, a too-short plan ran the cosine to its floor in its first second and no re-plan
    raised it: 94% of the steps sat there."""
    rates, job = timed_run(BUDGET, calibrated=STEP * wrong_by)
    floor, peak = job.plan.lr_min, rates.max()
    assert rates[-1] < floor + 0.01 * (peak - floor)
    assert first_near_floor(rates, floor) >= 0.8 * len(rates)
    assert abs(len(rates) - BUDGET / STEP) <= 2


def test_a_plan_without_a_warm_up_keeps_to_its_most_steps_and_ends_at_a_floor_of_zero():
    """The codec's latents run such a plan: a cosine from 1 to 0, at most ``most`` steps."""
    plan = CosinePlan(1.0, 0.0, 100, 10.0, warmup=False, most=100)
    assert plan.make_schedule()(0) == 1.0
    shorter = plan.replanned(1, 1.0, 0.5)  # 18 steps' time left
    assert shorter.steps == 19 and shorter.make_schedule()(1) == pytest.approx(plan.make_schedule()(1))
    assert plan.replanned(1, 1.0, 1e-4).steps == 100  # never past its most
    ended = CosinePlan(1.0, 0.0, 10, 10.0, warmup=False)
    assert ended.replanned(10, 1.0, 0.01) is ended  # nothing to go on from at a rate of 0


def test_a_replan_goes_on_from_the_rate_reached_unless_the_first_plan_was_far_too_short():
    assert going_on(0.6, 1.0) == 0.6
    assert going_on(0.9 * LIFT, 1.0) == 1.0
