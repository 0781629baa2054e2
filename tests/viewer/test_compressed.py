"""The page of a compressed picture (``ironlearn view FILE``): in a real browser it must draw what
``ironlearn render FILE`` draws, on WebGL2 and on the CPU path, whole and zoomed, gray and RGB,
with and without the codec's MLP.

Files of pictures this small rarely keep an MLP, so the pictures with one are a file's
``Decoded`` given a random MLP (``helpers.with_mlp``), paged by ``picture_payload`` and compared
with ``Decoded.render``, which ``render FILE`` runs.
"""

import numpy as np
import pytest

from helpers import run_cli, waves, with_filters, with_mlp
from ironlearn import codec
from ironlearn.cli import main
from ironlearn.image.io import to_uint8
from ironlearn.viewer import picture_payload, render_page
from pages import MIN_PSNR_DB, NO_WEBGL2, data_of, photograph, psnr_db, read_rgb

PICTURES = ["rgb", "gray", "rgb-mlp", "gray-mlp"]
SIZE, CPU_SIZE = (128, 96), (48, 40)  # not square, and not the picture's aspect: a swapped axis shows
VIEW = (-0.3, 0.1, 0.2, 0.45)


@pytest.fixture(scope="module")
def pictures(tmp_path_factory):
    """name -> (compressed file or None, page, Decoded)."""
    folder = tmp_path_factory.mktemp("compressed")
    made = {}
    for name, channels in (("rgb", 3), ("gray", 1)):
        data = codec.encode(waves(30, 40, channels), bpp=2.0, seconds=0.5)
        packed, page = folder / f"{name}.ilc", folder / f"{name}.html"
        packed.write_bytes(data)
        assert main(["view", str(packed)]) == 0 and page.exists()  # NAME.html beside NAME.ilc
        made[name] = (packed, page, codec.read(data))
        decoded = with_mlp(with_filters(codec.read(data)))  # and filters on three levels
        page = folder / f"{name}-mlp.html"
        page.write_text(render_page(picture_payload(decoded, f"{name}-mlp")), encoding="utf-8")
        made[f"{name}-mlp"] = (None, page, decoded)
    return made


def reference(picture, size, out, view=None):
    """What ``render FILE`` draws (a file), or ``Decoded.render`` (a picture given an MLP), as RGB bytes."""
    packed, _, decoded = picture
    if packed is not None:
        args = ["render", str(packed), "--size", f"{size[0]}x{size[1]}", "-o", str(out)]
        assert main(args + (["--view=" + ",".join(repr(v) for v in view)] if view else [])) == 0
        return read_rgb(out)
    pixels = to_uint8(decoded.render(size[1], size[0], view))
    return np.repeat(pixels[..., None], 3, axis=-1) if pixels.ndim == 2 else pixels


@pytest.mark.parametrize("name", PICTURES)
def test_the_shader_draws_what_render_draws(browser, pictures, tmp_path, name):
    drawn, mode, errors = photograph(browser, pictures[name][1], SIZE)
    expected = reference(pictures[name], SIZE, tmp_path / "expected.png")
    assert mode == "webgl2" and not errors
    assert drawn.shape == expected.shape
    assert psnr_db(drawn, expected) >= MIN_PSNR_DB


@pytest.mark.parametrize("name", PICTURES)
def test_a_zoomed_view_draws_what_render_view_draws(browser, pictures, tmp_path, name):
    drawn, _, errors = photograph(browser, pictures[name][1], SIZE, view=VIEW)
    expected = reference(pictures[name], SIZE, tmp_path / "expected.png", view=VIEW)
    assert not errors and psnr_db(drawn, expected) >= MIN_PSNR_DB
    assert psnr_db(drawn, reference(pictures[name], SIZE, tmp_path / "whole.png")) < 25  # another picture


@pytest.mark.parametrize("name", PICTURES)
def test_the_cpu_path_draws_what_render_draws(browser, pictures, tmp_path, name):
    drawn, mode, errors = photograph(browser, pictures[name][1], CPU_SIZE, cpu=True)
    assert mode == "cpu" and not errors
    assert psnr_db(drawn, reference(pictures[name], CPU_SIZE, tmp_path / "expected.png")) >= MIN_PSNR_DB


def test_without_webgl2_the_cpu_draws_the_view(browser, pictures, tmp_path):
    drawn, mode, errors = photograph(browser, pictures["rgb-mlp"][1], CPU_SIZE, view=VIEW, init_script=NO_WEBGL2)
    assert mode == "cpu" and not errors
    assert psnr_db(drawn, reference(pictures["rgb-mlp"], CPU_SIZE, tmp_path / "expected.png", view=VIEW)) >= MIN_PSNR_DB


def test_the_mlp_is_drawn(browser, pictures):
    """The pictures with an MLP differ from those without, on the page too."""
    with_net, _, _ = photograph(browser, pictures["rgb-mlp"][1], CPU_SIZE)
    without, _, _ = photograph(browser, pictures["rgb"][1], CPU_SIZE)
    assert psnr_db(with_net, without) < 30


# -- the page and the command, without a browser ---------------------------------------------------
def test_the_page_of_a_compressed_file(tmp_path, capsys, pictures):
    packed, page, decoded = pictures["rgb"]
    data = data_of(page)
    assert [op["type"] for op in data["ops"]] == ["latents", "mix"]
    assert data["picture"] == {"width": 40, "height": 30, "mode": "rgb"}
    assert data["metrics"]["bytes"] == packed.stat().st_size and data["metrics"]["params"] == decoded.num_parameters
    mlp = picture_payload(pictures["gray-mlp"][2])
    assert [op["type"] for op in mlp["ops"]] == ["latents", "linear", "relu", "linear", "relu", "linear", "mix"]
    assert [term["vector"] for term in mlp["ops"][-1]["terms"]] == [1, 4]  # the levels, and the MLP's output
    # A page ironlearn wrote is rewritten; -o to a file of the user's needs --force; one line for bad input.
    assert run_cli(capsys, "view", packed)[0] == 0
    (tmp_path / "mine.html").write_text("mine")
    code, _, err = run_cli(capsys, "view", packed, "-o", tmp_path / "mine.html")
    assert code == 2 and "already exists" in err and (tmp_path / "mine.html").read_text() == "mine"
    code, _, err = run_cli(capsys, "view", packed, "--with-picture", "-o", tmp_path / "p.html")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "training picture" in err
    broken = tmp_path / "broken.ilc"
    broken.write_bytes(packed.read_bytes()[:-4])
    code, _, err = run_cli(capsys, "view", broken)
    assert code == 2 and len(err.strip().splitlines()) == 1 and "broken.ilc" in err
    assert not (tmp_path / "broken.html").exists()
