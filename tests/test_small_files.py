"""A small file must not cost gigabytes: crafted files that declare far more than they hold are refused
in one line, or handled in memory that stays in proportion to the picture.

Each command runs in a fresh process (:func:`helpers.run_measured`), so its peak memory is its own.
An empty command's peak (Python, NumPy, Pillow and ironlearn imported) is about 100 MB; the bounds
below leave room for that and sit far under what the same files cost before.
"""

import hashlib
import io
import struct
import zipfile

import numpy as np
import pytest
from PIL import Image

from helpers import FAST, make_picture, run_cli, run_measured, stop_after
from ironlearn.image.io import Picture, write_pixel_csv

MB = 1 << 20


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
def stopped_run(tmp_path, capsys, monkeypatch):
    """A fit stopped at step 20 of 40 as Ctrl-C stops it: its folder keeps its time-lapse frames
    (a finished run's folder drops them)."""
    picture = make_picture(tmp_path / "disc.png")
    with monkeypatch.context() as patch:
        stop_after(patch, 20)
        code, _, err = run_cli(capsys, "fit", picture, "--out", tmp_path / "run", "--steps", 40, *FAST)
    assert code == 130, err
    return tmp_path / "run"


def test_a_crafted_time_lapse_is_refused_before_it_is_read(stopped_run, tmp_path):
    """A frames.npz declaring 500 frames of 2048x2048 rgb (6.3 GB; here 384 MB of it present, in
    400 KB) is refused from its header: the resume notes that the time-lapse starts again, and
    stays at its usual memory (it filled the 384 MB, and a 6.1 MB file's 6.2 GB, first)."""
    crafted_frames(stopped_run / "frames.npz", (500, 2048, 2048, 3), 384 * MB)
    picture = tmp_path / "disc.png"
    before = digest(picture)
    done, peak = run_measured("fit", picture, "--out", stopped_run, "--resume", "--steps", 30,
                              *[a for a in FAST if a != "--quiet"], "--progress", "none")
    assert done.returncode == 0, done.stderr
    assert "note: frames.npz could not be read; the time-lapse starts again at step 20" in done.stderr
    assert "Traceback" not in done.stderr and digest(picture) == before
    assert peak < 250 * MB, f"peak {peak / MB:.0f} MB"
    assert not (stopped_run / "frames.npz").exists()  # the finished run's frames are in its GIF, made again
    with Image.open(stopped_run / "timelapse.gif") as gif:
        assert gif.size[0] == 32 and gif.n_frames > 1  # the frames, and a strip below them


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


# -- pictures and pixel CSVs: memory in proportion to the picture ------------------------------------
@pytest.fixture(scope="module")
def baseline(tmp_path_factory) -> int:
    """The peak of an encode of a 4x4 picture: what the command costs before its picture."""
    folder = tmp_path_factory.mktemp("baseline")
    Image.new("RGB", (4, 4), (10, 20, 30)).save(folder / "small.png")
    done, peak = run_measured("to-csv", folder / "small.png", "-o", folder / "small.csv")
    assert done.returncode == 0, done.stderr
    return peak


def tiny_jpeg_declaring(path, width: int, height: int):
    """A JPEG of a few hundred bytes whose header declares ``width x height``: libjpeg fills the
    picture it does not hold."""
    buffer = io.BytesIO()
    Image.new("RGB", (16, 16), (200, 30, 30)).save(buffer, "JPEG", quality=50)
    data = bytearray(buffer.getvalue())
    frame = data.index(b"\xff\xc0")  # the start of frame: length, precision, then height and width
    data[frame + 5:frame + 9] = struct.pack(">HH", height, width)
    path.write_bytes(bytes(data))
    return path


def test_encode_of_a_tiny_file_declaring_a_large_picture_holds_about_the_picture(tmp_path, baseline):
    """A 632-byte JPEG declaring 2000x2000 (12 MB as rgb levels) is encoded within 4 pictures'
    worth of memory over an idle command's (it took 520 MB more, and 10 GB at 9000x9000)."""
    picture = tiny_jpeg_declaring(tmp_path / "tiny.jpg", 2000, 2000)
    before = digest(picture)
    done, peak = run_measured("to-csv", picture, "-o", tmp_path / "pixels.csv")
    assert done.returncode == 0 and one_line(done.stderr) == f"wrote {tmp_path / 'pixels.csv'}: 2000x2000 rgb, " \
                                                             "4,000,000 rows"
    assert digest(picture) == before
    with open(tmp_path / "pixels.csv") as file:
        assert sum(1 for _ in file) == 4_000_001
    assert peak - baseline < 4 * 12 * MB + 16 * MB, f"{(peak - baseline) / MB:.0f} MB over an idle command"


