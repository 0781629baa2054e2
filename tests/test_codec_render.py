"""A compressed picture drawn like a model: any size, any region of the [-1, 1] square
(``render FILE``, ``decompress --view``, ``ironlearn.load`` and ``ironlearn.render``).

A region is a crop of a larger drawing at the same pixel pitch; the whole picture stays what it
was before regions existed (``test_codec.py`` checks what it decodes to).
"""

import numpy as np
import pytest
from PIL import Image

import ironlearn
from helpers import run_cli, waves, with_mlp
from ironlearn import codec
from ironlearn.codec.model.latents import taps, upsample, upsampling


@pytest.fixture(scope="module", params=[3, 1], ids=["rgb", "gray"])
def data(request):
    return codec.encode(waves(30, 40, request.param), bpp=2.0, seconds=0.5)


def test_a_region_of_the_upsampling_is_rows_of_a_larger_one():
    whole = upsampling(60, 20, 2)
    np.testing.assert_allclose(upsampling(15, 20, 2, (5.0, 10.0)), whole[15:30], atol=1e-6)
    np.testing.assert_array_equal(upsampling(37, 20, 1, (0.0, 20.0)), upsampling(37, 20, 1))


@pytest.mark.parametrize("span", [None, (3.0, 17.5)])
def test_four_taps_a_band_are_the_dense_matrices_product(span):
    """Rendering gathers four cells an axis (its work grows with the output); the analysis
    uses the same reading as dense matrices: the two agree, on any band of rows."""
    grids = np.random.default_rng(0).normal(size=(3, 9, 12)).astype(np.float32)
    dense = upsampling(50, 36, 2, span) @ grids @ upsampling(70, 48, 2, span).T
    index_y, weight_y = taps(50, 36, 2, span)
    for rows in (slice(None), slice(0, 1), slice(13, 31), slice(49, 50)):
        drawn = upsample(grids, (index_y[rows], weight_y[rows]), taps(70, 48, 2, span))
        np.testing.assert_allclose(drawn, dense[:, rows], atol=1e-5)


@pytest.mark.parametrize("mlp", [False, True], ids=["pyramid", "mlp"])
def test_a_view_is_a_crop_of_a_larger_drawing(data, mlp):
    decoded = codec.read(data)
    if mlp:
        with_mlp(decoded)
        assert np.abs(decoded.render() - codec.read(data).render()).mean() > 0.02  # it changes the picture
    whole = decoded.render(60, 80)  # twice the picture's size
    np.testing.assert_array_equal(decoded.render(60, 80, view=(-1, -1, 1, 1)), whole)
    np.testing.assert_allclose(decoded.render(30, 40, view=(0, 0, 1, 1)), whole[30:, 40:], atol=1e-5)
    strip = decoded.redraw(scale=2, view=(-0.5, -1, 0, 1))  # a quarter of the width, all of the height
    assert strip.shape == (60, 20, decoded.channels)
    np.testing.assert_allclose(strip, whole[:, 20:40], atol=1e-5)


def test_views_that_leave_the_picture_are_refused(data):
    decoded = codec.read(data)
    for view in [(-1.5, -1, 1, 1), (0, 0, 1, 1.01), (0.5, 0, 0.5, 1)]:
        with pytest.raises(ValueError, match="leaves the picture"):
            decoded.render(10, 10, view=view)


def test_render_draws_what_decompress_draws(tmp_path, capsys, data):
    packed = tmp_path / "p.ilc"
    packed.write_bytes(data)
    for how in (["--size", "70"], ["--scale", "1.5"], ["--size", "50", "--view=-0.5,-0.5,0.5,1"]):
        assert run_cli(capsys, "render", packed, *how, "-o", tmp_path / "r.png", "--force")[0] == 0
        assert run_cli(capsys, "decompress", packed, *how, "-o", tmp_path / "d.png", "--force")[0] == 0
        rendered, decompressed = np.asarray(Image.open(tmp_path / "r.png")), np.asarray(Image.open(tmp_path / "d.png"))
        np.testing.assert_array_equal(rendered, decompressed)
    assert rendered.shape[:2] == (50, 44)  # the region is 20x22.5 of the picture's pixels: its aspect kept
    expected = np.round(codec.read(data).redraw(50, view=(-0.5, -0.5, 0.5, 1)) * 255)
    assert np.abs(rendered.reshape(expected.shape) - expected).max() <= 1


def test_decompress_view_is_a_crop_at_the_pictures_pitch(tmp_path, capsys, data):
    packed = tmp_path / "p.ilc"
    packed.write_bytes(data)
    assert run_cli(capsys, "decompress", packed, "-o", tmp_path / "whole.png")[0] == 0
    code, _, err = run_cli(capsys, "decompress", packed, "--view", "0,0,1,1", "-o", tmp_path / "corner.png")
    assert code == 0 and "(20x15)" in err
    corner, whole = np.asarray(Image.open(tmp_path / "corner.png")), np.asarray(Image.open(tmp_path / "whole.png"))
    np.testing.assert_array_equal(corner, whole[15:, 20:])


def test_bad_files_and_views_are_one_line_and_exit_2(tmp_path, capsys, data):
    packed, broken = tmp_path / "p.ilc", tmp_path / "broken.ilc"
    packed.write_bytes(data)
    broken.write_bytes(data[:-5])
    for command in ("render", "decompress"):
        code, _, err = run_cli(capsys, command, broken, "--size", "20", "-o", tmp_path / "x.png")
        assert code == 2 and len(err.strip().splitlines()) == 1 and "broken.ilc" in err
        code, _, err = run_cli(capsys, command, packed, "--size", "20", "--view=-1.2,0,0,1", "-o", tmp_path / "x.png")
        assert code == 2 and len(err.strip().splitlines()) == 1 and "leaves the picture" in err
        assert not (tmp_path / "x.png").exists()
    code, _, err = run_cli(capsys, "render", packed, "--size", "70000", "-o", tmp_path / "x.png")
    assert code == 2 and "limit" in err


def test_load_and_render_take_a_compressed_file(tmp_path, data):
    packed = tmp_path / "p.ilc"
    packed.write_bytes(data)
    loaded = ironlearn.load(packed)
    assert isinstance(loaded, ironlearn.CompressedFile) and loaded.size == (40, 30)
    np.testing.assert_array_equal(loaded.redraw(), codec.read(data).render())  # its own size
    big = ironlearn.render(loaded, scale=2)
    assert big.shape == (60, 80, loaded.channels) and big.dtype == np.float32
    np.testing.assert_array_equal(big, codec.read(data).render(60, 80))
    corner = ironlearn.render(str(packed), size=40, view=(0, 0, 1, 1))  # a path, loaded on the way
    np.testing.assert_allclose(corner, big[30:, 40:], atol=1e-5)
    with pytest.raises(ValueError, match="leaves the picture"):
        ironlearn.render(loaded, size=20, view=(0, 0, 2, 1))
