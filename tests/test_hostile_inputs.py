"""Breaks found by trying to break ironlearn again (issue 54): small files that claimed large
pictures, numbers past int64, settings of the wrong type, a full disk at the lock, a signal while
the command starts, and a picture format that runs another program.

Each case ends in one line on stderr and exit 2 (143 for SIGTERM), or a ValueError from Python,
with no traceback, every file the user had unchanged, and the memory bounded where the input
claimed much.
"""

import errno
import json
import os
import signal
import struct
import subprocess
import sys
import time
import zlib

import numpy as np
import pytest

import ironlearn
from helpers import make_picture, rewrite_meta, run_cli, run_measured
from test_crafted_files import ADDRESS_LIMIT, SMALL_FILE_PEAK

QUICK = {"device": "cpu", "width": 8, "depth": 1}


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    """A tiny run, and its picture."""
    folder = tmp_path_factory.mktemp("hostile")
    picture = make_picture(folder / "pic.png", size=24)
    ironlearn.fit(picture, out=folder / "run", steps=3, **QUICK)
    return folder / "run"


def one_line(capsys, args, code=2, message=""):
    got, _, err = run_cli(capsys, *args)
    assert got == code, err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


def short_png(width: int, height: int, rows: int) -> bytes:
    """A PNG declaring ``width x height`` gray whose image data (a whole zlib stream, every CRC
    right) ends after ``rows`` rows."""
    raw = (b"\x00" + bytes([200]) * width) * rows
    return (b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
            + _chunk(b"IDAT", zlib.compress(raw, 9)) + _chunk(b"IEND", b""))


# -- pictures ---------------------------------------------------------------------------------------
def test_a_png_whose_data_stops_short_is_refused_before_it_is_decoded(tmp_path):
    """167 bytes declaring 10000x10000 whose zlib stream ends after 3 rows: encode wrote a 1.18 GB
    CSV of mostly black rows, and fit trained on them."""
    path = tmp_path / "short.png"
    path.write_bytes(short_png(10000, 10000, 3))
    assert len(path.read_bytes()) < 200
    for command in (["to-csv", path, "-o", tmp_path / "out.csv"],
                    ["fit", path, "--out", tmp_path / "run", "--steps", 3, "--device", "cpu"]):
        done, peak = run_measured(*command, memory_limit=ADDRESS_LIMIT)
        assert done.returncode == 2 and "Traceback" not in done.stderr, done.stderr
        assert "truncated" in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert peak < SMALL_FILE_PEAK
    assert sorted(os.listdir(tmp_path)) == ["short.png"]


