import json
import os
import shutil
import signal
import subprocess
import sys
import time

import numpy as np
import pytest
from PIL import Image

from helpers import make_picture, patience, run_cli, stop_after
from ironlearn.backend import Backend, cuda_available
from ironlearn.cli import main
from ironlearn.image import load_picture, psnr, render
from ironlearn.fitting import DEFAULT_PRESET, PRESETS
from ironlearn.train import load_checkpoint

QUICK = ["--quiet", "--device", "cpu", "--width", "32", "--depth", "2"]


@pytest.fixture
def picture(tmp_path):
    return make_picture(tmp_path / "disc.png")


@pytest.fixture(scope="module")
def shared_run(tmp_path_factory):
    """One 150-step fit that the read-only tests share."""
    folder = tmp_path_factory.mktemp("shared")
    out = folder / "run"
    assert main(["fit", str(make_picture(folder / "disc.png")), "--out", str(out), "--steps", "150", *QUICK]) == 0
    return out


@pytest.fixture
def fitted(shared_run, tmp_path, picture):
    """A private copy of the shared run, beside this test's own copy of its picture."""
    out = tmp_path / "run"
    shutil.copytree(shared_run, out)
    return out


def test_fit_writes_every_output(fitted, picture):
    names = {"checkpoint.npz", "model.npz", "reconstruction.png", "timelapse.gif", "loss.png", "history.csv",
             "metrics.json"}
    assert names <= set(os.listdir(fitted))
    assert not [n for n in os.listdir(fitted) if n.endswith(".tmp")]
    with Image.open(fitted / "reconstruction.png") as image:
        assert image.size == (32, 32) and image.mode == "L"
    with Image.open(fitted / "timelapse.gif") as gif:
        assert 2 <= gif.n_frames <= 100 and gif.info["loop"] == 0
    metrics = json.loads((fitted / "metrics.json").read_text())
    assert {"psnr_db", "steps", "seconds", "params", "pixels", "model", "device"} <= set(metrics)
    assert metrics["steps"] == 150 and metrics["pixels"] == 1024 and metrics["device"] == "cpu"
    header = (fitted / "history.csv").read_text().splitlines()[0]
    assert header == "step,loss,psnr,lr,seconds,psnr_of"
    # A picture this small trains whole each step: its loss is the picture's, not an estimate.
    assert (fitted / "history.csv").read_text().splitlines()[1].endswith(",picture")


def test_fit_beats_the_untrained_network(fitted, picture):
    target = load_picture(picture)
    preset = PRESETS[DEFAULT_PRESET]
    options = preset.resolve({"width": 32, "depth": 2}, 32, 32, "gray")
    untrained = preset.build(1, options, np.random.default_rng(0))
    before = psnr(render(untrained, 32, 32, Backend("cpu")), target.pixels)
    after = json.loads((fitted / "metrics.json").read_text())["psnr_db"]
    assert after > before + 10, (before, after)


def test_binary_mode_reports_accuracy(tmp_path, picture, capsys):
    code, _, err = run_cli(capsys, "fit", picture, "--out", tmp_path / "b", "--mode", "binary", "--steps", 60, *QUICK)
    metrics = json.loads((tmp_path / "b" / "metrics.json").read_text())
    assert code == 0 and metrics["accuracy"] > 0.9 and metrics["mode"] == "binary"


def test_fit_reads_a_pixel_csv(tmp_path, picture, capsys):
    assert run_cli(capsys, "to-csv", picture, "-o", tmp_path / "p.csv", "--mode", "binary")[0] == 0
    code, _, err = run_cli(capsys, "fit", tmp_path / "p.csv", "--out", tmp_path / "c", "--steps", 20, *QUICK)
    assert code == 0, err
    assert json.loads((tmp_path / "c" / "metrics.json").read_text())["mode"] == "binary"


