"""The fit job's steps: resuming with nothing left, the run-folder lock, outputs, exit codes."""

import json
import os
import shutil

import matplotlib
import pytest
from PIL import Image

from helpers import make_picture, run_cli
from ironlearn.cli import ExitCode, main
from ironlearn.fitting import PRESETS
from ironlearn.fitting import folder
from ironlearn.fitting.outputs import plot_history
from ironlearn.image import InputError, load_picture
from ironlearn.train import load_checkpoint

QUICK = ["--quiet", "--device", "cpu", "--width", "16", "--depth", "1"]


@pytest.fixture(scope="module")
def finished_run(tmp_path_factory):
    """Two finished runs: ``run`` reached its 30 steps, ``timed`` its 0.3 s time budget."""
    base = tmp_path_factory.mktemp("finished")
    picture = make_picture(base / "disc.png")
    assert main(["fit", str(picture), "--out", str(base / "run"), "--steps", "30", *QUICK]) == 0
    assert main(["fit", str(picture), "--out", str(base / "timed"), "--steps", "100000", "--time-budget", "0.3",
                 *QUICK]) == 0
    return base


@pytest.fixture
def run(finished_run, tmp_path):
    shutil.copytree(finished_run, tmp_path, dirs_exist_ok=True)
    return tmp_path / "run"


@pytest.mark.parametrize("name,extra,expected", [
    ("run", [], "is at step 30 and was asked for 30"),                  # a finished run, resumed as it is
    ("run", ["--steps", "20"], "is at step 30 and was asked for 20"),   # fewer steps than it has done
    ("timed", [], "of its 0.3 s budget"),                               # its time budget is spent
    ("timed", ["--time-budget", "0.1"], "of its 0.1 s budget"),         # a smaller budget than it used
])
def test_a_resume_with_nothing_left_writes_the_outputs_and_says_so(run, capsys, name, extra, expected):
    run = run.parent / name
    steps = load_checkpoint(run / "checkpoint.npz").step
    (run / "metrics.json").unlink()
    code, _, err = run_cli(capsys, "fit", run.parent / "disc.png", "--out", run, "--resume", "--quiet", *extra)
    assert code == ExitCode.OK, err
    lines = err.strip().splitlines()
    assert expected in lines[0] and "nothing left to train" in lines[0] and "Traceback" not in err
    assert json.loads((run / "metrics.json").read_text())["steps"] == steps
    assert load_checkpoint(run / "checkpoint.npz").step == steps


def test_a_second_fit_in_a_locked_folder_is_refused(run, capsys):
    before = {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()}
    with folder.RunLock(str(run)):
        for args in (["--resume", "--steps", 60], ["--force", "--steps", 5]):
            code, _, err = run_cli(capsys, "fit", run.parent / "disc.png", "--out", run, *args, *QUICK)
            assert code == ExitCode.USAGE and "another fit is running" in err and err.count("\n") == 1, err
    assert {p.name: p.read_bytes() for p in run.iterdir() if p.is_file()} == before
    # Released when its holder ends (here: leaves the block), so the next fit goes ahead.
    assert run_cli(capsys, "fit", run.parent / "disc.png", "--out", run, "--resume", "--steps", 35, *QUICK)[0] == 0


