"""The BLAS thread policy: the faster of one thread and the library's own, by timing real steps."""

import pytest

from ironlearn.train.threads import MORE_THREADS_GAIN, RECHECK_SECONDS, TRIAL_STEPS, ThreadPolicy


def drive(policy, seconds_on, steps):
    """``steps`` steps through ``policy``, each taking ``seconds_on(threads)``; returns the counts run on."""
    counts = []
    for _ in range(steps):
        threads = policy.threads(apply=False)
        counts.append(threads)
        policy.record(seconds_on(threads))
    return counts


@pytest.mark.parametrize("one, two, chosen", [
    (0.08, 0.70, 1),  # SIREN beside a neighbour: the second thread spins
    (0.04, 0.02, 2),  # a wide product alone: two pay
    (0.04, 0.04 * MORE_THREADS_GAIN * 1.01, 1),  # barely faster: one thread, which cannot spin later
])
def test_it_keeps_the_faster_setting_measured_on_alternating_steps(one, two, chosen):
    policy = ThreadPolicy(cores=2)
    counts = drive(policy, {1: one, 2: two}.get, 2 * TRIAL_STEPS + 5)
    assert counts[:2 * TRIAL_STEPS] == [1, 2] * TRIAL_STEPS
    assert counts[2 * TRIAL_STEPS:] == [chosen] * 5 and policy.chosen == chosen
    assert policy.seconds_per_step == {1: one, 2: two}[chosen]


def test_it_measures_again_when_the_machine_changes():
    """Alone two threads win; a neighbour arrives; the next measurement goes back to one."""
    policy = ThreadPolicy(cores=2)
    drive(policy, {1: 0.04, 2: 0.02}.get, 2 * TRIAL_STEPS)
    assert policy.chosen == 2
    steps = int(RECHECK_SECONDS / 0.02)
    drive(policy, {1: 0.08, 2: 0.50}.get, steps + 2 * TRIAL_STEPS)
    assert policy.chosen == 1


def test_a_fixed_count_or_one_core_measures_nothing():
    assert drive(ThreadPolicy(1, cores=2), lambda n: 0.01, 8) == [1] * 8
    assert drive(ThreadPolicy(cores=1), lambda n: 0.01, 8) == [None] * 8


def test_more_threads_must_win_on_every_trial_step():
    """Beside a neighbour, two threads' steps swing: a median that wins by one lucky step is
    not a reason to run a whole fit on two spinning threads."""
    policy = ThreadPolicy(cores=2)
    two = iter([0.02, 0.02, 0.30])  # two fast steps while the neighbour paused, then the truth
    drive(policy, lambda n: 0.04 if n == 1 else next(two), 2 * TRIAL_STEPS)
    assert policy.chosen == 1


def test_steps_on_more_threads_that_fall_behind_measure_again_at_once():
    """Two threads won; then a neighbour arrives long before the next due measurement: after
    TRIAL_STEPS slow steps the policy measures again, and goes back to one thread."""
    policy = ThreadPolicy(cores=2)
    drive(policy, {1: 0.04, 2: 0.02}.get, 2 * TRIAL_STEPS)
    assert policy.chosen == 2
    counts = drive(policy, {1: 0.08, 2: 0.50}.get, TRIAL_STEPS + 2 * TRIAL_STEPS + 2)
    assert counts[:TRIAL_STEPS] == [2] * TRIAL_STEPS  # the slow steps that tell
    assert counts[TRIAL_STEPS:3 * TRIAL_STEPS] == [1, 2] * TRIAL_STEPS  # measured again, well before RECHECK_SECONDS
    assert policy.chosen == 1 and counts[-2:] == [1, 1]


def test_one_thread_that_slows_down_waits_for_the_due_measurement():
    """One thread is the safe side: a neighbour slowing its steps starts no measurement (whose
    steps on two threads would cost many times over)."""
    policy = ThreadPolicy(cores=2)
    drive(policy, {1: 0.02, 2: 0.04}.get, 2 * TRIAL_STEPS)
    assert drive(policy, {1: 0.10, 2: 0.50}.get, 20) == [1] * 20
