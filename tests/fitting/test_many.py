"""fit-many: inputs, the local engine (faults, reruns, Ctrl-C, a killed driver or worker) and the Ray engine."""

import csv
import json
import logging
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading

import pytest

from helpers import children_of, find_workers, make_picture, patience, run_cli, wait_for
from ironlearn import backend as backend_module
from ironlearn.cli import ExitCode
from ironlearn.fitting import FitOptions, UsageError
from ironlearn.fitting import folder as run_folder
from ironlearn.fitting.many import COLUMNS, Source, expand, fit_many, summary
from ironlearn.fitting.many.inputs import unique_names
from ironlearn.fitting.many.local import THREAD_VARIABLES, worker_environment
from ironlearn.fitting.many.fit_job import FIT, prepare
from ironlearn.train.checkpoint import read_meta

QUICK = ["--steps", "10", "--width", "8", "--depth", "1", "--device", "cpu", "--quiet"]
SIZES = {"a": (16, False), "b": (20, True), "c": (24, False), "d": (32, True)}  # name: (side, colour)
#: What a finished run's folder holds: every file fit writes, frames.npz gone (timelapse.gif shows them).
FINISHED = set(run_folder.FILES) - {run_folder.FRAMES}


def quick_options(**changes) -> FitOptions:
    settings = dict(input="", steps=10, model_options={"width": 8, "depth": 1}, device="cpu", quiet=True)
    return FitOptions(**{**settings, **changes})


def make_pictures(folder, broken=True):
    folder.mkdir(parents=True, exist_ok=True)
    for name, (side, colour) in SIZES.items():
        make_picture(folder / f"{name}.png", side, colour=colour)
    if broken:
        (folder / "broken.png").write_bytes(b"this is not a PNG")
    return folder


def comparable(rows):
    """Summary rows without what differs between two runs of the same pictures: the time, and the
    path of the picture, relative to each run's output folder."""
    return [{k: v for k, v in row.items() if k not in ("seconds", "input")} for row in rows]


def run_in_subprocess(*args, **kwargs):
    """``ironlearn ARGS`` as its own process (stderr piped), for the tests that signal it."""
    return subprocess.Popen([sys.executable, "-m", "ironlearn", *map(str, args)], stderr=subprocess.PIPE, text=True,
                            **kwargs)


def unlocked(run) -> bool:
    try:
        with run_folder.RunLock(str(run)):
            return True
    except UsageError:
        return False


# -- inputs -----------------------------------------------------------------------------------
def test_inputs_are_files_folders_and_globs_each_once_with_unique_names(tmp_path):
    make_pictures(tmp_path / "one", broken=False)
    (tmp_path / "one" / "notes.txt").write_text("a folder's .txt files are not pictures")
    (tmp_path / "one" / ".hidden.png").write_bytes(b"")
    (tmp_path / "two").mkdir()
    make_picture(tmp_path / "two" / "a.png", 16)
    (tmp_path / "two" / "a.csv").write_text("x,y,pixel_value\n")
    sources = expand([tmp_path / "one", str(tmp_path / "two" / "*"), tmp_path / "one" / "b.png"])
    assert [s.name for s in sources] == ["a", "b", "c", "d", "a-2", "a-3"]
    assert [os.path.basename(s.path) for s in sources] == ["a.png", "b.png", "c.png", "d.png", "a.csv", "a.png"]
    # A name that is no file is refused before anything starts, as a glob that matches nothing is
    # (it used to fail as a picture, exit 1, after summary.csv was written).
    with pytest.raises(UsageError, match="missing.png: no such file or folder"):
        expand([tmp_path / "one", "missing.png"])
    assert [s.name for s in expand([tmp_path / "two" / "a.png", tmp_path / "one"])][:2] == ["a", "a-2"]


def test_names_never_clash_with_recorded_ones_or_the_files_beside_the_run_folders(tmp_path):
    recorded = {os.path.realpath(tmp_path / "old" / "a.png"): "a"}
    paths = [str(tmp_path / "new" / "a.png"), str(tmp_path / "old" / "a.png"), "summary.csv.png", ".lock.csv"]
    assert unique_names(paths, recorded) == ["a-2", "a", "summary.csv-2", ".lock-2"]
    make_picture(tmp_path / "a.png", 16)
    edited = [{"picture": "../elsewhere", "input": "a.png"}, {"picture": "summary.csv", "input": "a.png"}]
    assert summary.recorded_names(edited, tmp_path) == {}  # an edited summary never names a path out of DIR
    assert summary.recorded_names([{"picture": "a", "input": "a.png"}], tmp_path) == {
        os.path.realpath(tmp_path / "a.png"): "a"}