def test_whole_pngs_of_every_layout_still_read(tmp_path):
    """The check counts what the image data inflates to, for every colour type, bit depth and
    odd size (an interlaced one is checked by its seven passes)."""
    from PIL import Image

    from ironlearn.image.io import load_picture

    rng = np.random.default_rng(0)
    for mode in ("1", "L", "P", "RGB", "RGBA", "LA", "I;16"):
        for width, height in ((8, 8), (13, 29), (100, 37)):
            values = rng.integers(0, 255, (height, width, 3), dtype=np.uint8)
            image = (Image.fromarray(values).convert(mode) if mode != "I;16"
                     else Image.fromarray(rng.integers(0, 65535, (height, width)).astype(np.uint16)))
            image.save(tmp_path / "p.png")
            assert load_picture(tmp_path / "p.png").values.shape[:2] == (height, width)
    raw = b"".join((b"\x00" + bytes([9]) * -(-(13 - x0) // dx)) * -(-(29 - y0) // dy)
                   for x0, y0, dx, dy in [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4),
                                          (1, 0, 2, 2), (0, 1, 1, 2)])
    (tmp_path / "i.png").write_bytes(b"\x89PNG\r\n\x1a\n" + _chunk(b"IHDR", struct.pack(">IIBBBBB", 13, 29, 8, 0, 0, 0, 1))
                                     + _chunk(b"IDAT", zlib.compress(raw)) + _chunk(b"IEND", b""))
    assert (load_picture(tmp_path / "i.png").values == 9).all()


def test_only_the_formats_ironlearn_reads_are_tried(tmp_path, monkeypatch):
    """Pillow opens any format it knows, an EPS through Ghostscript: a crafted EPS ran it where it
    is installed.  Here the EPS reader must never be reached."""
    from PIL import EpsImagePlugin, Image

    from ironlearn.image.io import InputError, load_picture

    Image.new("RGB", (16, 16)).save(tmp_path / "x.eps")
    reached = []
    monkeypatch.setattr(EpsImagePlugin.EpsImageFile, "_open", lambda self: reached.append(1))
    with pytest.raises(InputError, match="not a picture ironlearn reads; give a PNG, JPEG"):
        load_picture(tmp_path / "x.eps")
    assert not reached


# -- pixel CSVs -------------------------------------------------------------------------------------
@pytest.mark.parametrize("rows, reach", [
    ("9223372036854775807,0,1", "9223372036854775808x1"),
    ("0,0,1\n9223372036854775807,0,1", "9223372036854775808x1"),
    ("0,0,1\n0,9223372036854775807,1", "1x9223372036854775808"),
], ids=["x", "x after a pixel", "y"])
def test_a_coordinate_at_int64s_limit_is_one_line(tmp_path, capsys, rows, reach):
    """x = 2**63 - 1 plus one wrapped to a width of 0: ZeroDivisionError and exit 1 (y: a grid of
    1x0 with -1 pixels missing)."""
    path = tmp_path / "big.csv"
    path.write_text(f"x,y,pixel_value\n{rows}\n")
    for command in (["from-csv", path, "-o", tmp_path / "out.png"], ["compress", path, "-o", tmp_path / "out.ilc"],
                    ["fit", path, "--out", tmp_path / "run", "--steps", 2, "--device", "cpu"]):
        one_line(capsys, command, message=f"coordinates reach {reach} pixels")
    assert sorted(os.listdir(tmp_path)) == ["big.csv"]


# -- model files ------------------------------------------------------------------------------------
def test_a_model_claiming_a_huge_size_does_not_make_view_resize_the_picture(run_folder, tmp_path):
    """A model's settings claiming 10000x10000, and a wrong fingerprint: view resized the picture it
    names to 100 MP (2.34 GB) to compute the fingerprint."""
    folder = tmp_path / "claims"
    folder.mkdir()
    model = folder / "model.npz"
    model.write_bytes((run_folder / "model.npz").read_bytes())

    def claim(meta, arrays):
        meta["settings"]["size"] = [10000, 10000]
        meta["settings"]["fingerprint"] = "0" * 16

    rewrite_meta(model, claim)
    done, peak = run_measured("view", folder, "-o", tmp_path / "page.html", memory_limit=ADDRESS_LIMIT)
    assert done.returncode == 0, done.stderr
    assert "no comparison" in done.stderr and peak < SMALL_FILE_PEAK


def test_a_null_training_time_is_one_line_in_info(run_folder, tmp_path, capsys):
    model = tmp_path / "model.npz"
    model.write_bytes((run_folder / "model.npz").read_bytes())
    rewrite_meta(model, lambda meta, arrays: meta["settings"].update(train_seconds=None))
    before = model.read_bytes()
    one_line(capsys, ["info", model], message="settings.train_seconds is None, not a number")
    assert model.read_bytes() == before


@pytest.mark.parametrize("options", [{"width": "wide", "levels": -5}, {"width": True}, {"width": 10**400},
                                     {"vertices": 3}, {"interpolation": ["bspline"]}, {"depth": 1.5}],
                         ids=["text and negative", "bool", "huge", "number for text", "list", "fraction"])
def test_a_resume_checks_each_saved_model_option(run_folder, tmp_path, capsys, options):
    """model_options {"width": "wide", "levels": -5} in a checkpoint: TypeError and exit 1."""
    folder = tmp_path / "run"
    folder.mkdir()
    for name in ("checkpoint.npz", "model.npz"):
        (folder / name).write_bytes((run_folder / name).read_bytes())
    rewrite_meta(folder / "checkpoint.npz", lambda meta, arrays: meta["settings"]["model_options"].update(options))
    before = {p.name: p.read_bytes() for p in folder.iterdir()}
    one_line(capsys, ["fit", run_folder.parent / "pic.png", "--out", folder, "--resume", "--steps", 5],
             message="holds a bad value for the setting 'model_options'")
    assert {p.name: p.read_bytes() for p in folder.iterdir()} == before


# -- the Python API -----------------------------------------------------------------------------------
@pytest.mark.parametrize("view", [(-10**400, 0, 1, 1), (True, 0, 1, 1), (0, 0, 1), (float("nan"), 0, 1, 1)])
def test_a_view_of_numbers_past_a_float_is_a_value_error(run_folder, view):
    """view=(-10**400, 0, 1, 1) raised OverflowError from float()."""
    with pytest.raises(ValueError, match="four numbers|four finite numbers"):
        ironlearn.render(run_folder, size=8, view=view)


# -- the lock on a full disk --------------------------------------------------------------------------
def test_a_full_disk_at_the_lock_names_it_and_leaves_none(run_folder, tmp_path, monkeypatch):
    """A disk so full that the lock's pid cannot be written: "No space left on device" naming no
    file, and a .lock left behind."""
    from ironlearn.fitting import UsageError

    folder = tmp_path / "run"
    folder.mkdir()
    for name in ("checkpoint.npz", "model.npz"):
        (folder / name).write_bytes((run_folder / name).read_bytes())

    def full(fd, data, offset):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "pwrite", full)
    with pytest.raises(UsageError, match=r"cannot write .*\.lock: No space left on device; free some space"):
        ironlearn.fit(run_folder.parent / "pic.png", out=folder, resume=True, steps=5, **{"device": "cpu"})
    assert sorted(p.name for p in folder.iterdir()) == ["checkpoint.npz", "model.npz"]


