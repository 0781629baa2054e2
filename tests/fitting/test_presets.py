"""Every fitting preset learns a small picture well beyond what a constant (or broken) model scores."""

import numpy as np
import pytest

from helpers import make_picture
from ironlearn.image import load_picture, psnr, render
from ironlearn.image.coords import pixel_grid
from ironlearn.nn import mse
from ironlearn.optim import Adam, cosine
from ironlearn.fitting import PRESETS
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
