"""The page of a compressed picture (``ironlearn view FILE``): it carries the file's own bytes and
decodes them in the page. In a real browser it must draw what ``ironlearn render FILE`` draws
(within one level in 255), on WebGL2 and on the CPU path, whole and zoomed, gray and RGB, with and
without the codec's MLP, from the operations, numbers (to the bit) and shader of Python's plan of
the picture; it must be about the size of its file; and a page whose file is damaged must say so
instead of drawing.

Files of pictures this small rarely keep an MLP, filters or a context model, so the pictures with
them are a file's picture given random ones (``helpers.with_everything``) and written again: the
"-mlp" pictures' latents are coded under a learned context model (format 7), most grids by
wavefronts under its network, the others under their two numbers.
"""

import base64

import numpy as np
import pytest

from helpers import random_context, run_cli, waves, with_everything
from ironlearn import codec
from ironlearn.cli import main
from ironlearn.codec.bitstream import sections as bitstream
from ironlearn.viewer import render_page
from ironlearn.viewer.page import DECODER_SCRIPTS
from ironlearn.viewer.plan import texture_shape
from picture_oracle import build_picture_plan, picture_shader
from pages import NO_WEBGL2, READY, bare_hash, data_of, photograph, psnr_db, read_rgb, refusal, unpacked

PICTURES = ["rgb", "gray", "rgb-mlp", "gray-mlp"]
SIZE, CPU_SIZE = (128, 96), (48, 40)  # not square, and not the picture's aspect: a swapped axis shows
VIEW = (-0.3, 0.1, 0.2, 0.45)
#: The page's script, styles and shader: what it may hold beyond twice its file.
PAGE_ALLOWANCE = 300_000


def close_enough(drawn, expected) -> bool:
    """At most one level in 255 apart, every pixel and channel."""
    return drawn.shape == expected.shape and int(np.abs(drawn.astype(int) - expected).max()) <= 1


def expected_data(decoded, name: str, file_bytes: int) -> dict:
    """What a page that decoded the file ``name`` (``file_bytes`` long, holding ``decoded``)
    must draw from: Python's plan of the picture, its shader, and the panel's lines."""
    plan, pyramid = build_picture_plan(decoded), decoded.pyramid
    grids = ", ".join(f"{g.shape[2]}x{g.shape[1]}" for g in pyramid.latents)
    filtered = [str(k) for k, found in enumerate(pyramid.filters) if found is not None]
    described = (f"latent pyramid: {pyramid.levels} levels of {decoded.channels} grid(s) ({grids}), "
                 + (f"levels {', '.join(filtered)} filtered, " if filtered else "")
                 + "read by Keys' cubic convolution and summed"
                 + (f"\nplus the MLP's correction: {decoded.net!r}" if decoded.net is not None else ""))
    return {"title": f"{name}: ironlearn viewer", "model": described, "ops": plan.ops, "output": plan.output,
            "texture": list(texture_shape(plan)), "shader": picture_shader(plan), "weights": plan.weights,
            "picture": {"width": decoded.width, "height": decoded.height, "mode": decoded.mode},
            "metrics": {"params": decoded.num_parameters, "bytes": file_bytes,
                        "bpp": 8 * file_bytes / (decoded.width * decoded.height)}}


@pytest.fixture(scope="module")
def pictures(tmp_path_factory):
    """name -> (compressed file, page, Decoded)."""
    folder = tmp_path_factory.mktemp("compressed")
    made = {}
    for mode, channels in (("rgb", 3), ("gray", 1)):
        data = codec.encode(waves(30, 40, channels), bpp=2.0, seconds=0.5)
        for name, data in ((mode, data), (f"{mode}-mlp", with_everything(data))):
            packed, page = folder / f"{name}.ilc", folder / f"{name}.html"
            packed.write_bytes(data)
            assert main(["view", str(packed)]) == 0 and page.exists()  # NAME.html beside NAME.ilc
            made[name] = (packed, page, codec.read(data))
    return made


def reference(picture, size, out, view=None):
    """What ``render FILE`` draws, as RGB bytes."""
    args = ["render", str(picture[0]), "--size", f"{size[0]}x{size[1]}", "-o", str(out)]
    assert main(args + (["--view=" + ",".join(repr(v) for v in view)] if view else [])) == 0
    return read_rgb(out)


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
def test_the_page_decodes_its_file_into_the_plans_numbers_bit_for_bit(browser, pictures, name):
    """The file travels as its bytes and is decoded in the page (filtered, as the codec does): the
    buffer Python's plan packs, to the bit, with its operations and shader."""
    expected = build_picture_plan(pictures[name][2]).weights
    assert np.array_equal(unpacked(browser, pictures[name][1]).view(np.uint32), expected.view(np.uint32))


@pytest.mark.parametrize("name", ["rgb-mlp", "gray-mlp", "rgb"])
def test_the_page_draws_from_pythons_plan(browser, pictures, name):
    packed, page_path, decoded = pictures[name]
    page = browser.new_page()
    try:
        page.goto(page_path.as_uri() + bare_hash((16, 16)))
        page.wait_for_function(READY, timeout=120_000)
        drawn = page.evaluate("""() => { const d = window.ironlearnViewer.data;
            return { title: d.title, model: d.model, ops: d.ops, output: d.output, texture: d.texture, shader: d.shader,
                     picture: d.picture, metrics: d.metrics }; }""")
        title = page.title()
    finally:
        page.close()
    expected = expected_data(decoded, packed.name, packed.stat().st_size)
    for key in ("title", "model", "ops", "output", "texture", "shader", "picture"):
        assert drawn[key] == expected[key], key
    assert drawn["metrics"] == pytest.approx(expected["metrics"]) and title == expected["title"]


