"""Nothing the user had is lost: what a fit may write over, and what it must leave alone.

The rules (fitting/folder.py): a fit writes only into an empty folder or over a run of its own;
anything else needs --force, and even --force replaces only the files a fit writes, never the
picture it fits.  A forced fit clears the old run's outputs before it trains, so that a kill
cannot leave a mix of two runs.  Each data-loss case asserts every file byte for byte.
"""

import os
import signal
import subprocess
import sys

import pytest

from helpers import make_picture, run_cli
from ironlearn.train import load_checkpoint

QUICK = ["--quiet", "--device", "cpu", "--width", "16", "--depth", "1"]
OUTPUTS = ("reconstruction.png", "model.npz", "metrics.json", "history.csv", "loss.png", "timelapse.gif",
           "frames.npz", "checkpoint.npz")


def snapshot(folder):
    return {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}


def assert_refused(capsys, args, message, *folders):
    before = {p: data for folder in folders for p, data in snapshot(folder).items()}
    code, _, err = run_cli(capsys, *args)
    assert code == 2, err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert {p: p.read_bytes() for p in before} == before
    return err


@pytest.mark.parametrize("name", OUTPUTS[:-1])  # checkpoint.npz: "already holds a run", tested in test_cli
def test_a_user_file_named_like_an_output_is_never_replaced(tmp_path, capsys, name):
    picture = make_picture(tmp_path / "pic.png")
    out = tmp_path / "d"
    out.mkdir()
    (out / name).write_bytes(b"the user's own file")
    assert_refused(capsys, ["fit", picture, "--out", out, "--steps", "5", *QUICK], "is not empty and holds no run",
                   tmp_path)


def test_the_input_picture_is_never_written_over_even_with_force(tmp_path, capsys):
    out = tmp_path / "d"
    out.mkdir()
    picture = make_picture(out / "reconstruction.png")  # the probe: the picture where an output goes
    for extra in ([], ["--force"]):
        assert_refused(capsys, ["fit", picture, "--out", out, "--steps", "5", *QUICK, *extra],
                       "is where the run writes its reconstruction.png", tmp_path)


def test_force_writes_beside_other_files_and_keeps_them(tmp_path, capsys):
    picture = make_picture(tmp_path / "pic.png")
    out = tmp_path / "d"
    out.mkdir()
    (out / "notes.txt").write_text("mine")
    (out / "metrics.json").write_text("mine too")
    code, _, err = run_cli(capsys, "fit", picture, "--out", out, "--steps", "5", *QUICK, "--force")
    assert code == 0, err
    assert (out / "notes.txt").read_text() == "mine"  # a name a fit does not write: kept
    assert (out / "metrics.json").read_text() != "mine too"  # a fit's own name: --force replaces it
    assert load_checkpoint(out / "model.npz").step == 5


def test_an_empty_folder_or_one_with_only_housekeeping_needs_no_force(tmp_path, capsys):
    picture = make_picture(tmp_path / "pic.png")
    out = tmp_path / "d"
    out.mkdir()
    (out / ".lock").write_text("12345")  # a fit killed before its first checkpoint
    (out / ".checkpoint.npz.abc123.tmp").write_bytes(b"half")
    code, _, err = run_cli(capsys, "fit", picture, "--out", out, "--steps", "5", *QUICK)
    assert code == 0, err
    assert not (out / ".checkpoint.npz.abc123.tmp").exists()


@pytest.mark.parametrize("kind", ["text", "bytes", "link", "folder", "fifo"])
def test_a_users_file_named_like_the_lock_is_left_alone(tmp_path, capsys, kind):
    """``.lock`` is ironlearn's only when it holds a process id or nothing: a user's notes (in any
    bytes), a link (to anything), a folder or a named pipe of that name is neither truncated, nor
    followed, nor removed, nor waited on."""
    from ironlearn.fitting.folder import holder

    picture = make_picture(tmp_path / "pic.png")
    out = tmp_path / "run"
    out.mkdir()
    mine = tmp_path / "mine.txt"
    mine.write_text("my notes")
    if kind == "text":
        (out / ".lock").write_text("my notes")
    elif kind == "bytes":
        (out / ".lock").write_bytes(b"\xff\xfe my notes")  # used to end in a UnicodeDecodeError
    elif kind == "fifo":
        os.mkfifo(out / ".lock")  # fit-many's wait for a lock used to block on it forever
    elif kind == "link":
        (out / ".lock").symlink_to(mine)
    else:
        (out / ".lock").mkdir()
        (out / ".lock" / "inside.txt").write_text("my notes")
    assert holder(str(out)) is None
    assert_refused(capsys, ["fit", picture, "--out", out, "--steps", "5", *QUICK, "--force"],
                   ".lock", tmp_path)
    assert os.path.lexists(out / ".lock") and mine.read_text() == "my notes"