def test_a_rerun_keeps_each_pictures_folder_name_whatever_was_added(tmp_path, monkeypatch):
    """a.png fitted into R/a; a.jpg added beside it (it sorts first): the rerun leaves a.png's run alone
    and fits a.jpg into R/a-2; the summary records which file has which name, for every later run."""
    pictures = tmp_path / "dir"
    pictures.mkdir()
    make_picture(pictures / "a.png", 16)
    out = tmp_path / "R"
    fit_many([pictures], out, options=quick_options(), log=lambda message: None)
    done_at = (out / "a" / "model.npz").stat().st_mtime_ns

    make_picture(pictures / "a.jpg", 20, colour=True)
    messages = []
    rows = fit_many([pictures], out, options=quick_options(), log=messages.append)
    assert [(r["picture"], r["input"], r["status"]) for r in rows] == [
        ("a-2", os.path.join("..", "dir", "a.jpg"), "done"), ("a", os.path.join("..", "dir", "a.png"), "done")]
    assert "fitting 1 of 2 pictures" in messages[0] and "1 done before" in messages[0], messages
    assert (out / "a" / "model.npz").stat().st_mtime_ns == done_at
    assert read_meta(out / "a-2" / "model.npz")["settings"]["size"] == [20, 20]

    # From another folder, one picture named as a relative path, and a new picture also called a:
    # a.png is still R/a (nothing to do), the newcomer gets a name no recorded picture has.
    make_picture(tmp_path / "a.png", 24)
    monkeypatch.chdir(pictures)
    rows = fit_many(["a.png", tmp_path / "a.png"], out, options=quick_options(), log=messages.append)
    assert [(r["picture"], r["status"]) for r in rows] == [("a", "done"), ("a-3", "done")]
    assert (out / "a" / "model.npz").stat().st_mtime_ns == done_at
    assert [r["picture"] for r in summary.read(out / "summary.csv")] == ["a", "a-2", "a-3"]  # all, first fitted first


def test_a_summary_from_before_inputs_were_recorded_is_fit_manys_own(tmp_path):
    """A summary.csv without the input column (written by an older ironlearn) is recognised, its runs
    are found under the names they had, and the rewritten summary records their inputs."""
    make_picture(tmp_path / "a.png", 16)
    out = tmp_path / "out"
    fit_many([tmp_path / "a.png"], out, options=quick_options(), log=lambda message: None)
    old = [{k: v for k, v in row.items() if k != "input"} for row in summary.read(out / "summary.csv")]
    (out / "summary.csv").write_text(summary.HEADERS[1] + "\n" + "".join(",".join(r.values()) + "\n" for r in old))
    messages = []
    rows = fit_many([tmp_path / "a.png"], out, options=quick_options(), log=messages.append)
    assert "fitting 0 of 1 pictures" in messages[0] and rows[0]["picture"] == "a", messages
    assert summary.read(out / "summary.csv")[0]["input"] == os.path.join("..", "a.png")


@pytest.mark.parametrize("given,expected", [(["empty"], "no pictures in this folder"),
                                            (["nothing-*.png"], "matches no pictures")])
def test_a_folder_or_glob_without_pictures_is_a_usage_error(tmp_path, capsys, monkeypatch, given, expected):
    (tmp_path / "empty").mkdir()
    monkeypatch.chdir(tmp_path)
    code, _, err = run_cli(capsys, "fit-many", *given, "--out", "out", *QUICK)
    assert code == ExitCode.USAGE and expected in err and err.count("\n") == 1, err


@pytest.mark.parametrize("args,expected", [
    (["--address", "auto"], "--address joins a Ray cluster"),
    (["--gpus-per-fit", "1"], "--gpus-per-fit is for --engine ray"),
    (["--resume"], "unrecognized arguments: --resume"),
    (["--width", "0"], "must be at least 1"),
])
def test_options_that_cannot_work_are_one_line_usage_errors(tmp_path, capsys, args, expected):
    make_picture(tmp_path / "a.png", 16)
    code, _, err = run_cli(capsys, "fit-many", tmp_path / "a.png", "--out", tmp_path / "out", *QUICK, *args)
    assert code == ExitCode.USAGE and expected in err and err.count("\n") == 1, err
    assert not (tmp_path / "out" / "a").exists()