#: The page's own reader on the file it carries: each level's grids as lists (null: an empty level).
PAGE_LATENTS = """async () => {
  const data = JSON.parse(document.getElementById("ironlearn-data").textContent);
  const picture = await IL.readIlc(IL.base64Bytes(data.file.data), data.codec);
  return picture.latents.map((level) => level && level.map((grid) => Array.from(grid)));
}"""


def page_latents(browser, page_path) -> list:
    page = browser.new_page()
    try:
        page.goto(page_path.as_uri() + bare_hash((16, 16)))
        page.wait_for_function(f"({READY}) || window.ironlearnViewer.error", timeout=120_000)
        assert page.evaluate("window.ironlearnViewer.error") is None
        return page.evaluate(PAGE_LATENTS)
    finally:
        page.close()


def same_latents(found, pyramid) -> bool:
    return len(found) == pyramid.levels and all(
        (grids is None) == pyramid.is_empty(k)
        and (grids is None or np.array_equal(np.asarray(grids).reshape(pyramid.latents[k].shape), pyramid.latents[k]))
        for k, grids in enumerate(found))


@pytest.mark.parametrize("name", ["rgb-mlp", "gray-mlp"])
def test_the_page_decodes_latents_coded_under_a_context_model_as_python_does(browser, pictures, name):
    packed, page_path, decoded = pictures[name]
    header = codec.read_header(packed.read_bytes())
    learned = [flag for (flag,), grid in zip(header.context_grids, header.grids) if grid[3]]
    assert header.context and 1 in learned and 0 in learned  # both models in use
    assert same_latents(page_latents(browser, page_path), decoded.pyramid)


@pytest.mark.parametrize("channels", [3, 1])
def test_a_photographs_latents_under_a_context_model_decode_as_pythons(browser, tmp_path, channels):
    """Larger grids, every one under the context model and with detail on every level: the page
    draws from Python's latents, to the bit, and as ``render`` draws."""
    picture = photograph_like(72, 96)
    data = codec.encode(picture if channels == 3 else picture[..., :1], bpp=1.0, seconds=1)
    pyramid = codec.read(data).pyramid
    context = random_context(pyramid, seed=channels, learned=[True] * (pyramid.levels * pyramid.channels))
    packed, page = tmp_path / "context.ilc", tmp_path / "context.html"
    packed.write_bytes(bitstream.write(pyramid, None, context))
    assert main(["view", str(packed)]) == 0
    decoded = codec.read(packed.read_bytes())
    assert sum(not decoded.pyramid.is_empty(k) for k in range(pyramid.levels)) >= 3
    assert same_latents(page_latents(browser, page), decoded.pyramid)
    drawn, _, errors = photograph(browser, page, CPU_SIZE, cpu=True)
    assert not errors and close_enough(drawn, read_rgb(_rendered(packed, CPU_SIZE, tmp_path / "expected.png")))


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
    carried = data_of(page)["file"]["data"]
    assert base64.b64decode(carried) == packed.read_bytes()  # the file itself
    assert page_bytes <= 2 * file_bytes + PAGE_ALLOWANCE
    assert page_bytes - len(carried) <= PAGE_ALLOWANCE  # the page's decoder, script and style
    drawn, _, errors = photograph(browser, page, (128, 96))
    assert not errors and close_enough(drawn, read_rgb(_rendered(packed, (128, 96), tmp_path / "expected.png")))


def _rendered(packed, size, out):
    assert main(["render", str(packed), "--size", f"{size[0]}x{size[1]}", "-o", str(out)]) == 0
    return out


def _flip_a_character(text, at):
    return text[:at] + ("A" if text[at] != "A" else "B") + text[at + 1:]


DAMAGE = {  # what goes wrong with the page's file -> how to do it to the base64 of its bytes
    "a changed header byte": lambda text: _flip_a_character(text, 12),
    "a changed section byte": lambda text: _flip_a_character(text, len(text) - 8),
    "a cut file": lambda text: text[:len(text) // 2 // 4 * 4],
    "bytes added": lambda text: text + "AAAA",
    "not base64": lambda text: "%" + text[1:],
}


@pytest.mark.parametrize("damage", DAMAGE)
def test_a_damaged_page_says_so_instead_of_drawing(browser, pictures, tmp_path, damage):
    data = data_of(pictures["rgb-mlp"][1])
    data["file"]["data"] = DAMAGE[damage](data["file"]["data"])
    page = tmp_path / "damaged.html"
    page.write_text(render_page(data), encoding="utf-8")
    error, ready, shown = refusal(browser, page)
    assert not ready and error and "damaged" in error and shown == error


# -- the page and the command, without a browser ---------------------------------------------------
def test_the_page_of_a_compressed_file(tmp_path, capsys, pictures):
    packed, page, decoded = pictures["rgb"]
    data = data_of(page)
    assert data["file"]["name"] == "rgb.ilc" and base64.b64decode(data["file"]["data"]) == packed.read_bytes()
    assert data["title"] == "rgb.ilc: ironlearn viewer" and "rangeDecoder" in data["codec"]
    text = page.read_text(encoding="utf-8")  # the decoder's scripts marked for the worker, and no other
    assert '<script data-file="format.js" data-worker>' in text and text.count(" data-worker>") == len(DECODER_SCRIPTS)
    assert [op["type"] for op in build_picture_plan(decoded).ops] == ["latents", "mix"]
    mlp = build_picture_plan(pictures["gray-mlp"][2])
    assert [op["type"] for op in mlp.ops] == ["latents", "linear", "relu", "linear", "relu", "linear", "mix"]
    assert [term["vector"] for term in mlp.ops[-1]["terms"]] == [1, 4]  # the levels, and the MLP's output
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