def test_a_forced_fit_removes_the_old_runs_outputs_before_it_trains(tmp_path):
    """A forced fit killed before its first checkpoint must not leave the old run's model, metrics and
    time-lapse for render and view to show as if they were the new run's."""
    picture = make_picture(tmp_path / "pic.png")
    out = tmp_path / "run"
    old = subprocess.run([sys.executable, "-m", "ironlearn", "fit", str(picture), "--out", str(out), "--steps", "5",
                          *QUICK], capture_output=True, text=True)
    assert old.returncode == 0, old.stderr
    (out / "notes.txt").write_text("mine")
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "ironlearn", "fit", str(picture), "--out", str(out), "--force",
                             "--steps", "1000000", "--checkpoint-every", "1000000", "--device", "cpu", "--width", "16",
                             "--depth", "1"], stderr=subprocess.PIPE, text=True, env=env)
    try:
        assert proc.stderr.readline().startswith("fitting")  # training is about to start
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    finally:
        proc.kill()
    left = sorted(p.name for p in out.iterdir() if not p.name.startswith("."))
    assert left == ["notes.txt"], left  # the old run is gone, the user's file stays


def test_demo_replaces_an_earlier_demo_but_not_a_real_run(tmp_path, capsys):
    out = tmp_path / "demo"
    assert run_cli(capsys, "demo", "--out", out, "--steps", "5", "--quiet", "--device", "cpu")[0] == 0
    code, _, err = run_cli(capsys, "demo", "--out", out, "--steps", "6", "--quiet", "--device", "cpu")
    assert code == 0, err  # an earlier demo is the demo's to replace
    assert load_checkpoint(out / "model.npz").step == 6

    picture = make_picture(tmp_path / "pic.png")
    run = tmp_path / "run"
    assert run_cli(capsys, "fit", picture, "--out", run, "--steps", "5", *QUICK)[0] == 0
    assert_refused(capsys, ["demo", "--out", run, "--steps", "5", "--quiet"], "holds a run that is not a demo",
                   tmp_path)
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "render_4x.png").write_bytes(b"the user's own file")
    assert_refused(capsys, ["demo", "--out", mine, "--steps", "5", "--quiet"], "is not empty", tmp_path)


@pytest.mark.parametrize("how", ["chmod", "patched"])
def test_resume_in_a_folder_it_cannot_write_fails_before_training(tmp_path, capsys, monkeypatch, how):
    picture = make_picture(tmp_path / "pic.png")
    out = tmp_path / "run"
    assert run_cli(capsys, "fit", picture, "--out", out, "--steps", "5", *QUICK)[0] == 0
    if how == "chmod":
        if os.geteuid() == 0:
            pytest.skip("root may write anywhere (the patched case stands in)")
        os.chmod(out, 0o555)
    else:
        def denied(*args, **kwargs):
            raise PermissionError(13, "Permission denied")
        monkeypatch.setattr("ironlearn.fitting.folder.tempfile.mkstemp", denied)
    try:
        assert_refused(capsys, ["fit", picture, "--out", out, "--resume", "--steps", "50", "--quiet"],
                       "cannot write in", tmp_path)
    finally:
        os.chmod(out, 0o755)
    assert load_checkpoint(out / "checkpoint.npz").step == 5  # nothing was trained for nothing


