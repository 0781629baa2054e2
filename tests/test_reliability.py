"""Hardening: bad files and options, kills at random moments, a full disk, divergence.

Every bad input must end with one line on stderr naming the problem, exit code 2, no traceback,
and no change to anything the user already had.
"""

import errno
import json
import os
import random
import signal
import struct
import subprocess
import sys
import time
import zlib

import numpy as np
import pytest
from PIL import Image

from helpers import FAST, make_picture, rewrite_meta, run_cli, stop_after
from ironlearn import npz
from ironlearn.train import Trainer, load_checkpoint

SPOKEN = ["--device", "cpu", "--progress", "none", "--width", "16", "--depth", "1"]  # notes, but no progress


def png_with_header(path, width, height):
    """A PNG whose header declares width x height, with almost no pixel data."""
    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    ihdr = struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0)
    path.write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", ihdr) + chunk(b"IDAT", zlib.compress(b"\0" * 8))
                     + chunk(b"IEND", b""))
    return path


def expect_clean_failure(capsys, tmp_path, args, message):
    before = {p: p.read_bytes() for p in tmp_path.rglob("*") if p.is_file()}
    code, out, err = run_cli(capsys, *args)
    assert code == 2, err
    assert message.lower() in err.lower(), err
    errors = [line for line in err.splitlines() if not line.startswith("step ")]  # progress lines may precede
    assert len(errors) == 1 and errors[0] == err.splitlines()[-1] and "Traceback" not in err, err
    assert {p: p.read_bytes() for p in before if p.exists()} == before
    return err


