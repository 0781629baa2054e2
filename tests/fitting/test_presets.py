"""Every fitting preset learns a small picture well beyond what a constant (or broken) model scores."""

import numpy as np
import pytest

from helpers import make_picture, waves
from ironlearn.image import load_picture, psnr, render
from ironlearn.image.coords import pixel_grid
from ironlearn.nn import mse
from ironlearn.optim import Adam, cosine
from ironlearn.backend import get_backend
from ironlearn.fitting import PRESETS
from ironlearn.fitting.start import START_CLIP, start_from_picture
from ironlearn.train import Trainer

# Steps each preset gets (about a second each on 2 cores) and the PSNR it must pass.
BUDGET = {"hashgrid": (200, 15), "siren": (300, 15), "fourier": (400, 10), "mlp": (400, 5), "classic": (200, 8)}


@pytest.fixture(scope="module")
def picture(tmp_path_factory):
    return load_picture(make_picture(tmp_path_factory.mktemp("p") / "disc.png"))


@pytest.mark.parametrize("name", sorted(PRESETS))
def test_preset_learns_the_picture(name, picture, backend):
    preset = PRESETS[name]
    options = preset.resolve({}, picture.width, picture.height, picture.mode)
    model = preset.build(1, options, np.random.default_rng(0)).to(backend)
    x = backend.asarray(pixel_grid(picture.width, picture.height))
    y = backend.asarray(picture.pixels.reshape(-1, 1))
    steps, margin = BUDGET[name]
    before = psnr(render(model, picture.width, picture.height, backend), picture.pixels)
    Trainer(model, Adam(model.named_parameters(), lr=cosine(preset.lr, preset.lr_min, steps)), mse, x, y).run(steps)
    after = psnr(render(model, picture.width, picture.height, backend), picture.pixels)
    constant = psnr(np.full_like(picture.pixels, picture.pixels.mean()), picture.pixels)
    print(f"{name}: untrained {before:.1f} dB, constant {constant:.1f} dB, trained {after:.1f} dB")
    assert after > constant + margin and after > before + margin


@pytest.fixture(scope="module")
def photograph(tmp_path_factory):
    """A 300x200 colour picture: past the thumbnails' 256 px, so it gets a vertex per pixel."""
    from PIL import Image
    from helpers import waves
    path = tmp_path_factory.mktemp("photo") / "waves.png"
    Image.fromarray(waves(200, 300, 3)).save(path)
    return load_picture(path)


def test_a_vertex_per_pixel_starts_as_the_picture(photograph):
    preset = PRESETS["hashgrid"]
    options = preset.resolve({}, photograph.width, photograph.height, photograph.mode)
    model = preset.build(3, options, np.random.default_rng(0))
    assert start_from_picture(model, photograph)
    # The level holds the B-spline coefficients of the picture's logits, so the untrained model
    # passes through every pixel, edges included (pixels clipped to [START_CLIP, 1 - START_CLIP]).
    drawn = render(model, photograph.width, photograph.height, get_backend("cpu"))
    np.testing.assert_allclose(drawn, np.clip(photograph.pixels, START_CLIP, 1 - START_CLIP), atol=2e-5)