# -- a signal while the command starts ----------------------------------------------------------------
def test_sigterm_while_the_command_starts_is_the_sigterm_line(tmp_path):
    """SIGTERM in the first 0.3 s, while NumPy and the codec load, killed the process by the signal
    (no line, no exit code of ours): the handler now comes before them."""
    picture = make_picture(tmp_path / "pic.png", size=24)
    started = subprocess.Popen([sys.executable, "-c", "import time; t = time.perf_counter();"
                                "import ironlearn.cli; print(time.perf_counter() - t)"],
                               stdout=subprocess.PIPE, text=True)
    assert float(started.communicate()[0]) < 0.1  # what comes before the handler is small
    process = subprocess.Popen([sys.executable, "-m", "ironlearn", "fit", str(picture), "--out", str(tmp_path / "run"),
                                "--steps", "100000", "--device", "cpu"], stderr=subprocess.PIPE, text=True)
    time.sleep(0.15)  # past the interpreter's own start, before the commands have loaded
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 143, err
    assert "stopped by SIGTERM" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err


def _grid_model(path, levels: int):
    """An 84 KB model of ``levels`` one-feature hash-grid levels of 2**10 rows (issue 64's)."""
    from ironlearn.nn import presets as nets
    from ironlearn.train.checkpoint import save

    model = nets.hashgrid(2, 3, levels=levels, features=1, log2_table_size=10, coarsest=1, finest=2, width=1,
                          depth=1, rng=np.random.default_rng(0))
    save(path, model, settings={"size": [64, 64], "mode": "rgb"})
    return path


def test_a_model_of_thousands_of_grid_levels_is_refused_at_load(tmp_path):
    """Every array fits its architecture, yet 4096 levels took 8.7 s and 1.75 GB to render 64x64
    (out of memory at 256x256) and made a 3.46 MB shader: a hash grid may have at most
    MAX_GRID_LEVELS, twice what fit allows; 32 still draws."""
    from ironlearn.nn.encodings import MAX_GRID_LEVELS

    crafted = _grid_model(tmp_path / "levels.npz", 4096)
    before = crafted.read_bytes()
    assert len(before) < 100_000
    for command in (["render", crafted, "--size", 64, "-o", tmp_path / "out.png"],
                    ["view", crafted, "-o", tmp_path / "page.html"], ["info", crafted]):
        done, peak = run_measured(*command, memory_limit=ADDRESS_LIMIT)
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert f"levels must be a whole number in 1..{MAX_GRID_LEVELS} (got 4096)" in done.stderr
        assert "Traceback" not in done.stderr and peak < SMALL_FILE_PEAK
    assert crafted.read_bytes() == before and not (tmp_path / "out.png").exists()
    done, _ = run_measured("render", _grid_model(tmp_path / "fits.npz", 32), "--size", 64, "-o", tmp_path / "out.png")
    assert done.returncode == 0, done.stderr
