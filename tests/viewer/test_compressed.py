"""The page of a compressed picture (``ironlearn view FILE``): in a real browser it must draw what
``ironlearn render FILE`` draws (within one level in 255), on WebGL2 and on the CPU path, whole
and zoomed, gray and RGB, with and without the codec's MLP; it must be about the size of its
file; and a page whose numbers are damaged must say so instead of drawing.

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
from ironlearn.viewer import build_picture_plan, picture_payload, render_page
from pages import NO_WEBGL2, data_of, photograph, psnr_db, read_rgb, refusal, unpacked

PICTURES = ["rgb", "gray", "rgb-mlp", "gray-mlp"]
SIZE, CPU_SIZE = (128, 96), (48, 40)  # not square, and not the picture's aspect: a swapped axis shows
VIEW = (-0.3, 0.1, 0.2, 0.45)
#: The page's script, styles and shader: what it may hold beyond twice its file.
PAGE_ALLOWANCE = 300_000


def close_enough(drawn, expected) -> bool:
    """At most one level in 255 apart, every pixel and channel."""
    return drawn.shape == expected.shape and int(np.abs(drawn.astype(int) - expected).max()) <= 1


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
    assert close_enough(drawn, expected)


@pytest.mark.parametrize("name", PICTURES)
def test_a_zoomed_view_draws_what_render_view_draws(browser, pictures, tmp_path, name):
    drawn, _, errors = photograph(browser, pictures[name][1], SIZE, view=VIEW)
    expected = reference(pictures[name], SIZE, tmp_path / "expected.png", view=VIEW)
    assert not errors and close_enough(drawn, expected)
    assert psnr_db(drawn, reference(pictures[name], SIZE, tmp_path / "whole.png")) < 25  # another picture


@pytest.mark.parametrize("name", PICTURES)
def test_the_cpu_path_draws_what_render_draws(browser, pictures, tmp_path, name):
    drawn, mode, errors = photograph(browser, pictures[name][1], CPU_SIZE, cpu=True)
    assert mode == "cpu" and not errors
    assert close_enough(drawn, reference(pictures[name], CPU_SIZE, tmp_path / "expected.png"))


def test_without_webgl2_the_cpu_draws_the_view(browser, pictures, tmp_path):
    drawn, mode, errors = photograph(browser, pictures["rgb-mlp"][1], CPU_SIZE, view=VIEW, init_script=NO_WEBGL2)
    assert mode == "cpu" and not errors
    assert close_enough(drawn, reference(pictures["rgb-mlp"], CPU_SIZE, tmp_path / "expected.png", view=VIEW))


def test_the_mlp_is_drawn(browser, pictures):
    """The pictures with an MLP differ from those without, on the page too."""
    with_net, _, _ = photograph(browser, pictures["rgb-mlp"][1], CPU_SIZE)
    without, _, _ = photograph(browser, pictures["rgb"][1], CPU_SIZE)
    assert psnr_db(with_net, without) < 30


@pytest.mark.parametrize("name", ["rgb-mlp", "gray"])
def test_the_page_unpacks_the_plans_numbers_bit_for_bit(browser, pictures, name):
    """The grids travel as integers and are computed in the page (filtered, as the codec does);
    the MLP and the mix travel as floats: together, the buffer the plan packs, to the bit."""
    expected = build_picture_plan(pictures[name][2]).weights
    assert np.array_equal(unpacked(browser, pictures[name][1]).view(np.uint32), expected.view(np.uint32))


def photograph_like(height, width, seed=0):
    """Waves, a disc, and a texture of 4 x 4 blocks: more like a photograph to the codec than waves
    alone (its file keeps detail on every level)."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width] / max(height, width)
    picture = waves(height, width, 3, seed) / 255.0
    picture[((x - 0.4) ** 2 + (y - 0.35) ** 2) < 0.04] = [0.8, 0.3, 0.2]
    blocks = rng.normal(size=(height // 4 + 1, width // 4 + 1, 3)).repeat(4, 0).repeat(4, 1)[:height, :width]
    return np.clip(np.round((picture + 0.04 * blocks) * 255), 0, 255).astype(np.uint8)


def test_a_page_is_about_the_size_of_its_file(browser, tmp_path):
    packed, page = tmp_path / "photo.ilc", tmp_path / "photo.html"
    packed.write_bytes(codec.encode(photograph_like(192, 256), bpp=1.0, seconds=2))
    assert main(["view", str(packed)]) == 0
    file_bytes, page_bytes = packed.stat().st_size, page.stat().st_size
    numbers = len(data_of(page)["weights"]["deflate"])
    assert page_bytes <= 2 * file_bytes + PAGE_ALLOWANCE
    assert numbers <= 2 * file_bytes and page_bytes - numbers <= PAGE_ALLOWANCE  # the numbers alone, too
    drawn, _, errors = photograph(browser, page, (128, 96))
    assert not errors and close_enough(drawn, read_rgb(_rendered(packed, (128, 96), tmp_path / "expected.png")))


def _rendered(packed, size, out):
    assert main(["render", str(packed), "--size", f"{size[0]}x{size[1]}", "-o", str(out)]) == 0
    return out


def _flip_a_character(deflate):
    middle = len(deflate) // 2
    return deflate[:middle] + ("A" if deflate[middle] != "A" else "B") + deflate[middle + 1:]


DAMAGE = {  # what goes wrong with the page's numbers -> how to do it to a payload's "weights"
    "a changed byte": lambda w: {**w, "deflate": _flip_a_character(w["deflate"])},
    "a cut stream": lambda w: {**w, "deflate": w["deflate"][:len(w["deflate"]) // 2 // 4 * 4]},
    "not base64": lambda w: {**w, "deflate": "%" + w["deflate"][1:]},
    "a wrong length": lambda w: {**w, "bytes": w["bytes"] + 1},
    "a grid's count": lambda w: {**w, "parts": [{**p, "nonzero": [n + 1 for n in p["nonzero"]]} if p["type"] == "grid"
                                                else p for p in w["parts"]]},
}


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_page_says_so_instead_of_drawing(browser, pictures, tmp_path, damage):
    data = data_of(pictures["rgb-mlp"][1])
    data["weights"] = DAMAGE[damage](data["weights"])
    page = tmp_path / "damaged.html"
    page.write_text(render_page(data), encoding="utf-8")
    error, ready, shown = refusal(browser, page)
    assert not ready and error and "damaged" in error and shown == error


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