def test_a_recursive_glob_enters_no_link_to_a_folder(tmp_path, monkeypatch):
    """``fit-many 'dir/**/*.png'`` over a folder holding two links to ``.`` never ended: glob's
    ``**`` followed them, every path through them a new folder.  The work is bounded by counting
    the folders listed (the old walk passed a thousand at once; this one lists four)."""
    (tmp_path / "loop" / "sub").mkdir(parents=True)
    make_picture(tmp_path / "loop" / "a.png", 16)
    make_picture(tmp_path / "loop" / "sub" / "b.png", 16)
    for link in ("l1", "l2"):
        (tmp_path / "loop" / link).symlink_to(".")
    listed, scandir = [], os.scandir

    def counted(path="."):
        listed.append(path)
        if len(listed) > 1000:
            raise AssertionError(f"walked more than 1000 folders ({path})")
        return scandir(path)

    monkeypatch.setattr(os, "scandir", counted)
    monkeypatch.chdir(tmp_path)
    assert [(s.name, s.path) for s in expand(["loop/**/*.png"])] == [("a", "loop/a.png"), ("b", "loop/sub/b.png")]
    assert [s.name for s in expand(["loop/**"])] == ["a", "b"]  # ** alone: every folder's pictures
    assert [s.path for s in expand([str(tmp_path / "**" / "b.png")])] == [str(tmp_path / "loop" / "sub" / "b.png")]
    assert len(listed) < 30, listed


def test_a_stop_before_any_fit_began_claims_no_checkpoint(tmp_path, capsys, monkeypatch):
    """Ctrl-C during that endless glob said "interrupted; the last checkpoint written is kept": none was."""
    from ironlearn.fitting.many import driver

    def stopped(*args, **kwargs):
        raise KeyboardInterrupt

    make_picture(tmp_path / "a.png", 16)
    make_picture(tmp_path / "b.png", 16)
    pictures = [tmp_path / "a.png", tmp_path / "b.png"]
    monkeypatch.setattr(driver, "expand", stopped)
    code, _, err = run_cli(capsys, "fit-many", *pictures, "--out", tmp_path / "out", *QUICK)
    assert code == ExitCode.INTERRUPTED and err.count("\n") == 1, err
    assert "before any fit began: no checkpoint was written" in err and "kept" not in err
    monkeypatch.undo()
    first = FIT.prepare
    monkeypatch.setattr(FIT, "prepare", lambda source, *args, **kwargs: (
        stopped() if source.name == "b" else first(source, *args, **kwargs)))  # one picture found, none started
    code, _, err = run_cli(capsys, "fit-many", *pictures, "--out", tmp_path / "out", *QUICK)
    assert code == ExitCode.INTERRUPTED and "checkpoint" not in err and "1 not started" in err, err


def test_a_file_name_that_is_not_utf8_is_summarised_and_found_again(tmp_path, capsys):
    """``caf\\xe9.png`` (Latin-1, from an older system) ended fit-many in a UnicodeEncodeError's
    traceback as summary.csv was written; its name goes into the summary as the file's own bytes."""
    pictures = tmp_path / "pics"
    pictures.mkdir()
    make_picture(pictures / "a.png", 16)
    os.rename(pictures / "a.png", os.fsencode(pictures) + b"/caf\xe9.png")
    for fitted in ("1 of 1", "0 of 1"):  # the rerun reads the summary back and finds the picture done
        code, out, err = run_cli(capsys, "fit-many", pictures, "--out", tmp_path / "out", *QUICK)
        assert code == ExitCode.OK and "Traceback" not in err and f"fitting {fitted} pictures" in out + err, err
    assert b"\ncaf\xe9,../pics/caf\xe9.png," in (tmp_path / "out" / "summary.csv").read_bytes()
    assert os.path.isdir(os.fsencode(tmp_path / "out") + b"/caf\xe9")


def test_a_summary_saved_again_by_a_spreadsheet_is_still_fit_manys_own(tmp_path):
    """Excel's "CSV UTF-8" puts a byte order mark first: the summary used to be refused as a user's file."""
    make_picture(tmp_path / "a.png", 16)
    out = tmp_path / "out"
    fit_many([tmp_path / "a.png"], out, options=quick_options(), log=lambda message: None)
    (out / "summary.csv").write_bytes(b"\xef\xbb\xbf" + (out / "summary.csv").read_bytes())
    messages = []
    rows = fit_many([tmp_path / "a.png"], out, options=quick_options(), log=messages.append)
    assert "fitting 0 of 1 pictures" in messages[0] and rows[0]["status"] == "done", messages