# -- images ----------------------------------------------------------------------------------
def bad_images(tmp_path):
    good = make_picture(tmp_path / "good.png")
    data = good.read_bytes()
    (tmp_path / "empty.png").write_bytes(b"")
    (tmp_path / "truncated.png").write_bytes(data[: len(data) // 2])
    (tmp_path / "text.png").write_text("this is not a picture\n")
    png_with_header(tmp_path / "zero.png", 0, 0)
    Image.new("L", (1, 1)).save(tmp_path / "one.png")
    png_with_header(tmp_path / "bomb.png", 200_000, 200_000)
    return tmp_path


@pytest.mark.parametrize("name,message", [
    ("empty.png", "is empty"),
    ("truncated.png", "truncated or corrupt"),
    ("text.png", "not a picture ironlearn reads"),
    ("zero.png", "not a picture ironlearn reads"),  # Pillow refuses a 0x0 header outright
    ("one.png", "at least 4x4"),
    ("bomb.png", "resize it first"),
    ("missing.png", "no such file"),
])
def test_bad_images(tmp_path, capsys, name, message):
    bad_images(tmp_path)
    expect_clean_failure(capsys, tmp_path, ["fit", tmp_path / name, "--out", tmp_path / "run", "--steps", 5, *FAST],
                         message)
    assert not (tmp_path / "run" / "checkpoint.npz").exists()


def odd_but_valid_images(tmp_path):
    rng = np.random.default_rng(0)
    rgb = (rng.uniform(size=(24, 24, 3)) * 255).astype(np.uint8)
    Image.fromarray((rng.uniform(size=(24, 24)) * 65535).astype(np.uint16)).save(tmp_path / "sixteen.png")
    Image.fromarray(rgb).convert("P", palette=Image.ADAPTIVE, colors=16).save(tmp_path / "palette.png")
    Image.fromarray(np.dstack([rgb, np.full((24, 24), 128, np.uint8)])).save(tmp_path / "alpha.png")
    Image.fromarray(rgb).convert("CMYK").save(tmp_path / "cmyk.jpg")
    frames = [Image.fromarray(np.roll(rgb, k, axis=0)) for k in range(3)]
    frames[0].save(tmp_path / "animated.gif", save_all=True, append_images=frames[1:], duration=50)
    return tmp_path


@pytest.mark.parametrize("name,mode", [("sixteen.png", "gray"), ("palette.png", "rgb"), ("alpha.png", "rgb"),
                                       ("cmyk.jpg", "rgb"), ("animated.gif", "rgb")])
def test_unusual_images_work(tmp_path, capsys, name, mode):
    odd_but_valid_images(tmp_path)
    code, _, err = run_cli(capsys, "fit", tmp_path / name, "--out", tmp_path / "run", "--steps", 5, *FAST)
    assert code == 0, err
    assert json.loads((tmp_path / "run" / "metrics.json").read_text())["mode"] == mode


def test_a_float_tiff_fits_on_its_own_range(tmp_path, capsys):
    """Pillow's float buffer is read-only (it was divided in place: a traceback), and floats in [0, 1]
    are intensities already: dividing them by 255 would fit a black picture."""
    from ironlearn.image import load_picture

    ramp = np.linspace(0.1, 0.9, 24 * 24, dtype=np.float32).reshape(24, 24)
    Image.fromarray(ramp, "F").save(tmp_path / "unit.tif")
    Image.fromarray(ramp * 1000 - 300, "F").save(tmp_path / "wide.tif")
    np.testing.assert_allclose(load_picture(tmp_path / "unit.tif").pixels[..., 0], ramp)
    wide = load_picture(tmp_path / "wide.tif")
    assert wide.pixels.min() == 0 and wide.pixels.max() == 1 and "stretched" in wide.notes[0]
    code, _, err = run_cli(capsys, "fit", tmp_path / "unit.tif", "--out", tmp_path / "run", "--steps", 5, *FAST)
    assert code == 0, err
    Image.fromarray(np.full((8, 8), np.nan, np.float32), "F").save(tmp_path / "nan.tif")
    expect_clean_failure(capsys, tmp_path, ["fit", tmp_path / "nan.tif", "--out", tmp_path / "other", *FAST],
                         "NaN or infinite")


def test_what_is_lost_in_reading_is_said(tmp_path, capsys):
    """An animated GIF trains on its first frame, and Pillow reads 16-bit colour as 8 bits: one note each."""
    odd_but_valid_images(tmp_path)
    code, _, err = run_cli(capsys, "fit", tmp_path / "animated.gif", "--out", tmp_path / "gif", "--steps", 5, *SPOKEN)
    assert code == 0 and "note: animated.gif has 3 frames; ironlearn fits the first" in err, err
    rows = np.random.default_rng(0).integers(0, 65535, (8, 8 * 3)).astype(">u2")
    raw = b"".join(b"\0" + row.tobytes() for row in rows)

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    header = struct.pack(">IIBBBBB", 8, 8, 16, 2, 0, 0, 0)  # 8x8, 16 bits a channel, RGB
    (tmp_path / "deep.png").write_bytes(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw))
                                        + chunk(b"IEND", b""))
    code, _, err = run_cli(capsys, "fit", tmp_path / "deep.png", "--out", tmp_path / "deep", "--steps", 5, *SPOKEN)
    assert code == 0 and "16 bits a colour channel" in err, err
    code, _, err = run_cli(capsys, "fit", tmp_path / "sixteen.png", "--out", tmp_path / "gray", "--steps", 5, *SPOKEN)
    assert code == 0 and "note:" not in err, err  # 16-bit gray keeps its 16 bits: nothing to say


def test_alpha_is_composited_on_white(tmp_path):
    from ironlearn.image import load_picture

    Image.new("RGBA", (8, 8), (0, 0, 0, 0)).save(tmp_path / "clear.png")
    assert load_picture(tmp_path / "clear.png").pixels.min() == 1.0


