"""A small file must not cost gigabytes: crafted files that declare far more than they hold are refused
in one line, or handled in memory that stays in proportion to the picture.

Each command runs in a fresh process (:func:`helpers.run_measured`), so its peak memory is its own.
An empty command's peak (Python, NumPy, Pillow and ironlearn imported) is about 100 MB; the bounds
below leave room for that and sit far under what the same files cost before.
"""

import hashlib
import zipfile

import numpy as np
import pytest

from helpers import make_picture, run_cli, run_measured

MB = 1 << 20
FAST = ["--device", "cpu", "--quiet", "--width", "16", "--depth", "1"]


def digest(path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def one_line(text: str) -> str:
    """The one line ``text`` holds, with no traceback."""
    lines = text.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in text, text
    return lines[0]


def crafted_frames(path, shape, data_bytes: int, chunk=16 * MB):
    """A ``frames.npz`` whose frames declare ``shape`` (uint8) and hold ``data_bytes`` zeros, deflated:
    a few kilobytes a gigabyte."""
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED, compresslevel=1) as archive:
        with archive.open("frames.npy", "w", force_zip64=True) as member:
            np.lib.format.write_array_header_1_0(member, {"descr": "|u1", "fortran_order": False, "shape": shape})
            zeros = bytes(chunk)
            for start in range(0, data_bytes, chunk):
                member.write(zeros[:min(chunk, data_bytes - start)])
        with archive.open("steps.npy", "w") as member:
            np.lib.format.write_array(member, np.arange(shape[0]))


# -- .npz archives: sizes checked before anything is read ------------------------------------------
@pytest.fixture
def run_folder(tmp_path, capsys):
    picture = make_picture(tmp_path / "disc.png")
    code, _, err = run_cli(capsys, "fit", picture, "--out", tmp_path / "run", "--steps", 20, *FAST)
    assert code == 0, err
    return tmp_path / "run"


def test_a_crafted_time_lapse_is_refused_before_it_is_read(run_folder, tmp_path):
    """A frames.npz declaring 500 frames of 2048x2048 rgb (6.3 GB; here 384 MB of it present, in
    400 KB) is refused from its header: the resume notes that the time-lapse starts again, and
    stays at its usual memory (it filled the 384 MB, and a 6.1 MB file's 6.2 GB, first)."""
    crafted_frames(run_folder / "frames.npz", (500, 2048, 2048, 3), 384 * MB)
    picture = tmp_path / "disc.png"
    before = digest(picture)
    done, peak = run_measured("fit", picture, "--out", run_folder, "--resume", "--steps", 30,
                              *[a for a in FAST if a != "--quiet"], "--progress", "none")
    assert done.returncode == 0, done.stderr
    assert "note: frames.npz could not be read; the time-lapse starts again at step 20" in done.stderr
    assert "Traceback" not in done.stderr and digest(picture) == before
    assert peak < 250 * MB, f"peak {peak / MB:.0f} MB"
    with np.load(run_folder / "frames.npz") as archive:  # the run's own, written again
        assert archive["frames"].shape[1:] == (32, 32) and archive["steps"].max() == 30


def test_a_crafted_model_file_is_refused_in_one_line(run_folder, tmp_path):
    """A model file's arrays are stored plain, so none can be larger than the file; a deflated one
    declaring 6.3 GB is refused before it is read."""
    model = tmp_path / "model.npz"
    crafted_frames(model, (500, 2048, 2048, 3), 64 * MB)
    before = digest(model)
    done, peak = run_measured("render", model, "--size", 16, "-o", tmp_path / "r.png")
    assert done.returncode == 2 and "compressed" in one_line(done.stderr)
    assert digest(model) == before and not (tmp_path / "r.png").exists()
    assert peak < 200 * MB, f"peak {peak / MB:.0f} MB"