@pytest.mark.parametrize("force", [[], ["--force"]])
@pytest.mark.parametrize("theirs", ["a file", "a folder"])
def test_a_summary_csv_fit_many_did_not_write_is_never_replaced(tmp_path, capsys, theirs, force):
    make_picture(tmp_path / "a.png", 16)
    out = tmp_path / "out"
    out.mkdir()
    if theirs == "a file":
        (out / "summary.csv").write_bytes(b"name,score\nalice,3\n")
    else:
        (out / "summary.csv").mkdir()
    before = {p.name: p.read_bytes() if p.is_file() else None for p in out.iterdir()}
    code, _, err = run_cli(capsys, "fit-many", tmp_path / "a.png", "--out", out, *QUICK, *force)
    assert code == ExitCode.USAGE and err.count("\n") == 1, err
    assert "is not a summary that fit-many wrote" in err and "not even with --force" in err
    assert {p.name: p.read_bytes() if p.is_file() else None for p in out.iterdir()} == before  # no .lock, no run


def test_missing_ray_is_one_clear_line(tmp_path, capsys, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # import ray -> ImportError
    make_picture(tmp_path / "a.png", 16)
    code, _, err = run_cli(capsys, "fit-many", tmp_path / "a.png", "--out", tmp_path / "out", "--engine", "ray",
                           *QUICK)
    assert code == ExitCode.USAGE and err.count("\n") == 1, err
    assert "pip install 'ironlearn[ray]'" in err and "Traceback" not in err


def test_missing_cupy_with_local_workers_is_one_line_before_anything_starts(tmp_path, capsys, monkeypatch):
    """It used to come per picture, exit 1, after summary.csv was written."""
    monkeypatch.setitem(sys.modules, "cupy", None)
    monkeypatch.setattr(backend_module, "_cupy", None)
    make_picture(tmp_path / "a.png", 16)
    args = [a for a in QUICK if a not in ("--device", "cpu")]
    code, _, err = run_cli(capsys, "fit-many", tmp_path / "a.png", "--out", tmp_path / "out", *args, "--device", "cuda")
    assert code == ExitCode.USAGE and err.count("\n") == 1 and "needs CuPy" in err, err
    assert not (tmp_path / "out").exists()


def test_fitting_the_output_folder_itself_never_takes_its_summary_for_a_picture(tmp_path, capsys):
    make_picture(tmp_path / "a.png", 16)
    for _ in range(2):
        assert run_cli(capsys, "fit-many", tmp_path, "--out", tmp_path, *QUICK)[0] == ExitCode.OK
    rows = list(csv.DictReader(open(tmp_path / "summary.csv")))
    assert [(row["picture"], row["status"]) for row in rows] == [("a", "done")]


def test_workers_get_their_share_of_threads_in_their_environment(monkeypatch):
    env = worker_environment(3)
    assert all(env[name] == "3" for name in THREAD_VARIABLES)
    found = subprocess.run([sys.executable, "-c", "import os, numpy; print(os.environ['OPENBLAS_NUM_THREADS'])"],
                           env=env, capture_output=True, text=True, check=True).stdout
    assert found.strip() == "3"
    # Installed in site-packages (not a source tree), ironlearn needs no PYTHONPATH, which would put
    # site-packages before the standard library.
    import ironlearn

    monkeypatch.delenv("PYTHONPATH", raising=False)
    monkeypatch.setattr("site.getsitepackages", lambda: [os.path.dirname(os.path.dirname(ironlearn.__file__))])
    assert "PYTHONPATH" not in worker_environment(1)


# -- the local engine -------------------------------------------------------------------------
@pytest.fixture(scope="module")
def local_run(tmp_path_factory):
    """fit-many over 4 pictures and a broken file, 2 workers, through the command."""
    base = tmp_path_factory.mktemp("many")
    pictures = make_pictures(base / "pictures")
    from ironlearn.cli import main

    code = main(["fit-many", str(pictures), "--out", str(base / "out"), "--workers", "2", *QUICK])
    return base, code


def test_local_engine_fits_every_picture_and_reports_the_broken_one(local_run, capsys):
    base, code = local_run
    assert code == ExitCode.FAILED
    out = base / "out"
    rows = summary.read(out / "summary.csv")
    assert tuple(rows[0]) == COLUMNS
    assert [r["picture"] for r in rows] == ["a", "b", "broken", "c", "d"]
    broken = rows[2]
    assert broken["status"] == "failed" and "not a picture ironlearn reads" in broken["error"]
    assert broken["psnr_db"] == "" and not (out / "broken").exists()
    for row in rows[:2] + rows[3:]:
        side, colour = SIZES[row["picture"]]
        folder = out / row["picture"]
        assert FINISHED <= set(os.listdir(folder)), row
        assert not [n for n in os.listdir(folder) if n.endswith(".tmp")]
        metrics = json.loads((folder / "metrics.json").read_text())
        assert (row["width"], row["height"], row["mode"]) == (str(side), str(side), "rgb" if colour else "gray")
        assert (row["status"], row["error"], row["model"], row["steps"]) == ("done", "", "hashgrid", "10")
        assert float(row["psnr_db"]) == metrics["psnr_db"] and int(row["params"]) == metrics["params"]
        assert float(row["seconds"]) == metrics["seconds"] and row["accuracy"] == ""


def test_a_rerun_skips_done_pictures_and_force_redoes_them(local_run, tmp_path, capsys):
    base, _ = local_run
    out = tmp_path / "out"
    shutil.copytree(base / "out", out)
    before = {p.name: (p / "model.npz").stat().st_mtime_ns for p in out.iterdir() if p.is_dir()}
    code, _, err = run_cli(capsys, "fit-many", base / "pictures", "--out", out, "--workers", "2", *QUICK)
    assert code == ExitCode.FAILED and "fitting 1 of 5 pictures" in err and "4 done before" in err, err
    assert {p.name: (p / "model.npz").stat().st_mtime_ns for p in out.iterdir() if p.is_dir()} == before
    assert comparable(summary.read(out / "summary.csv")) == \
        comparable(summary.read(base / "out" / "summary.csv"))
    assert "broken: pictures" not in err and err.strip().splitlines()[-1].startswith("  broken: ")

    code, _, err = run_cli(capsys, "fit-many", base / "pictures" / "a.png", "--out", out, "--force", *QUICK)
    assert code == ExitCode.OK and "fitting 1 of 1 pictures" in err
    assert (out / "a" / "model.npz").stat().st_mtime_ns != before["a"]


def test_a_rerun_with_more_steps_resumes_the_done_runs(local_run, tmp_path):
    base, _ = local_run
    out = tmp_path / "out"
    shutil.copytree(base / "out", out)
    rows = fit_many([base / "pictures" / "a.png"], out, options=quick_options(steps=20), log=lambda m: None)
    assert rows[0]["status"] == "done" and rows[0]["steps"] == 20
    history = (out / "a" / "history.csv").read_text().splitlines()
    assert history[1].split(",")[0] == "1"  # the first 10 steps' rows are still there: it went on, not over


def fit_many_in_a_thread(*args, **kwargs):
    result, messages = {}, []

    def target():
        try:
            result["rows"] = fit_many(*args, log=messages.append, **kwargs)
        except BaseException as exc:  # noqa: BLE001  (shown by the test)
            result["error"] = exc
    thread = threading.Thread(target=target)
    thread.start()
    return thread, result, messages


linux_only = pytest.mark.skipif(not os.path.isdir("/proc"), reason="finds worker processes through Linux's /proc")


@linux_only
def test_a_killed_worker_fails_only_its_picture_which_is_retried_once(tmp_path):
    pictures = [make_picture(tmp_path / f"{name}.png", 16) for name in ("one", "two")]
    out = tmp_path / "out"
    options = quick_options(steps=600, checkpoint_every=20)
    thread, result, messages = fit_many_in_a_thread(pictures, out, options=options, workers=2)
    wait_for(lambda: any((out / n / "checkpoint.npz").exists() for n in ("one", "two")) and find_workers(),
             what="a worker with a checkpoint")
    os.kill(find_workers()[0], signal.SIGKILL)
    thread.join(patience(120))
    assert not thread.is_alive() and "error" not in result, result
    assert [row["status"] for row in result["rows"]] == ["done", "done"], result["rows"]
    assert [row["steps"] for row in result["rows"]] == [600, 600]
    retried = [m for m in messages if "its worker process died (killed by SIGKILL); trying it once more" in m]
    assert len(retried) == 1, messages


@linux_only
def test_a_picture_whose_worker_dies_twice_fails_with_that_reason(tmp_path):
    picture = make_picture(tmp_path / "one.png", 16)
    thread, result, messages = fit_many_in_a_thread([picture], tmp_path / "out", options=quick_options(steps=10**6),
                                                    workers=1)
    killed = []
    for _ in range(2):
        wait_for(lambda: [pid for pid in find_workers() if pid not in killed], what="a worker")
        pid = [pid for pid in find_workers() if pid not in killed][0]
        os.kill(pid, signal.SIGKILL)
        killed.append(pid)
    thread.join(patience(60))
    assert not thread.is_alive() and "error" not in result, result
    row = result["rows"][0]
    assert row["status"] == "failed", row
    assert row["error"] == "its worker process died twice (last: killed by SIGKILL)"


def fitting(picture_name):
    """``(process, run folder)`` of the fit of ``picture_name`` once it has saved a checkpoint, else None
    (Linux /proc): the process holds the run folder's lock, DIR/<name>/.lock for a local worker, and for
    a Ray task that of a temporary folder beside its copy of the picture. Only this process's descendants
    are looked at: a test running beside this one may fit a picture of the same name."""
    for pid in children_of(os.getpid()):
        try:
            opened = [os.readlink(f"/proc/{pid}/fd/{fd}") for fd in os.listdir(f"/proc/{pid}/fd")]
        except OSError:
            continue
        for run in [os.path.dirname(path) for path in opened if os.path.basename(path) == run_folder.LOCK]:
            named = os.path.basename(run) == picture_name or os.path.isfile(
                os.path.join(os.path.dirname(run), f"{picture_name}.png"))
            if not (named and os.path.isfile(os.path.join(run, "checkpoint.npz"))):
                continue
            owner = run_folder.holder(run)  # the fit's own process, not one that inherited the lock's file
            return (int(owner) if owner and owner.isdigit() else int(pid)), run
    return None


def checkpoint_step(run) -> int:
    return read_meta(os.path.join(run, "checkpoint.npz"))["step"]


@linux_only
def test_sigterm_to_a_worker_saves_its_fit_which_is_listed_as_interrupted(tmp_path):
    """SIGTERM to the worker fitting b (a user's kill, a memory watchdog): b saves its checkpoint where it
    stopped and is listed as interrupted, not failed or fitted again; that worker exits, and a new one fits a."""
    make_picture(tmp_path / "b.png", 128)
    make_picture(tmp_path / "a.png", 16)
    out = tmp_path / "out"
    thread, result, messages = fit_many_in_a_thread([tmp_path / "b.png", tmp_path / "a.png"], out, workers=1,
                                                    options=quick_options(steps=2000, checkpoint_every=10))
    worker, _ = wait_for(lambda: fitting("b"), what="b training")
    os.kill(worker, signal.SIGTERM)
    wait_for(lambda: worker not in find_workers(), timeout=20, what="the worker to exit")
    thread.join(patience(60))
    assert not thread.is_alive() and "error" not in result, result
    b, a = result["rows"]
    assert a["status"] == "done" and b["status"] == "interrupted", result["rows"]
    step = checkpoint_step(out / "b")
    assert b["error"] == f"stopped by SIGTERM at step {step:,}; checkpoint saved" and step < 2000
    assert not (out / "b" / "model.npz").exists() and not [m for m in messages if "died" in m], messages


@linux_only
@pytest.mark.parametrize("how", [signal.SIGINT, signal.SIGTERM, signal.SIGKILL])
def test_a_stopped_driver_keeps_finished_runs_and_a_rerun_resumes_the_others(tmp_path, how):
    """Ctrl-C (SIGINT), SIGTERM or SIGKILL to the driver midway: the picture done is kept, the one running
    saves a checkpoint (on SIGKILL its worker sees the driver gone), and the same command again finishes the job."""
    make_picture(tmp_path / "a.png", 16)  # done first: b has 36 times its pixels, still training when stopped
    make_picture(tmp_path / "b.png", 96)
    out = tmp_path / "out"
    args = ["fit-many", tmp_path / "a.png", tmp_path / "b.png", "--out", out, "--workers", "2", "--steps", "600",
            "--checkpoint-every", "10", *QUICK[2:]]
    driver = run_in_subprocess(*args)

    def a_reported_done() -> bool:  # by the driver (its summary), not only by a's worker (a's files)
        rows = summary.read(out / "summary.csv") if (out / "summary.csv").exists() else []
        return any(r["picture"] == "a" and r["status"] == "done" for r in rows)

    # Waiting for a's files alone raced the driver: a signal between a's worker writing them and
    # reporting back found "0 done, 2 stopped" (seen once in CI).
    wait_for(lambda: a_reported_done() and (out / "b" / "checkpoint.npz").exists(), what="a done and b under way")
    done_at = (out / "a" / "model.npz").stat().st_mtime_ns
    driver.send_signal(how)
    _, err = driver.communicate(timeout=patience(60))
    if how != signal.SIGKILL:
        code, said = {signal.SIGINT: (ExitCode.INTERRUPTED, "interrupted"),
                      signal.SIGTERM: (ExitCode.TERMINATED, "stopped by SIGTERM")}[how]
        assert driver.returncode == code, err
        assert f"{said}: 1 done, 0 failed, 1 stopped" in err and "Traceback" not in err, err
        rows = summary.read(out / "summary.csv")
        assert [(r["picture"], r["status"]) for r in rows] == [("a", "done"), ("b", "interrupted")], rows
        assert rows[1]["error"].startswith("stopped at step ") and "checkpoint saved" in rows[1]["error"]
    else:
        assert driver.returncode == -signal.SIGKILL
    wait_for(lambda: unlocked(out / "b"), what="b's worker to let go of its run folder")
    stopped_at = read_meta(out / "b" / "checkpoint.npz")["step"]
    assert 0 < stopped_at < 600 and not (out / "b" / "model.npz").exists()

    messages = []
    rows = fit_many([tmp_path / "a.png", tmp_path / "b.png"], out, options=quick_options(steps=600,
                    checkpoint_every=10), workers=2, log=messages.append)
    assert "fitting 1 of 2 pictures" in messages[0] and "(1 done before, 1 resuming)" in messages[0], messages
    assert [(r["picture"], r["status"], r["steps"]) for r in rows] == [("a", "done", 600), ("b", "done", 600)]
    assert summary.read(out / "summary.csv")[1]["status"] == "done"
    assert (out / "a" / "model.npz").stat().st_mtime_ns == done_at
    assert int((out / "b" / "history.csv").read_text().splitlines()[1].split(",")[0]) < stopped_at  # went on


# -- the Ray engine ---------------------------------------------------------------------------
def test_the_ray_task_fits_in_a_temporary_folder_and_sends_the_files_back(tmp_path, monkeypatch):
    """What runs on a Ray worker, called directly: it writes nothing into the output folder (the driver
    does), leaves no temporary folder, and a resume carries the checkpoint both ways."""
    from ironlearn.fitting.many.remote import run_shipped, ship

    worker_tmp = tmp_path / "worker-tmp"
    worker_tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(worker_tmp))
    out = tmp_path / "out"
    source = Source("a", str(make_picture(tmp_path / "a.png", 16)))
    task = prepare(source, str(out), quick_options(), force=False)
    outcome, files = run_shipped(ship(task))
    assert outcome.status == "done" and set(files) == FINISHED
    assert not out.exists() and os.listdir(worker_tmp) == []
    FIT.land(task.options, files)
    assert json.loads((out / "a" / "metrics.json").read_text()) == outcome.metrics
    assert set(os.listdir(out / "a")) == FINISHED

    longer = prepare(source, str(out), quick_options(steps=20), force=False)
    # A finished run keeps no frames.npz, and its checkpoint keeps its model in model.npz.
    assert longer.options.resume and set(ship(longer).files) == {"checkpoint.npz", "model.npz", "history.csv"}
    outcome, files = run_shipped(ship(longer))
    assert outcome.status == "done" and outcome.metrics["steps"] == 20 and os.listdir(worker_tmp) == []

    (tmp_path / "bad.png").write_bytes(b"not a picture")
    bad = prepare(Source("bad", str(tmp_path / "bad.png")), str(out), quick_options(), force=False)
    outcome, files = run_shipped(ship(bad))
    assert outcome.status == "failed" and outcome.error.startswith(f"{tmp_path / 'bad.png'} is not a picture ironlearn reads")
    assert files == {} and not (out / "bad").exists()