# -- pixel CSVs ----------------------------------------------------------------------------------
@pytest.mark.parametrize("text,message", [
    ("0,0,1\n1,0,0\n", "header"),
    ("x,y\n0,0\n", "missing column(s) pixel_value"),
    ("x,y,pixel_value\n0,0,one\n", "non-numeric"),
    ("x,y,pixel_value\n0,0,nan\n", "NaN or infinite"),
    ("x,y,pixel_value\n0,0,inf\n", "NaN or infinite"),
    ("x,y,pixel_value\n0,0,1\n0,0,0\n", "more than once"),
    ("x,y,pixel_value\n0,0,1\n3,3,0\n", "missing"),
    ("x,y,pixel_value\n-1,0,1\n", "whole numbers from 0"),
    ("x,y,pixel_value\n0,0,1\n1,0\n0,1,1\n1,1,0\n", "line 3: expected 3 values"),  # a ragged row
    ("x,y,pixel_value\n0,0,1\n1e20,0,1\n", "more than ironlearn reads"),
])
def test_bad_csvs(tmp_path, capsys, text, message):
    (tmp_path / "p.csv").write_text(text)
    expect_clean_failure(capsys, tmp_path, ["fit", tmp_path / "p.csv", "--out", tmp_path / "run", *FAST], message)


# -- checkpoints and models ----------------------------------------------------------------------------
@pytest.mark.parametrize("damage,message", [
    ("truncate", "truncated or corrupt"),
    ("random", "truncated or corrupt"),
    ("architecture", "do not fit"),
    ("newer", "upgrade ironlearn"),
])
def test_damaged_models(run_folder, tmp_path, capsys, damage, message):
    model = run_folder / "model.npz"
    if damage == "truncate":
        model.write_bytes(model.read_bytes()[:300])
    elif damage == "random":
        model.write_bytes(np.random.default_rng(0).bytes(5000))
    elif damage == "architecture":
        rewrite_meta(model, lambda meta, arrays: meta["architecture"]["layers"][-1].update(out_features=3))
    else:
        rewrite_meta(model, lambda meta, arrays: meta.update(version=7))
    for command in (["render", model, "--size", 16, "-o", tmp_path / "r.png"], ["info", model]):
        expect_clean_failure(capsys, tmp_path, command, message)


def test_damaged_checkpoint_on_resume(run_folder, tmp_path, capsys):
    ckpt = run_folder / "checkpoint.npz"
    ckpt.write_bytes(ckpt.read_bytes()[:1000])
    err = expect_clean_failure(capsys, tmp_path, ["fit", tmp_path / "disc.png", "--out", run_folder, "--resume",
                                                  "--steps", 40], "cannot be resumed: it is damaged (")
    assert "start over with --force" in err  # it used to say "give a model.npz", which --resume cannot take


def test_a_resume_says_when_it_cannot_continue_the_history_or_time_lapse(tmp_path, capsys, monkeypatch):
    """Both are rebuilt from the resume's step; they used to be dropped without a word."""
    run_folder = tmp_path / "run"
    with monkeypatch.context() as patch:  # stopped before its end: its frames.npz is kept for a resume
        stop_after(patch, 20)
        code, _, err = run_cli(capsys, "fit", make_picture(tmp_path / "disc.png"), "--out", run_folder,
                               "--steps", 40, *FAST)
    assert code == 130, err
    (run_folder / "history.csv").write_text("not,a\nhistory\n")
    (run_folder / "frames.npz").write_bytes((run_folder / "frames.npz").read_bytes()[:300])
    code, _, err = run_cli(capsys, "fit", tmp_path / "disc.png", "--out", run_folder, "--resume", "--steps", 40,
                           *[a for a in FAST if a != "--quiet"], "--progress", "none")
    assert code == 0, err
    assert "note: history.csv could not be read; the loss history starts again at step 20" in err
    assert "note: frames.npz could not be read; the time-lapse starts again at step 20" in err
    steps = [int(row.split(",")[0]) for row in (run_folder / "history.csv").read_text().splitlines()[1:]]
    assert steps and min(steps) >= 20 and max(steps) == 40