def test_rgb_fit_keeps_colours(tmp_path, capsys):
    image = make_picture(tmp_path / "rgb.png", colour=True)
    code, _, err = run_cli(capsys, "fit", image, "--out", tmp_path / "r", "--steps", 40, *QUICK)
    assert code == 0, err
    with Image.open(tmp_path / "r" / "reconstruction.png") as out:
        assert out.mode == "RGB"


def test_existing_run_is_never_overwritten(fitted, picture, capsys):
    before = (fitted / "checkpoint.npz").read_bytes()
    code, _, err = run_cli(capsys, "fit", picture, "--out", fitted, "--steps", 10, *QUICK)
    assert code == 2 and "--resume" in err and "--force" in err
    assert (fitted / "checkpoint.npz").read_bytes() == before
    code, _, err = run_cli(capsys, "fit", picture, "--out", fitted, "--steps", 10, "--force", *QUICK)
    assert code == 0 and load_checkpoint(fitted / "checkpoint.npz").step == 10


def test_resume_continues_the_step_count_and_the_curve(tmp_path, picture, capsys, one_thread_count, monkeypatch):
    straight = tmp_path / "straight"
    assert run_cli(capsys, "fit", picture, "--out", straight, "--steps", 80, "--batch-size", 300, *QUICK)[0] == 0
    # A first leg stopped (as by Ctrl-C) after one step, then resumed to the same total.
    split = tmp_path / "split"
    with monkeypatch.context() as patch:
        stop_after(patch, 1)
        assert run_cli(capsys, "fit", picture, "--out", split, "--steps", 80, "--batch-size", 300, *QUICK)[0] == 130
    assert load_checkpoint(split / "checkpoint.npz").step == 1
    code, _, err = run_cli(capsys, "fit", picture, "--out", split, "--resume", "--steps", 80, "--quiet",
                           "--device", "cpu")
    assert code == 0, err
    a, b = load_checkpoint(straight / "model.npz"), load_checkpoint(split / "model.npz")
    assert b.step == 80
    for name, value in a.model.named_parameters().items():
        np.testing.assert_array_equal(b.model.named_parameters()[name], value, err_msg=name)
    history_a = np.loadtxt(straight / "history.csv", delimiter=",", skiprows=1, usecols=range(5))
    history_b = np.loadtxt(split / "history.csv", delimiter=",", skiprows=1, usecols=range(5))
    np.testing.assert_array_equal(history_b[:, [0, 3]], history_a[:, [0, 3]])  # same steps, same lr curve


def test_resume_refuses_another_image_or_model(fitted, tmp_path, capsys):
    other = make_picture(tmp_path / "other.png", colour=True)
    code, _, err = run_cli(capsys, "fit", other, "--out", fitted, "--resume", "--steps", 200)
    assert code == 2 and "not the image" in err
    code, _, err = run_cli(capsys, "fit", tmp_path / "disc.png", "--out", fitted, "--resume", "--model", "mlp",
                           "--steps", 200)
    assert code == 2 and "different settings" in err and "--model mlp" in err


def test_resume_extends_a_finished_run(fitted, tmp_path, capsys):
    code, _, err = run_cli(capsys, "fit", tmp_path / "disc.png", "--out", fitted, "--resume", "--steps", 170,
                           "--quiet", "--device", "cpu")
    assert code == 0, err
    assert json.loads((fitted / "metrics.json").read_text())["steps"] == 170
    steps = np.loadtxt(fitted / "history.csv", delimiter=",", skiprows=1, usecols=range(5))[:, 0]
    assert steps[-1] == 170 and (np.diff(steps) > 0).all()