# Tests that use Ray run on one pytest-xdist worker, one after another: two Ray instances at once on
# two cores would starve each other's fits.
one_ray_at_a_time = pytest.mark.xdist_group("ray")


@one_ray_at_a_time
def test_the_ray_engine_gives_the_same_summary(local_run, ray_instance, tmp_path):
    base, _ = local_run
    out = tmp_path / "out"
    messages = []
    rows = fit_many([base / "pictures"], out, options=quick_options(), engine="ray", log=messages.append)
    assert "up to 2 pictures at once, 1 CPU each" in messages[0], messages
    assert comparable(summary.read(out / "summary.csv")) == \
        comparable(summary.read(base / "out" / "summary.csv"))
    assert [r["status"] for r in rows] == ["done", "done", "failed", "done", "done"]
    for row in rows:
        if row["status"] == "done":  # written by the driver alone: a fit in this folder would have left .lock
            assert set(os.listdir(out / row["picture"])) == FINISHED


@one_ray_at_a_time
@linux_only
def test_sigterm_to_a_ray_task_saves_its_fit_which_goes_on_from_there(ray_instance, tmp_path):
    """SIGTERM to the Ray worker process fitting b (its node preempted or drained, more often than a user's
    kill): the fit saves in its temporary folder, the checkpoint comes back into DIR/b, and the task is sent
    once more, resuming from it rather than starting over; b ends done."""
    make_picture(tmp_path / "a.png", 16)
    make_picture(tmp_path / "b.png", 128)  # steps long enough that the resumed attempt is seen before it saves again
    out = tmp_path / "out"
    thread, result, messages = fit_many_in_a_thread([tmp_path / "a.png", tmp_path / "b.png"], out, engine="ray",
                                                    options=quick_options(steps=600, checkpoint_every=10))
    worker, first = wait_for(lambda: (found := fitting("b")) and checkpoint_step(found[1]) >= 100 and found,
                             what="b trained 100 steps")
    os.kill(worker, signal.SIGTERM)
    again = wait_for(lambda: (found := fitting("b")) and found[1] != first and found[1], what="b sent again")
    # The first checkpoint seen in the new attempt's folder: the one that came back, or one saved
    # 10 or 20 steps on from it when the resumed attempt was quicker than the test's look.
    resumed_at = checkpoint_step(again)
    thread.join(patience(90))
    assert not thread.is_alive() and "error" not in result, result
    assert [(r["status"], r["steps"]) for r in result["rows"]] == [("done", 600), ("done", 600)], result["rows"]
    stopped = [m for m in messages if m.startswith("b: its Ray task was stopped (stopped by SIGTERM at step ")]
    assert len(stopped) == 1 and stopped[0].endswith("; checkpoint saved); going on once more"), messages
    stopped_at = int(stopped[0].split("at step ")[1].split(";")[0].replace(",", ""))
    assert 100 <= stopped_at <= resumed_at <= stopped_at + 50  # started over, it would be at step 10 or 20