def test_a_finished_run_keeps_its_model_once(run_folder, tmp_path, capsys):
    """A run that reached its end keeps one copy of its model, model.npz: its checkpoint holds the
    step and settings alone (no arrays: no model, no Adam moments) and frames.npz is gone.  A resume
    with more steps continues from model.npz, says that Adam's moments start again, and leaves the
    time-lapse as it was."""
    checkpoint_path, gif = run_folder / "checkpoint.npz", (run_folder / "timelapse.gif").read_bytes()
    with npz.open_npz(checkpoint_path, deflated=False) as archive:
        assert set(archive.members) == {"meta"}
    assert not (run_folder / "frames.npz").exists() and checkpoint_path.stat().st_size < 5000
    model = load_checkpoint(run_folder / "model.npz").model.named_parameters()
    for name, value in load_checkpoint(checkpoint_path).model.named_parameters().items():
        np.testing.assert_array_equal(value, model[name], err_msg=name)
    code, _, err = run_cli(capsys, "fit", tmp_path / "disc.png", "--out", run_folder, "--resume", "--steps", 40,
                           *[a for a in FAST if a != "--quiet"], "--progress", "none")
    assert code == 0, err
    assert "Adam's moments start again from zero at step 20" in err and "timelapse.gif stays" in err
    assert load_checkpoint(run_folder / "model.npz").step == 40 and load_checkpoint(checkpoint_path).step == 40
    assert (run_folder / "timelapse.gif").read_bytes() == gif


@pytest.mark.parametrize("change, message", [
    (lambda run: (run / "model.npz").unlink(), "keeps its model in"),
    (lambda run: rewrite_meta(run / "model.npz", lambda meta, arrays: meta.update(step=7)), "step 7, not 20"),
])
def test_a_finished_runs_checkpoint_without_its_model_is_one_line(run_folder, tmp_path, capsys, change, message):
    change(run_folder)
    expect_clean_failure(capsys, tmp_path, ["fit", tmp_path / "disc.png", "--out", run_folder, "--resume",
                                            "--steps", 40], message)


def test_resume_from_another_image(run_folder, tmp_path, capsys):
    other = make_picture(tmp_path / "other.png", size=40)
    expect_clean_failure(capsys, tmp_path, ["fit", other, "--out", run_folder, "--resume", "--steps", 40],
                         "not the image")


# -- options -----------------------------------------------------------------------------------
@pytest.mark.parametrize("extra,message", [
    (["--steps", "0"], "--steps"),
    (["--steps", "-3"], "--steps"),
    (["--steps", "1e12"], "--steps"),
    (["--steps", "99999999999"], "beyond what makes sense"),
    (["--time-budget", "0"], "--time-budget"),
    (["--lr", "-1"], "--lr"),
    (["--lr", "1000"], "beyond what makes sense"),
    (["--lr", "nan"], "--lr"),
    (["--size", "0"], "size"),
    (["--size", "100000"], "more than ironlearn reads"),
    (["--width", "100000"], "beyond what makes sense"),
    (["--table-log2", "40"], "6..24"),
    (["--batch-size", "-1"], "--batch-size"),
    (["--model", "nope"], "--model"),
    (["--mode", "cmyk"], "--mode"),
    (["--device", "tpu"], "--device"),
    (["--resume", "--force"], "contradict"),
    (["--model", "classic", "--depth", "3"], "does not apply"),
    (["--model", "hashgrid", "--w0", "3"], "does not apply"),
    (["--lr", "0.001", "--lr-min", "0.1"], "--lr-min 0.1 is above --lr"),
    (["--lr-min", "0.5"], "is above the learning rate of --model hashgrid"),
    (["--coarsest", "64", "--finest", "16"], "--coarsest 64 is above --finest"),
    (["--coarsest", "64"], "give a smaller --coarsest or a larger --finest"),  # the 32-pixel picture's finest: 32
    (["--max-pixels", "100"], "over the limit you set (--max-pixels 100)"),
])
def test_bad_options(tmp_path, capsys, extra, message):
    picture = make_picture(tmp_path / "disc.png")
    expect_clean_failure(capsys, tmp_path, ["fit", picture, "--out", tmp_path / "run", *extra], message)