def test_a_resume_trains_for_the_time_budget_asked_last(tmp_path, capsys):
    """--time-budget, then --resume --steps, then --resume --time-budget: the budget (a total) is obeyed;
    a budget already spent says so and names both ways on."""
    make_picture(tmp_path / "disc.png", 24)
    run = tmp_path / "run"
    common = ["--out", run, "--quiet", "--device", "cpu"]

    def fit(*args):
        code, _, err = run_cli(capsys, "fit", tmp_path / "disc.png", *common, *args)
        assert code == 0, err
        return json.loads((run / "metrics.json").read_text()), err

    first, _ = fit("--time-budget", 0.5)
    metrics, _ = fit("--resume", "--steps", first["steps"] + 40)
    assert metrics["steps"] == first["steps"] + 40
    metrics, _ = fit("--resume", "--time-budget", metrics["seconds"] + 0.5)
    assert metrics["steps"] > first["steps"] + 40
    seconds, seconds_steps = metrics["seconds"], metrics["steps"]
    metrics, err = fit("--resume", "--time-budget", 0.1)
    assert "s of its 0.1 s budget" in err and "--time-budget above" in err, err  # seconds: rounded in metrics
    # Not trained further; the time is the last checkpoint's, which its own writing is not yet in (ms).
    assert metrics["seconds"] == pytest.approx(seconds, abs=0.05) and metrics["steps"] == seconds_steps


def test_render_any_size_and_aspect(fitted, tmp_path, capsys):
    for size, expected in (("64", (64, 64)), ("50x20", (50, 20))):
        out = tmp_path / f"r{size}.png"
        code, _, err = run_cli(capsys, "render", fitted / "model.npz", "--size", size, "-o", out, "--device", "cpu")
        assert code == 0, err
        with Image.open(out) as image:
            assert image.size == expected


def test_a_run_folder_is_accepted_wherever_a_model_is(fitted, tmp_path, capsys):
    code, out, err = run_cli(capsys, "info", fitted)
    assert code == 0 and "parameters:" in out, err
    code, _, err = run_cli(capsys, "render", fitted, "--scale", "2", "-o", tmp_path / "x2.png", "--device", "cpu")
    assert code == 0, err
    with Image.open(tmp_path / "x2.png") as image:
        assert image.size == (64, 64)  # the 32x32 training size, twice
    assert "aspect" not in err


def test_a_size_that_changes_the_aspect_ratio_is_noted(fitted, tmp_path, capsys):
    code, _, err = run_cli(capsys, "render", fitted, "--size", "50x20", "-o", tmp_path / "wide.png", "--device", "cpu")
    assert code == 0 and "note: 50x20 changes the aspect ratio of the 32x32 picture" in err, err
    code, _, err = run_cli(capsys, "render", fitted, "--size", "48", "-o", tmp_path / "kept.png", "--device", "cpu")
    assert code == 0 and "aspect" not in err, err


def test_info(fitted, capsys):
    code, out, _ = run_cli(capsys, "info", fitted / "model.npz")
    assert code == 0 and "parameters:" in out and "PSNR:" in out and "steps: 150" in out
    code, out, _ = run_cli(capsys, "info", fitted / "checkpoint.npz", "--json")
    assert json.loads(out)["step"] == 150


@pytest.mark.parametrize("there, back", [("to-csv", "from-csv"), ("encode", "decode")], ids=["names", "old-names"])
def test_to_csv_and_back_round_trip(tmp_path, picture, capsys, there, back):
    """The original project's names, encode and decode, still work (aliases): only the help shows the new ones."""
    assert run_cli(capsys, there, picture, "-o", tmp_path / "p.csv")[0] == 0
    assert (tmp_path / "p.csv").read_text().startswith("x,y,pixel_value\n0,0,")
    assert run_cli(capsys, back, tmp_path / "p.csv", "-o", tmp_path / "back.png")[0] == 0
    with Image.open(picture) as a, Image.open(tmp_path / "back.png") as b:
        np.testing.assert_array_equal(np.asarray(a), np.asarray(b))