def test_a_killed_holder_leaves_no_stale_lock(run, capsys):
    import subprocess
    import sys

    holder = subprocess.Popen([sys.executable, "-c", "import sys, time; from ironlearn.fitting.folder import RunLock\n"
                               f"with RunLock({str(run)!r}):\n print('held', flush=True); time.sleep(60)"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        code, _, err = run_cli(capsys, "fit", run.parent / "disc.png", "--out", run, "--resume", "--steps", 35, *QUICK)
        assert code == ExitCode.USAGE and f"process {holder.pid}" in err
    finally:
        holder.kill()
        holder.wait()
    assert run_cli(capsys, "fit", run.parent / "disc.png", "--out", run, "--resume", "--steps", 35, *QUICK)[0] == 0


def test_the_run_folder_lists_every_file_fit_writes(run):
    written = {p.name for p in run.iterdir()}
    # The lock is gone once the fit ends, and so are the frames of a finished run (timelapse.gif shows them).
    assert written == set(folder.FILES) - {folder.FRAMES}


def test_resume_while_a_fit_runs_there_says_so(tmp_path, capsys):
    """Before its first checkpoint, a running fit's folder has nothing to resume: the message must
    say that a fit is running, not send the user to drop --resume."""
    run = tmp_path / "run"
    run.mkdir()
    with folder.RunLock(str(run)):
        code, _, err = run_cli(capsys, "fit", make_picture(tmp_path / "p.png"), "--out", run, "--resume", *QUICK)
    assert code == ExitCode.USAGE and f"a fit is running in {run} (process {os.getpid()})" in err, err
    assert not (run / folder.LOCK).exists()


def test_plot_history_leaves_the_matplotlib_backend_alone(tmp_path, monkeypatch):
    def refuse(*args, **kwargs):
        raise AssertionError("plot_history switched the global matplotlib backend")

    monkeypatch.setattr(matplotlib, "use", refuse)
    rows = [{"step": s, "loss": 1.0 / s, "psnr": 10.0 + s} for s in range(1, 20)]
    plot_history(tmp_path / "loss.png", rows)
    with Image.open(tmp_path / "loss.png") as image:
        assert image.size[0] > 100


def test_tiles_losses_are_plotted_with_their_mean_over_an_epoch(tmp_path):
    from ironlearn.fitting.outputs import epoch_means

    rows = [{"step": s, "loss": [1.0, 3.0][s % 2]} for s in range(1, 8)]
    assert epoch_means(rows, 2) == [3.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0]  # two tiles an epoch
    assert epoch_means(rows[::3], 2) == [3.0, 2.0, 2.0]  # rows every 3 steps: the last two rows
    plot_history(tmp_path / "loss.png", [{**r, "psnr": 10.0} for r in rows], final_psnr=30.0, epoch=2)
    with Image.open(tmp_path / "loss.png") as image:
        assert image.size[0] > 100


def test_an_unreadable_file_says_permission_denied(tmp_path, monkeypatch):
    picture = make_picture(tmp_path / "disc.png")

    def denied(*args, **kwargs):
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(Image, "open", denied)
    with pytest.raises(InputError, match="permission denied"):
        load_picture(picture)
    monkeypatch.undo()
    csv = tmp_path / "p.csv"
    csv.write_text("x,y,pixel_value\n0,0,1\n")
    monkeypatch.setattr("builtins.open", denied)
    with pytest.raises(InputError, match="permission denied"):
        load_picture(csv)


def test_exit_codes_are_one_enum():
    assert [int(c) for c in ExitCode] == [0, 1, 2, 130, 143]
    assert [c.name for c in ExitCode] == ["OK", "FAILED", "USAGE", "INTERRUPTED", "TERMINATED"]


@pytest.mark.parametrize("seconds_per_step", [1e-6, 10.0])  # calibration far too fast, far too slow
def test_a_timed_fit_ends_its_schedule_with_its_budget_whatever_calibration_said(
        tmp_path, monkeypatch, seconds_per_step):
    from ironlearn.fitting import run as fit_run

    monkeypatch.setattr(fit_run, "calibrate", lambda model, data, threads=None: seconds_per_step)
    picture = make_picture(tmp_path / "disc.png")
    assert main(["fit", str(picture), "--out", str(tmp_path / "run"), "--time-budget", "0.5", *QUICK]) == 0
    saved = load_checkpoint(tmp_path / "run" / "checkpoint.npz")
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    assert metrics["seconds"] >= 0.5 and saved.settings["timed"]  # the whole budget was trained
    # The schedule was replanned to the steps the run could make, so it annealed as the run ended
    # (planned at first: a million steps, or ten).
    assert metrics["steps"] > 10 and abs(saved.settings["steps"] - metrics["steps"]) <= 0.25 * metrics["steps"]


@pytest.mark.parametrize("flags,steps_shown,chatter", [(["--quiet"], False, False), (["--progress", "plain"], True, True),
                                                        (["--progress", "none"], False, True)])
def test_quiet_means_quiet_and_progress_picks_the_style(tmp_path, capsys, flags, steps_shown, chatter):
    """--quiet used to mean "plain lines"; now it prints errors and the result only."""
    picture = make_picture(tmp_path / "p.png")
    code, _, err = run_cli(capsys, "fit", picture, "--out", tmp_path / "run", "--steps", 5, "--device", "cpu",
                           "--width", "16", "--depth", "1", *flags)
    lines = err.strip().splitlines()
    quiet = flags == ["--quiet"]
    assert code == 0 and lines[-1 if quiet else -3].startswith("done:"), err  # --quiet: the result, no hints
    assert any(line.startswith("next:") for line in lines) != quiet, err
    assert any(line.startswith("step ") for line in lines) == steps_shown, err
    assert any(line.startswith("fitting ") for line in lines) == chatter, err


def test_calibration_leaves_the_model_as_it_was(tmp_path):
    """It times steps on the model itself, with a learning rate of zero: no copy of a large model."""
    import numpy as np

    from ironlearn.fitting.run import calibrate
    from ironlearn.image.coords import pixel_grid

    picture = load_picture(make_picture(tmp_path / "disc.png"))
    model = PRESETS["hashgrid"].build(1, PRESETS["hashgrid"].resolve({}, 32, 32, "gray"), np.random.default_rng(0))
    before = {name: p.copy() for name, p in model.named_parameters().items()}
    seconds = calibrate(model, {"inputs": pixel_grid(32, 32), "targets": picture.pixels.reshape(-1, 1)})
    assert seconds > 0
    assert all(np.array_equal(before[name], p) for name, p in model.named_parameters().items())


@pytest.mark.parametrize("checkpoint_every, share", [(None, 0.1), (7, None)])
def test_default_checkpoints_keep_to_a_share_of_the_time_and_a_given_interval_is_kept(
        tmp_path, checkpoint_every, share):
    from ironlearn.backend import Backend
    from ironlearn.fitting import FitOptions, make_plan
    from ironlearn.fitting.run import SAVING_SHARE, build
    from ironlearn.train import Checkpointer

    picture = load_picture(make_picture(tmp_path / "disc.png"))
    plan = make_plan(FitOptions(str(tmp_path / "disc.png"), out=str(tmp_path / "run"), steps=20,
                                checkpoint_every=checkpoint_every), picture)
    job = build(plan, picture, None, Backend("cpu"))
    checkpointer, = [c for c in job.trainer.callbacks if isinstance(c, Checkpointer)]
    assert checkpointer.max_share == share and SAVING_SHARE == 0.1


@pytest.mark.parametrize("model", ["hashgrid", "siren"])
def test_a_timed_fit_is_calibrated_on_the_blas_threads_it_trains_on(tmp_path, monkeypatch, capsys, model):
    """Calibration times steps on one BLAS thread and on two, and training goes on with the
    faster; the library's counts are as they were after.  Before, calibration ran on two threads
    while the hash grid trained on one: beside a neighbour two spin, and plans came out 20 to
    100 times too short."""
    from threadpoolctl import threadpool_info

    from ironlearn.train import Trainer, timed

    def blas():
        return max(pool["num_threads"] for pool in threadpool_info() if pool["user_api"] == "blas")

    before, seen, train_step = blas(), {"calibration": [], "training": []}, Trainer.train_step
    if before < 2:
        pytest.skip("one BLAS thread: nothing to choose")

    def spy(trainer):
        seen["calibration" if trainer.optimizer.schedule is timed._no_step else "training"].append(blas())
        train_step(trainer)

    monkeypatch.setattr(Trainer, "train_step", spy)
    picture = make_picture(tmp_path / "p.png", size=16)
    code, _, err = run_cli(capsys, "fit", picture, "--out", tmp_path / "run", "--time-budget", 0.5, "--model", model,
                           "--quiet")
    assert code == 0, err
    timed = seen["calibration"][2:]  # after two warm-up steps: the policy's measurement
    assert sorted(set(timed)) == [1, before]
    chosen = json.loads((tmp_path / "run" / "metrics.json").read_text())  # trained on one count throughout
    assert len(set(seen["training"])) == 1 and chosen["steps"] == len(seen["training"])
    assert blas() == before


def test_a_timed_fit_whose_steps_slowed_down_says_so_in_its_closing_line(tmp_path, monkeypatch, capsys):
    """Calibrated at a pace its steps then fell far behind (a neighbour took the cores): the
    closing line says how much less of the machine it got; metrics.json holds the factor."""
    from ironlearn.fitting import run as fit_run

    calibrate = fit_run.calibrate
    monkeypatch.setattr(fit_run, "calibrate", lambda *args, **kwargs: calibrate(*args, **kwargs) / 5)
    picture = make_picture(tmp_path / "disc.png")
    code, _, err = run_cli(capsys, "fit", picture, "--out", tmp_path / "run", "--time-budget", 0.5, "--progress", "none",
                           *QUICK[1:])
    assert code == 0, err
    metrics = json.loads((tmp_path / "run" / "metrics.json").read_text())
    done = [line for line in err.splitlines() if line.startswith("done:")]
    assert metrics["slowdown"] >= 1.5 and "took" in done[0] and "busy with other work" in done[0], err


def test_a_fit_on_a_busy_machine_says_so_in_its_closing_line(tmp_path, capsys):
    """Beside twice as many busy processes as cores, the fit gets a core a third of the time at
    most: metrics.json holds the share, the closing line says the machine was busy (a fit
    calibrated beside the same neighbour has no slowdown to show, and said nothing), and the
    opening line says its step estimate may be off."""
    import subprocess
    import sys

    from ironlearn.fitting.outputs import BUSY_NOTICE

    picture = make_picture(tmp_path / "disc.png")
    spin = "print('spinning', flush=True)\nwhile True: pass"
    spinners = [subprocess.Popen([sys.executable, "-c", spin], stdout=subprocess.PIPE) for _ in range(2 * os.cpu_count())]
    try:
        for spinner in spinners:  # all of them busy before the fit starts
            spinner.stdout.readline()
        code, _, err = run_cli(capsys, "fit", picture, "--out", tmp_path / "run", "--time-budget", 1,
                               "--progress", "none", *QUICK[1:])
    finally:
        for spinner in spinners:
            spinner.kill()
            spinner.wait()
    assert code == 0, err
    share = json.loads((tmp_path / "run" / "metrics.json").read_text())["cpu_share"]
    done = [line for line in err.splitlines() if line.startswith("done:")]
    assert share < BUSY_NOTICE and "the machine was busy" in done[0], (share, err)
    started = [line for line in err.splitlines() if line.startswith("fitting ")]  # its estimate is hedged
    assert "the machine is busy" in started[0], err


def test_a_fit_of_fixed_steps_takes_every_core_and_is_the_same_bit_for_bit_resumed_or_in_another_thread(tmp_path):
    """A run of fixed steps measures once which BLAS thread count is faster and keeps it: the
    count is recorded with the run, and a resume goes on with it (BLAS gives other last bits on
    another count, so measuring again could go another way; here the resume's measurement would
    choose one thread, and it must not be asked).  And a count set from a thread other than the
    one that last set it was ignored (threadpoolctl 3.8 lets one thread control OpenBLAS while it
    lives): the same fit in a thread must run on the same count."""
    import signal
    import threading

    import numpy as np

    from ironlearn.fitting import FitOptions, fit
    from ironlearn.train import Trainer, threads as thread_policy

    cores = min(thread_policy.blas_thread_count(), os.cpu_count() or 1)
    if cores < 2:
        pytest.skip("one core: every fit runs on one BLAS thread")
    picture = make_picture(tmp_path / "disc.png", size=24, colour=True)
    step = Trainer.train_step
    seen = {}  # trainer -> the BLAS thread counts its steps ran on (the measurement's trainer first)

    def counted(trainer):
        seen.setdefault(trainer, set()).add(thread_policy.blas_thread_count())
        step(trainer)

    def fitted(out, steps, resume=False, in_thread=False, faster=cores):
        options = FitOptions(input=str(picture), out=str(tmp_path / out), steps=steps, device="cpu", quiet=True,
                             resume=resume)
        with pytest.MonkeyPatch.context() as patch:  # what the measurement finds faster, on any machine
            patch.setattr(thread_policy, "MORE_THREADS_GAIN", 1e9 if faster > 1 else 0.0)
            if in_thread:
                thread = threading.Thread(target=lambda: fit(options, log=lambda m: None))
                thread.start()
                thread.join()
            else:
                fit(options, log=lambda m: None)
        saved = load_checkpoint(tmp_path / out / "model.npz")
        return saved.settings["blas_threads"], saved.model.named_arrays()

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(Trainer, "train_step", counted)
        threads, straight = fitted("straight", 30)
    measured, trained = seen.values()
    assert measured == {1, cores} and trained == {cores} and threads == cores, (seen, threads)
    with pytest.MonkeyPatch.context() as patch:  # Ctrl-C after step 12: the fit saves and stops
        from ironlearn.fitting import Interrupted

        def stopping(trainer):
            step(trainer)
            if trainer.step == 12:
                os.kill(os.getpid(), signal.SIGINT)

        patch.setattr(Trainer, "train_step", stopping)
        with pytest.raises(Interrupted):
            fitted("resumed", 30)
    for threads, got in (fitted("resumed", 30, resume=True, faster=1), fitted("thread", 30, in_thread=True)):
        assert threads == cores
        assert got.keys() == straight.keys()
        for name in straight:
            np.testing.assert_array_equal(got[name], straight[name], err_msg=name)