@pytest.mark.parametrize("args,message", [
    (["compress", "{pic}", "-o", "{tmp}/c.ilc", "--bpp", "100"], "--bpp 100 is more than the 24 bits"),
    (["to-csv", "{pic}", "-o", "{tmp}/p.csv", "--max-pixels", "100"], "over the limit you set (--max-pixels 100)"),
    (["to-csv", "{pic}", "-o", "{tmp}/p.png"], "to-csv writes a pixel CSV"),
    (["from-csv", "{csv}", "-o", "{tmp}/d.csv"], "from-csv writes an image"),
    (["from-csv", "{csv}", "-o", "{tmp}/d"], "from-csv writes an image"),
])
def test_bad_options_of_other_commands(tmp_path, capsys, args, message):
    """Checked before any work (--bpp used to fail after the 'compressing' line, naming no flag;
    encode and decode wrote CSV text or PNG bytes under any name)."""
    picture = make_picture(tmp_path / "disc.png")
    assert run_cli(capsys, "to-csv", picture, "-o", tmp_path / "disc.csv")[0] == 0
    args = [a.format(pic=picture, csv=tmp_path / "disc.csv", tmp=tmp_path) for a in args]
    expect_clean_failure(capsys, tmp_path, args, message)
    assert sorted(os.listdir(tmp_path)) == ["disc.csv", "disc.png"]


def test_resume_at_another_size_says_so(run_folder, tmp_path, capsys):
    expect_clean_failure(capsys, tmp_path, ["fit", tmp_path / "disc.png", "--out", run_folder, "--resume",
                                            "--size", "16"], "was trained at 32x32, and --size gives 16x16")


def test_running_out_of_memory_is_one_line(tmp_path):
    """A real MemoryError: the address space limited (ulimit -v) under what a 6000x6000 picture needs."""
    resource = pytest.importorskip("resource")
    big = tmp_path / "big.png"
    Image.fromarray(np.add.outer(np.arange(6000), np.arange(6000)).astype(np.uint8)).save(big)

    def limit():
        resource.setrlimit(resource.RLIMIT_AS, (900 << 20, 900 << 20))
    env = {**os.environ, "OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"}
    done = subprocess.run([sys.executable, "-m", "ironlearn", "fit", str(big), "--out", str(tmp_path / "run"),
                           "--steps", "3", "--quiet", "--device", "cpu",
                           "--interpolation", "linear"],  # the pyramid: the spline level fits in 900 MB
                          capture_output=True, text=True,
                          preexec_fn=limit, env=env, timeout=300)
    errors = [line for line in done.stderr.splitlines() if not line.startswith("step ")]
    assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
    assert len(errors) == 1 and "out of memory" in errors[0] and "--size" in errors[0], done.stderr


def test_an_image_format_that_cannot_hold_the_picture_says_why(tmp_path, capsys):
    """Pillow's OSError for a gray picture written as XBM has no errno: its reason used to be dropped."""
    (tmp_path / "p.csv").write_text("x,y,pixel_value\n0,0,10\n1,0,200\n0,1,30\n1,1,90\n")
    expect_clean_failure(capsys, tmp_path, ["from-csv", tmp_path / "p.csv", "-o", tmp_path / "p.xbm"],
                         "cannot write mode L as XBM")
    assert not (tmp_path / "p.xbm").exists()


