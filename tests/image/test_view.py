"""Rendering a region of the [-1, 1] square (``render --view``)."""

import numpy as np
import pytest

from helpers import run_cli
from ironlearn.image.coords import FULL_VIEW, axis, parse_view, pixel_grid
from ironlearn.image.render import render
from ironlearn.nn import siren
from ironlearn.train import save_checkpoint


@pytest.fixture
def model():
    return siren(2, 3, width=16, depth=2, rng=np.random.default_rng(0))


def test_default_axis_is_unchanged():
    np.testing.assert_array_equal(axis(5), np.array([-0.8, -0.4, 0.0, 0.4, 0.8], np.float32))
    np.testing.assert_array_equal(pixel_grid(7, 3, view=FULL_VIEW), pixel_grid(7, 3))


def test_a_view_is_a_crop_of_a_larger_render(model, backend):
    model.to(backend)
    whole = render(model, 64, 48, backend)
    # The bottom-right quarter of the square, at the same pixel pitch: the same pixel centres.
    quarter = render(model, 32, 24, backend, view=(0.0, 0.0, 1.0, 1.0))
    np.testing.assert_allclose(quarter, whole[24:, 32:], atol=1e-5)
    strip = render(model, 16, 48, backend, view=(-1.0, -1.0, -0.5, 1.0))
    np.testing.assert_allclose(strip, whole[:, :16], atol=1e-5)


@pytest.mark.parametrize("text", ["1,2,3", "a,b,c,d", "0,0,0,1", "0,1,1,0", "0,0,inf,1", "nan,0,1,1", "0,0,1e300,1"])
def test_bad_views_are_refused(text):
    with pytest.raises(ValueError):
        parse_view(text)


def test_render_view_command(tmp_path, capsys, model):
    save_checkpoint(tmp_path / "m.npz", model, settings={"size": [40, 20]})
    code, _, err = run_cli(capsys, "render", tmp_path / "m.npz", "--size", "30", "--view=-0.5,-1,0.5,0",
                           "-o", tmp_path / "v.png", "--device", "cpu")
    assert code == 0 and "30x15" in err  # the region is 20x10 training pixels: its aspect is kept
    code, _, err = run_cli(capsys, "render", tmp_path / "m.npz", "--size", "30", "--view", "-0.5,-1,0.5,0",
                           "-o", tmp_path / "w.png")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--view=" in err
    code, _, err = run_cli(capsys, "render", tmp_path / "m.npz", "--size", "30", "--view", "1,0,0,1",
                           "-o", tmp_path / "w.png")
    assert code == 2 and "x0 < x1" in err