def test_decode_reads_its_csv_in_pieces(tmp_path, baseline):
    """A 1 MP rgb CSV (3 MB as levels, 18 MB as text) decodes within 8 pictures' worth of memory over
    an idle command's (about 800 bytes a row before: 827 MB for 1 MP), to the same picture."""
    levels = np.random.default_rng(0).integers(0, 256, (1000, 1000, 3), dtype=np.uint8)
    write_pixel_csv(tmp_path / "pixels.csv", Picture(levels, "rgb", "drawn"))
    before = digest(tmp_path / "pixels.csv")
    done, peak = run_measured("from-csv", tmp_path / "pixels.csv", "-o", tmp_path / "back.png")
    assert done.returncode == 0 and one_line(done.stderr).startswith("wrote")
    assert digest(tmp_path / "pixels.csv") == before
    np.testing.assert_array_equal(np.asarray(Image.open(tmp_path / "back.png")), levels)
    assert peak - baseline < 8 * 3 * MB + 32 * MB, f"{(peak - baseline) / MB:.0f} MB over an idle command"


def test_a_csv_of_two_rows_declaring_a_large_grid_is_refused_holding_only_its_rows(tmp_path, baseline):
    """Two rows reaching x=9999, y=9999 declare a 100 MP grid: the missing pixels are found from the
    rows themselves, not from a map of the grid (about 100 MB more before)."""
    (tmp_path / "two.csv").write_text("x,y,pixel_value\n0,0,1\n9999,9999,0\n")
    done, peak = run_measured("from-csv", tmp_path / "two.csv", "-o", tmp_path / "two.png")
    assert done.returncode == 2 and "99999998 pixel(s) of the 10000x10000 grid are missing" in one_line(done.stderr)
    assert not (tmp_path / "two.png").exists()
    assert peak - baseline < 16 * MB, f"{(peak - baseline) / MB:.0f} MB over an idle command"


# -- float pictures: read within their range, with no warning ------------------------------------------
@pytest.fixture
def extreme_tiff(tmp_path):
    """A finite float TIFF spanning float32's range: a ramp from -3e38 to 3e38, one pixel 1.0."""
    values = np.linspace(-3e38, 3e38, 32 * 32, dtype=np.float32).reshape(32, 32)
    values[5, 5] = 1.0
    Image.fromarray(values, "F").save(tmp_path / "extreme.tif")
    return tmp_path / "extreme.tif"


@pytest.mark.filterwarnings("error")  # a RuntimeWarning (overflow, NaN cast) fails the test
def test_a_float_tiff_at_float32s_limits_is_stretched_for_every_command(extreme_tiff, tmp_path, capsys):
    """It was stretched in float32 (3e38 - -3e38 = inf): encode wrote all zeros, compress failed with
    "uint takes ...", and fit diverged after 3 retries, with 6 RuntimeWarnings."""
    before = digest(extreme_tiff)
    code, _, err = run_cli(capsys, "to-csv", extreme_tiff, "-o", tmp_path / "pixels.csv")
    assert code == 0, err
    levels = np.loadtxt(tmp_path / "pixels.csv", delimiter=",", skiprows=1, dtype=np.int64)[:, 2].reshape(32, 32)
    assert levels[0, 0] == 0 and levels[-1, -1] == 255 and levels[5, 5] == 128  # 1.0 is mid-range
    assert (np.diff(np.delete(levels.ravel(), 5 * 32 + 5)) >= 0).all()  # the ramp, still a ramp
    code, _, err = run_cli(capsys, "fit", extreme_tiff, "--out", tmp_path / "run", "--steps", 10, *FAST)
    assert code == 0, err
    code, _, err = run_cli(capsys, "compress", extreme_tiff, "-o", tmp_path / "x.ilc", "--seconds", 1)
    assert code == 0, err
    assert digest(extreme_tiff) == before


def test_a_float_tiff_holding_inf_is_refused_in_one_line(tmp_path, capsys):
    values = np.zeros((8, 8), np.float32)
    values[3, 3] = np.inf
    Image.fromarray(values, "F").save(tmp_path / "inf.tif")
    code, _, err = run_cli(capsys, "to-csv", tmp_path / "inf.tif", "-o", tmp_path / "pixels.csv")
    assert code == 2 and "NaN or infinite" in one_line(err) and not (tmp_path / "pixels.csv").exists()
