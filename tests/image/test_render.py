import numpy as np
import pytest
from PIL import Image

from ironlearn.image.render import render, render_png
from ironlearn.fitting.timelapse import Snapshots, frame_steps, write_gif
from ironlearn.nn import siren


@pytest.fixture
def model():
    return siren(2, 3, width=16, depth=2, rng=np.random.default_rng(0))


def test_bands_match_one_pass(model, backend):
    model.to(backend)
    whole = render(model, 37, 23, backend, tile_points=10_000)
    banded = render(model, 37, 23, backend, tile_points=50)  # many bands, and rows split in chunks
    tiny = render(model, 37, 23, backend, tile_points=7)
    assert whole.shape == (23, 37, 3)
    np.testing.assert_allclose(banded, whole, atol=1e-6)
    np.testing.assert_allclose(tiny, whole, atol=1e-6)
    assert whole.min() >= 0 and whole.max() <= 1


@pytest.mark.parametrize("channels", [1, 3])
def test_streamed_png_is_what_pillow_reads(tmp_path, channels, backend):
    net = siren(2, channels, width=8, depth=1, rng=np.random.default_rng(1)).to(backend)
    render_png(net, tmp_path / "r.png", 50, 30, backend, channels, tile_points=200)
    with Image.open(tmp_path / "r.png") as image:
        read = np.asarray(image)
    expected = np.clip(render(net, 50, 30, backend) * 255 + 0.5, 0, 255).astype(np.uint8)
    np.testing.assert_array_equal(read, expected[..., 0] if channels == 1 else expected)


def test_snapshots_stay_under_the_frame_cap(model, backend):
    model.to(backend)
    snaps = Snapshots(range(57), width=16, height=16, backend=backend, max_frames=10)
    for step in range(0, 57):
        snaps.capture(model, step)
    assert len(snaps.frames) <= 10 and snaps.steps[0] == 0


def test_frames_start_untrained_and_crowd_the_early_steps():
    steps = frame_steps(10_000)
    assert steps[0] == 0 and steps[-1] == 10_000 and len(steps) <= 100
    assert sum(s <= 1000 for s in steps) > 2 * sum(s > 1000 for s in steps)  # a tenth of the run, most frames
    assert frame_steps(100, every=30) == [0, 30, 60, 90, 100]


def test_gif_loops_and_labels_every_frame(tmp_path):
    frames = [np.full((20, 30), v, np.uint8) for v in (0, 128, 255)]
    write_gif(tmp_path / "t.gif", frames, [0, 10, 20])
    with Image.open(tmp_path / "t.gif") as gif:
        assert gif.n_frames == 3 and gif.info["loop"] == 0 and gif.size == (30, 36)
        first = np.asarray(gif.convert("L"))
    assert (first[20:, :] < 128).any()  # the label strip holds dark text


def test_a_long_render_into_a_log_says_how_far_it_is_in_plain_lines(tmp_path, monkeypatch, capsys):
    """A 16384x16384 render took 105 s and said nothing when stderr was not a terminal."""
    import importlib

    render = importlib.import_module("ironlearn.image.render")

    monkeypatch.setattr(render, "PROGRESS_DELAY", 0.0)
    monkeypatch.setattr(render, "LINE_SECONDS", 0.0)
    bands = ((top, np.full((4, 8, 1), 0.5, np.float32)) for top in range(0, 12, 4))
    render.save_bands(tmp_path / "p.png", 8, 12, 1, bands, progress="lines")
    lines = capsys.readouterr().err.strip().splitlines()
    assert [line.split(",")[0] for line in lines] == [f"rendering 8x12: {n} of 12 rows" for n in (4, 8, 12)]
    assert "\r" not in "".join(lines)


@pytest.mark.parametrize("width, height, frame", [(2560, 1600, (512, 320)), (300, 700, (219, 512)), (200, 100, (200, 100))])
def test_time_lapse_frames_keep_the_aspect_at_up_to_512_px(width, height, frame, backend):
    # Sized, not rendered: a 2560x1600 photograph's frames were 192x120.
    assert Snapshots([], width, height, backend).size == frame


def test_a_timed_fits_frames_keep_to_their_time(tmp_path, backend):
    """Frames are renders of every pixel of their size: given a time for the frames planned, the
    first frame's render sizes them all (the aspect kept), and a resume keeps the size its frames
    were made at."""
    from ironlearn.fitting.timelapse import MIN_FRAME_SIDE

    model = siren(2, 3, width=16, depth=1, rng=np.random.default_rng(0)).to(backend)
    roomy = Snapshots(range(10), 400, 200, backend, seconds=1e6)
    roomy.capture(model, 0)
    assert roomy.size == (400, 200) and roomy.frames[0].shape == (200, 400, 3)
    tight = Snapshots(range(10), 400, 200, backend, seconds=1e-9)  # no time: the smallest frames
    tight.capture(model, 0)
    tight.capture(model, 5)
    assert tight.size == (MIN_FRAME_SIDE, MIN_FRAME_SIDE // 2)
    assert [f.shape for f in tight.frames] == [(32, 64, 3)] * 2
    tight.save(tmp_path / "frames.npz")
    resumed = Snapshots(range(10), 400, 200, backend, seconds=1e6)
    assert resumed.restore(tmp_path / "frames.npz", 5) and resumed.size == (64, 32)
    resumed.capture(model, 9)
    assert resumed.frames[-1].shape == (32, 64, 3)