def test_output_path_that_is_a_file(tmp_path, capsys):
    picture = make_picture(tmp_path / "disc.png")
    (tmp_path / "taken").write_text("mine")
    expect_clean_failure(capsys, tmp_path, ["fit", picture, "--out", tmp_path / "taken"], "is a file")
    expect_clean_failure(capsys, tmp_path, ["fit", picture, "--out", tmp_path / "taken" / "run"], "output folder")
    expect_clean_failure(capsys, tmp_path, ["to-csv", picture, "-o", tmp_path / "taken" / "p.csv"], "does not exist")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes anywhere")
def test_output_folder_not_writable(tmp_path, capsys):
    picture = make_picture(tmp_path / "disc.png")
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o500)
    try:
        expect_clean_failure(capsys, tmp_path, ["fit", picture, "--out", locked / "run"], "cannot create")
    finally:
        locked.chmod(0o700)


# -- a full disk ----------------------------------------------------------------------------------
def test_disk_full_keeps_the_previous_checkpoint(run_folder, tmp_path, capsys, monkeypatch):
    before = (run_folder / "checkpoint.npz").read_bytes()
    real_savez = np.savez

    def full(file, **arrays):
        real_savez(file, **arrays)  # the bytes go out...
        raise OSError(errno.ENOSPC, "No space left on device")  # ...and the disk fills before the end

    monkeypatch.setattr(np, "savez", full)
    err = expect_clean_failure(capsys, tmp_path, ["fit", tmp_path / "disc.png", "--out", run_folder, "--resume",
                                                  "--steps", 40, "--checkpoint-every", 5, "--quiet"],
                               "No space left on device")
    assert "checkpoint.npz" in err
    monkeypatch.undo()
    assert (run_folder / "checkpoint.npz").read_bytes() == before
    assert not [p for p in os.listdir(run_folder) if p.endswith(".tmp")]


# -- divergence -------------------------------------------------------------------------------
def poison_steps(monkeypatch, bad):
    """Make the loss NaN at the steps for which ``bad(step, attempt)`` is true, in the run's trainer
    (not in the throwaway one that times steps first, whose loss nothing reads)."""
    real_step = Trainer.train_step
    seen = {"attempts": 0, "last": -1}

    def step(self):
        real_step(self)
        if not self.check_every:  # calibration's, or the thread measurement's
            return
        if self.step <= seen["last"]:
            seen["attempts"] += 1  # the trainer rolled back
        seen["last"] = self.step
        if bad(self.step, seen["attempts"]):
            self._loss = self._loss * np.float32("nan")

    monkeypatch.setattr(Trainer, "train_step", step)


@pytest.mark.parametrize("poisoned, back_to", [(33, 30), (5, 0)])  # read back from the checkpoint; the first state
def test_divergence_rolls_back_and_retries(tmp_path, capsys, monkeypatch, poisoned, back_to):
    picture = make_picture(tmp_path / "disc.png")
    poison_steps(monkeypatch, lambda step, attempts: step == poisoned and attempts == 0)
    code, _, err = run_cli(capsys, "fit", picture, "--out", tmp_path / "run", "--steps", 60,
                           "--checkpoint-every", 10, "--device", "cpu", "--lr", "0.01")
    assert code == 0, err
    assert f"rolled back to step {back_to}" in err and "retrying with learning rate 0.003" in err
    model = load_checkpoint(tmp_path / "run" / "model.npz")
    assert model.step == 60 and model.settings["lr"] == pytest.approx(0.003)


def test_persistent_divergence_stops_clearly_and_keeps_the_last_good_checkpoint(tmp_path, capsys, monkeypatch):
    picture = make_picture(tmp_path / "disc.png")
    poison_steps(monkeypatch, lambda step, attempts: step > 25)
    code, _, err = run_cli(capsys, "fit", picture, "--out", tmp_path / "run", "--steps", 60,
                           "--checkpoint-every", 10, "--device", "cpu")
    assert code == 1 and "diverged" in err and "last good checkpoint is kept" in err
    assert err.count("rolled back") == 3 and "Traceback" not in err
    kept = load_checkpoint(tmp_path / "run" / "checkpoint.npz")
    assert kept.step == 20 and all(np.isfinite(v).all() for v in kept.model.named_parameters().values())