@pytest.mark.parametrize("args,message", [
    (["fit", "nope.png"], "no such file"),
    (["fit", "{empty}"], "empty"),
    (["fit", "{text}"], "not a picture ironlearn reads"),
    (["fit", "{csv}"], "missing column"),
    (["fit", "{picture}", "--steps", "-5"], "--steps"),
    (["fit", "{picture}", "--size", "0"], "size"),
    (["fit", "{picture}", "--model", "resnet"], "--model"),
    (["fit", "{picture}", "--resume", "--force"], "contradict"),
    (["fit", "{picture}", "--out", "{picture}"], "is a file"),
    (["fit", "{picture}", "--out", "{tmp}/dangling"], "is a link to"),  # it said "File exists"
    (["fit", "{run}", "--resume"], "is a run folder, not a picture; resume it with: ironlearn fit "),
    (["fit", "{picture}", "--resume", "--out", "{tmp}/none"], "nothing to resume"),
    (["fit", "{picture}", "--model", "classic", "--width", "64"], "does not apply"),
    (["fit", "{picture}", "--resume", "--start", "random"], "drop --start"),
    (["fit", "{picture}", "--model", "siren", "--depth", "0"], "depth must be at least 1"),  # a linear head: grid only
    (["render", "{picture}", "--size", "70000", "-o", "{tmp}/x.png"], "not a readable ironlearn model or checkpoint"),
    (["render", "{model}", "--size", "70000", "-o", "{tmp}/x.png"], "above the limit"),
    (["render", "{model}", "--size", "8", "-o", "{picture}"], "already exists"),
    (["from-csv", "{csv}", "-o", "{tmp}/d.png"], "missing column"),
    (["info", "{text}"], "not a readable"),
    (["render", "{model}", "--scale", "1e400", "-o", "{tmp}/x.png"], "'1e400' is not a finite number"),  # "above 0"
])
def test_bad_input_exits_2_with_one_line(tmp_path, picture, fitted, capsys, args, message):
    (tmp_path / "empty.png").write_bytes(b"")
    (tmp_path / "text.png").write_text("hello")
    (tmp_path / "bad.csv").write_text("x,y,value\n0,0,1\n")
    (tmp_path / "dangling").symlink_to(tmp_path / "nowhere")
    names = {"empty": tmp_path / "empty.png", "text": tmp_path / "text.png", "csv": tmp_path / "bad.csv",
             "picture": picture, "tmp": tmp_path, "model": fitted / "model.npz", "run": fitted}
    args = [a.format(**names) for a in args]
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    code, _, err = run_cli(capsys, *args)
    assert code == 2
    assert message in err and "Traceback" not in err and err.count("\n") == 1, err
    assert {p: p.read_bytes() for p in before} == before