@one_ray_at_a_time
@linux_only
def test_sigterm_to_the_ray_driver_stops_like_ctrl_c(ray_instance, tmp_path):
    """SIGTERM to the command on a Ray cluster (here the module's instance): the running task is cancelled,
    saves its checkpoint, which lands in DIR/b; the summary is written and the exit code is 143."""
    make_picture(tmp_path / "a.png", 16)
    make_picture(tmp_path / "b.png", 128)
    out = tmp_path / "out"
    driver = run_in_subprocess("fit-many", tmp_path / "a.png", tmp_path / "b.png", "--out", out, "--engine", "ray",
                               "--address", ray_instance.get_runtime_context().gcs_address, "--steps", "2000",
                               "--checkpoint-every", "10", *QUICK[2:])
    wait_for(lambda: (out / "a" / "metrics.json").exists() and fitting("b"), what="a done and b training")
    driver.send_signal(signal.SIGTERM)
    _, err = driver.communicate(timeout=patience(60))
    assert driver.returncode == ExitCode.TERMINATED, err
    assert "stopped by SIGTERM: 1 done, 0 failed, 1 stopped" in err and "Traceback" not in err, err
    a, b = summary.read(out / "summary.csv")
    assert (a["status"], b["status"]) == ("done", "interrupted"), (a, b)
    assert b["error"] == f"stopped at step {checkpoint_step(out / 'b'):,}; checkpoint saved"