def test_past_the_vertex_cap_the_level_starts_as_the_picture_resized_to_it(photograph, monkeypatch):
    """Past PIXEL_SPLINE_PIXELS (2^24, here made 2^14) the level has fewer vertices than the picture
    has pixels, in its proportions, and starts as the picture resized to them: the model then
    passes through the resized picture at its own size, and draws it as a spline at the picture's."""
    from ironlearn.fitting import regimes
    from ironlearn.image.io import resized_channels

    monkeypatch.setattr(regimes, "PIXEL_SPLINE_PIXELS", 1 << 14)
    across, down = regimes.spline_sides(photograph.width, photograph.height)
    assert (across, down) == (156, 104) and across * down <= 1 << 14  # 300x200 scaled by 0.52
    options = PRESETS["hashgrid"].resolve({}, photograph.width, photograph.height, photograph.mode)
    assert (options["finest"], options["finest_y"], options["levels"], options["depth"]) == (156, 104, 1, 0)
    model = PRESETS["hashgrid"].build(3, options, np.random.default_rng(0))
    assert start_from_picture(model, photograph)
    small = resized_channels(photograph.values, across, down, in_8_bits=True)
    drawn = render(model, across, down, get_backend("cpu"))
    np.testing.assert_allclose(drawn, np.clip(small, START_CLIP, 1 - START_CLIP), atol=2e-5)
    # At the picture's size: about what bicubic upscaling of the resized picture draws.
    from PIL import Image
    upscaled = [np.asarray(Image.fromarray(small[..., c]).resize((300, 200), Image.BICUBIC)) for c in range(3)]
    bicubic = psnr(np.clip(np.stack(upscaled, -1), 0, 1), photograph.pixels)
    whole = psnr(render(model, photograph.width, photograph.height, get_backend("cpu")), photograph.pixels)
    print(f"whole {whole:.2f} dB, bicubic {bicubic:.2f}")
    assert whole > bicubic - 0.5


@pytest.mark.parametrize("given", [{"depth": 2}, {"features": 2}, {"levels": 2}])
def test_other_layouts_start_as_built(photograph, given):
    preset = PRESETS["hashgrid"]
    options = preset.resolve(given, photograph.width, photograph.height, photograph.mode)
    model = preset.build(3, options, np.random.default_rng(0))
    before = {name: p.copy() for name, p in model.named_parameters().items()}
    assert not start_from_picture(model, photograph)
    assert all(np.array_equal(before[name], p) for name, p in model.named_parameters().items())


def test_a_linear_head_ends_in_a_sigmoid():
    model = PRESETS["hashgrid"].build(1, PRESETS["hashgrid"].resolve({"depth": 0}, 64, 64, "gray"),
                                      np.random.default_rng(0))
    assert [type(layer).__name__ for layer in model.layers] == ["HashGrid", "Linear", "Sigmoid"]


@pytest.mark.parametrize("start, low, high", [("picture", 45, 200), ("random", 0, 30)])
def test_a_fit_starts_as_the_picture_unless_asked_to_start_random(photograph, tmp_path, start, low, high):
    from ironlearn import fit
    run = fit(photograph.source, tmp_path / start, steps=1, start=start)
    assert low < run.metrics["psnr_db"] < high
    # A model that starts as the picture has no learning to show: no time-lapse, and a note says so.
    # (frames.npz, the frames kept for a resume, goes once the run reaches its end.)
    kept = (tmp_path / start / "timelapse.gif").exists(), (tmp_path / start / "frames.npz").exists()
    assert kept == ((False, False) if start == "picture" else (True, False))


def test_the_note_on_a_missing_time_lapse_says_how_to_get_one(photograph, tmp_path, capsys):
    from helpers import run_cli

    code, _, err = run_cli(capsys, "fit", photograph.source, "--out", tmp_path / "run", "--steps", 2)
    assert code == 0 and "no time-lapse" in err and "--start random" in err


@pytest.mark.parametrize("mode, width, height, given", [
    ("rgb", 300, 200, {}), ("gray", 300, 200, {}), ("rgb", 257, 400, {}), ("gray", 200, 200, {}),
    ("rgb", 200, 200, {}), ("binary", 300, 300, {}), ("rgb", 300, 200, {"vertices": "corners"}),
    ("rgb", 300, 200, {"log2_table_size": 12}), ("rgb", 300, 200, {"features": 2}),
    ("gray", 200, 200, {"depth": 0}), ("rgb", 300, 200, {"interpolation": "linear"})])