@pytest.mark.parametrize("signum,code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_sigint_and_sigterm_save_a_resumable_checkpoint(tmp_path, picture, signum, code):
    """SIGTERM is what Ray, Slurm, Kubernetes and timeout send on preemption: it saves as Ctrl-C does."""
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "ironlearn", "fit", str(picture), "--out", str(out),
                             "--steps", "1000000", "--checkpoint-every", "1000000", *QUICK[1:]],
                            stderr=subprocess.PIPE, text=True, env=env)
    try:
        first_line = proc.stderr.readline()  # "fitting ...": training is about to start
        assert first_line.startswith("fitting"), first_line
        time.sleep(1.5)
        proc.send_signal(signum)
        _, err = proc.communicate(timeout=patience(60))
    finally:
        proc.kill()
    assert proc.returncode == code, err
    assert "--resume" in err
    step = load_checkpoint(out / "checkpoint.npz").step
    assert step > 0
    resume = err.strip().splitlines()[-1].split()
    assert resume[:2] == ["ironlearn", "fit"]
    done = subprocess.run([sys.executable, "-m", "ironlearn", *resume[1:], "--steps", str(step + 5), "--quiet"],
                          capture_output=True, text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert load_checkpoint(out / "model.npz").step == step + 5


@pytest.mark.skipif(cuda_available(), reason="a GPU is present")
def test_cuda_without_a_gpu_is_one_line_and_creates_nothing(tmp_path, picture, capsys):
    code, _, err = run_cli(capsys, "fit", picture, "--out", tmp_path / "run", "--device", "cuda")
    assert code == 2 and "device 'cuda' needs CuPy" in err and err.count("\n") == 1
    assert not (tmp_path / "run").exists()


def test_auto_device_falls_back_with_a_notice_only_when_named(tmp_path, picture, capsys):
    """The notice came on every command; it is for users who asked for auto by name."""
    code, _, err = run_cli(capsys, "fit", picture, "--out", tmp_path / "run", "--steps", 5, "--width", "8",
                           "--device", "auto")
    assert code == 0, err
    if not cuda_available():
        assert "running on the CPU" in err.splitlines()[0]
    code, _, err = run_cli(capsys, "fit", picture, "--out", tmp_path / "other", "--steps", 5, "--width", "8")
    assert code == 0 and "device auto" not in err, err

def test_every_command_and_option_explains_itself():
    import argparse

    from ironlearn.cli import build_parser

    commands = build_parser()._subparsers._group_actions[0].choices
    for name, parser in commands.items():
        assert parser.description, name
        for action in parser._actions:
            assert isinstance(action, argparse._HelpAction) or action.help, (name, action.option_strings or action.dest)


def test_render_draws_no_progress_bar_into_a_log(fitted, tmp_path, capsys, monkeypatch):
    """A bar's redraws wrote 8.5 KB of carriage returns for one render into a log: it writes
    plain lines there instead (once the render has taken seconds)."""
    from ironlearn.api import drawing

    asked = []
    real = drawing.save_bands
    monkeypatch.setattr(drawing, "save_bands", lambda *a, **k: asked.append(k["progress"]) or real(*a, **k))
    code, _, err = run_cli(capsys, "render", fitted, "--size", "64", "-o", tmp_path / "r.png", "--device", "cpu")
    assert code == 0 and asked == ["lines"] and "\r" not in err, err  # capsys: stderr is not a terminal


@pytest.mark.parametrize("command,kept", [("fit", "any checkpoint written before is kept"),
                                          ("render", "nothing half-written is left"),
                                          ("compress", "nothing half-written is left")])
def test_an_interrupt_says_what_is_kept_by_the_command_it_stopped(capsys, command, kept):
    """render, decompress and compress write no checkpoint, and their interrupts no longer say so;
    a fit interrupted before its first step has written none either, and is not told it has one."""
    import argparse

    from ironlearn.cli import ExitCode, run

    def interrupted(args):
        raise KeyboardInterrupt

    assert run(argparse.Namespace(command=command, func=interrupted)) == ExitCode.INTERRUPTED
    err = capsys.readouterr().err
    assert err.startswith("interrupted; ") and kept in err and err.count("\n") == 1


@pytest.mark.parametrize("size, hint", [
    ((768, 512), "--scale 4 -o photo-x4.png"),
    ((2048, 2048), "--scale 2 -o photo-x2.png"),
    ((4096, 4096), "--view=-1,-1,0,0 --scale 2 -o photo-corner-x2.png"),  # 4x was a 348 MB PNG
    ((8192, 8192), "--view=-1,-1,-0.5,-0.5 --scale 2"),
])
def test_the_next_render_hint_stays_a_size_worth_writing(size, hint):
    from ironlearn.cli.common import HINT_PIXELS, render_hint
    from ironlearn.image.render import render_size

    line = render_hint("runs/photo", "photo", *size)
    assert hint in line
    scale = float(line.split("--scale ")[1].split()[0])
    view = tuple(map(float, line.split("--view=")[1].split()[0].split(","))) if "--view" in line else None
    width, height = render_size(size, None, scale, view)
    assert width * height <= HINT_PIXELS