def test_a_learning_rate_far_too_high_is_survived_or_reported(tmp_path, capsys):
    picture = make_picture(tmp_path / "disc.png")
    code, _, err = run_cli(capsys, "fit", picture, "--out", tmp_path / "run", "--model", "siren", "--lr", "5",
                           "--steps", 80, "--checkpoint-every", 10, *FAST[:3])
    assert code in (0, 1) and "Traceback" not in err
    if code == 0:
        assert json.loads((tmp_path / "run" / "metrics.json").read_text())["psnr_db"] > 0
    else:
        assert "diverged" in err and load_checkpoint(tmp_path / "run" / "checkpoint.npz").step >= 0


# -- kills at random moments ------------------------------------------------------------------------
KILLS, MAX_KILLS = 10, 30


def test_sigkill_at_random_moments_never_loses_the_run(tmp_path):
    picture = make_picture(tmp_path / "disc.png")
    out = tmp_path / "run"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    base = [sys.executable, "-m", "ironlearn", "fit", str(picture), "--out", str(out)]
    rng = random.Random(0)
    last_step, resumed, torn_writes, kills = 0, 0, 0, 0
    # At least KILLS kills, and more until three of them have landed mid-write: whether a kill lands
    # in a write is chance, and a loaded machine (CI under xdist) lands fewer of them.
    while kills < KILLS or (torn_writes < 3 and kills < MAX_KILLS):
        kills += 1
        ckpt = out / "checkpoint.npz"
        # A checkpoint (and the history and frames beside it) every step, so kills land mid-write.
        # No --quiet: the "fitting ..." line tells when training starts.
        args = ["--resume", "--device", "cpu"] if ckpt.exists() else [
            "--steps", "1000000", "--checkpoint-every", "1", "--device", "cpu", "--width", "16"]
        proc = subprocess.Popen(base + args, stderr=subprocess.PIPE, text=True, env=env)
        try:
            line = proc.stderr.readline()
            assert line.startswith("fitting"), line + proc.stderr.read()
            time.sleep(rng.uniform(0.05, 0.6))
        finally:
            proc.send_signal(signal.SIGKILL)
            proc.wait()
        resumed += "--resume" in args
        torn_writes += any(name.endswith(".tmp") for name in os.listdir(out))
        if ckpt.exists():
            step = load_checkpoint(ckpt).step  # never corrupt
            assert step >= last_step
            last_step = step
    assert resumed >= kills - 2 and last_step > 0
    print(f"{kills} kills, {torn_writes} of them mid-write, last checkpoint at step {last_step}")
    assert torn_writes >= 3  # the kills did land during writes
    done = subprocess.run(base + ["--resume", "--steps", str(last_step + 10), "--quiet"], capture_output=True,
                          text=True, env=env)
    assert done.returncode == 0, done.stderr
    assert load_checkpoint(out / "model.npz").step == last_step + 10
    assert not [name for name in os.listdir(out) if name.endswith(".tmp")]


@pytest.mark.parametrize("name,value", [("lr", "x"), ("size", None), ("steps", -4), ("model", "nope"),
                                        ("model_options", [1]), ("batch_size", 1.5), ("timed", "yes")])
def test_resume_refuses_damaged_settings(run_folder, tmp_path, capsys, name, value):
    """Settings a resume reads, damaged in the checkpoint (the loader checks only what every command reads)."""
    def damage(meta, arrays):
        if value is None:
            del meta["settings"][name]
        else:
            meta["settings"][name] = value
    rewrite_meta(run_folder / "checkpoint.npz", damage)
    expect_clean_failure(capsys, tmp_path, ["fit", tmp_path / "disc.png", "--out", run_folder, "--resume",
                                            "--steps", 40], name)