def test_the_plan_knows_which_models_start_as_the_picture(mode, width, height, given):
    from ironlearn.fitting.regimes import vertex_per_pixel
    from ironlearn.fitting.start import pixel_spline_layout

    options = PRESETS["hashgrid"].resolve(given, width, height, mode)
    channels = 3 if mode == "rgb" else 1
    model = PRESETS["hashgrid"].build(channels, options, np.random.default_rng(0))
    assert vertex_per_pixel(options, width, height, channels) == pixel_spline_layout(model, width, height, channels)


def test_a_picture_larger_than_a_batch_trains_a_tile_a_step_with_its_head_held(photograph, tmp_path):
    from ironlearn import fit
    from ironlearn.fitting.start import held_parameters
    from ironlearn.fitting import FitOptions, make_plan

    plan = make_plan(FitOptions(photograph.source, batch_size=4096, steps=10), photograph)
    assert plan.trains_tiles  # 60,000 pixels in batches of 4,096: 15 tiles of 80 x 50
    run = fit(photograph.source, tmp_path / "picture", steps=40, batch_size=4096)
    assert held_parameters(plan, run.model) == ("layers.1.weight", "layers.1.bias")
    head = run.model.layers[1].params
    np.testing.assert_array_equal(head["weight"], np.eye(3))  # held: the vertices hold the picture
    np.testing.assert_array_equal(head["bias"], 0)
    assert run.metrics["psnr_db"] > 45
    # From a random start the head trains (its gain speeds the vertices' way to their logits), and
    # a resumed run goes on as it started.
    random = fit(photograph.source, tmp_path / "random", steps=20, batch_size=4096, start="random")
    assert random.settings["start"] == "random"
    again = fit(photograph.source, tmp_path / "random", steps=40, resume=True)
    moved = np.abs(again.model.layers[1].params["weight"] - random.model.layers[1].params["weight"]).max()
    assert moved > 1e-3


def test_a_model_that_starts_as_the_picture_keeps_its_start_unless_asked_to_train(tmp_path, capsys):
    """Its start redraws every 8-bit pixel as it is, black and white included, so a fit of no
    given length does not train (a 2560x1600 photograph spent 40 s gaining 0.03 dB); its
    checkpoint holds the model alone, and a resume given steps trains from it."""
    from PIL import Image
    from helpers import run_cli
    from ironlearn import npz
    from ironlearn.train import checkpoint

    pixels = waves(200, 300, 3)
    pixels[:20, :30] = 0  # clipped at the start: they must still round to 0 and 255
    pixels[-20:, -30:] = 255
    Image.fromarray(pixels).save(tmp_path / "photo.png")
    out = tmp_path / "run"
    code, _, err = run_cli(capsys, "fit", tmp_path / "photo.png", "--out", out)
    assert code == 0 and "does not train" in err and "--steps" in err and "--start random" in err
    assert checkpoint.read_meta(out / "model.npz")["settings"]["metrics"]["steps"] == 0
    np.testing.assert_array_equal(np.asarray(Image.open(out / "reconstruction.png")), pixels)
    with npz.open_npz(out / "checkpoint.npz", deflated=False) as archive:
        assert not [name for name in archive.members if name.startswith("optim/")]  # no moments at step 0
    assert not (out / "loss.png").exists() and not (out / "timelapse.gif").exists()
    code, _, err = run_cli(capsys, "fit", tmp_path / "photo.png", "--out", out, "--resume")
    assert code == 2 and "never trained" in err and "--steps" in err and "Traceback" not in err
    code, _, err = run_cli(capsys, "fit", tmp_path / "photo.png", "--out", out, "--resume", "--steps", 3)
    assert code == 0 and checkpoint.read_meta(out / "model.npz")["settings"]["metrics"]["steps"] == 3
    # Asked for a length, a new fit trains as asked.
    code, _, err = run_cli(capsys, "fit", tmp_path / "photo.png", "--out", tmp_path / "asked", "--steps", 2)
    assert code == 0 and checkpoint.read_meta(tmp_path / "asked" / "model.npz")["settings"]["metrics"]["steps"] == 2