@one_ray_at_a_time
@pytest.mark.parametrize("engine", ["local", "ray"])
def test_a_run_folder_holding_the_users_files_is_not_written_into(tmp_path, request, engine):
    """DIR/a holds a user's files and no run: the picture fails in fit's words and nothing there changes,
    on Ray too, where the driver writes the files a task sends back."""
    if engine == "ray":
        request.getfixturevalue("ray_instance")
    make_picture(tmp_path / "a.png", 16)
    (tmp_path / "out" / "a").mkdir(parents=True)
    (tmp_path / "out" / "a" / "reconstruction.png").write_bytes(b"the user's own")
    rows = fit_many([tmp_path / "a.png"], tmp_path / "out", options=quick_options(), engine=engine,
                    log=lambda message: None)
    assert rows[0]["status"] == "failed" and "is not empty and holds no run" in rows[0]["error"], rows
    assert os.listdir(tmp_path / "out" / "a") == ["reconstruction.png"]
    assert (tmp_path / "out" / "a" / "reconstruction.png").read_bytes() == b"the user's own"


def test_a_picture_the_ray_driver_cannot_read_fails_in_the_words_of_fit(tmp_path):
    from ironlearn.fitting.many.remote import unreadable
    from ironlearn.image import InputError, load_picture

    for path in (tmp_path / "missing.png", tmp_path):
        with pytest.raises(InputError) as said:
            load_picture(path)
        with pytest.raises(OSError) as failed:
            open(path, "rb")
        assert unreadable(str(path), failed.value) == str(said.value)