def test_the_page_ironlearn_made_in_a_run_is_ironlearns_to_rewrite(tmp_path, capsys):
    """`view RUN` then `view RUN --serve` (the README's next line) failed with "already exists", and a
    resume or a forced fit left a page of the old model; a page at a path the user named stays theirs."""
    picture = make_picture(tmp_path / "pic.png")
    out = tmp_path / "run"
    assert run_cli(capsys, "fit", picture, "--out", out, "--steps", "5", *QUICK)[0] == 0
    assert run_cli(capsys, "view", out)[0] == 0
    first = (out / "viewer.html").read_bytes()
    assert run_cli(capsys, "view", out)[0] == 0  # again, without --force
    assert run_cli(capsys, "fit", picture, "--out", out, "--resume", "--steps", "8", "--quiet")[0] == 0
    assert (out / "viewer.html").read_bytes() != first  # rewritten for the resumed model
    assert run_cli(capsys, "view", out, "-o", tmp_path / "mine.html")[0] == 0
    assert_refused(capsys, ["view", out, "-o", tmp_path / "mine.html"], "already exists", tmp_path)
    (out / "viewer.html").write_text("<html>my own notes</html>")  # a user's file under that name
    assert_refused(capsys, ["view", out], "already exists", tmp_path)
    code, _, err = run_cli(capsys, "fit", picture, "--out", out, "--force", "--steps", "5", *QUICK)
    assert code == 0 and (out / "viewer.html").read_text() == "<html>my own notes</html>", err


def test_a_forced_fit_removes_the_old_runs_page(tmp_path, capsys):
    picture = make_picture(tmp_path / "pic.png")
    out = tmp_path / "run"
    assert run_cli(capsys, "fit", picture, "--out", out, "--steps", "5", *QUICK)[0] == 0
    assert run_cli(capsys, "view", out)[0] == 0
    assert run_cli(capsys, "fit", picture, "--out", out, "--force", "--steps", "5", *QUICK)[0] == 0
    assert not (out / "viewer.html").exists()


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A picture, its pixel CSV, a fitted model and a compressed file, to give each command as input."""
    folder = tmp_path_factory.mktemp("made")
    picture = make_picture(folder / "pic.png", colour=True)
    for args in (["to-csv", picture, "-o", folder / "pic.csv"],
                 ["fit", picture, "--out", folder / "run", "--steps", "5", *QUICK],
                 ["compress", picture, "-o", folder / "pic.ilc", "--seconds", "0.2"]):
        assert subprocess.run([sys.executable, "-m", "ironlearn", *map(str, args)], capture_output=True).returncode == 0
    return folder


# Each command, given an input under a name it could also write (the command's own output type).
SAME_AS_INPUT = {
    "encode": lambda f: ("pic.png", ["to-csv", f / "x", "-o", f / "x"]),
    "decode": lambda f: ("pic.csv", ["from-csv", f / "x", "-o", f / "x"]),
    "compress": lambda f: ("pic.png", ["compress", f / "x", "-o", f / "x", "--seconds", "0.2"]),
    "decompress": lambda f: ("pic.ilc", ["decompress", f / "x.png", "-o", f / "x.png"]),
    "render": lambda f: ("run/model.npz", ["render", f / "x.png", "--size", "8", "-o", f / "x.png"]),
    "view": lambda f: ("run/model.npz", ["view", f / "x.html", "-o", f / "x.html"]),
    "view, its default page": lambda f: ("run/model.npz", ["view", f / "viewer.html"]),
}


@pytest.mark.parametrize("command", SAME_AS_INPUT)
def test_no_command_writes_over_its_own_input_even_with_force(made, tmp_path, capsys, command):
    source, args = SAME_AS_INPUT[command](tmp_path)
    name = args[1].name
    (tmp_path / name).write_bytes((made / source).read_bytes())
    assert_refused(capsys, [*args, "--force"], "is the input", tmp_path)


@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_force_never_swaps_a_device_or_pipe_for_a_file(made, tmp_path, capsys, kind):
    """``-o /dev/stdout --force`` used to replace the link /dev/stdout with a plain file."""
    out = tmp_path / "out.csv"
    if kind == "fifo":
        os.mkfifo(out)
    else:
        out.symlink_to(os.devnull)
    assert_refused(capsys, ["to-csv", made / "pic.png", "-o", out, "--force"], "not a plain file", tmp_path)
    assert out.is_fifo() if kind == "fifo" else os.readlink(out) == os.devnull


def test_a_link_to_nowhere_is_an_existing_output(made, tmp_path, capsys):
    out = tmp_path / "x.png"
    out.symlink_to(tmp_path / "nowhere.png")
    assert_refused(capsys, ["render", made / "run", "--size", "8", "-o", out], "already exists", tmp_path)
    assert os.path.islink(out)
    code, _, err = run_cli(capsys, "render", made / "run", "--size", "8", "-o", out, "--force")
    assert code == 0 and out.is_file() and not os.path.islink(out), err  # --force replaces the link itself
    assert not (tmp_path / "nowhere.png").exists()
