"""The encoder's learned context model (codec/search/context.py): its loss and gradients, its fit
to a pyramid's latents, the file it writes, and what rate control plans with."""

import numpy as np
import pytest

from ironlearn import codec
from ironlearn.codec.bitstream import sections
from ironlearn.codec.bitstream.entropy import laplace_bits
from ironlearn.codec.model.latents import COLOURS
from ironlearn.codec.search import context
from ironlearn.codec.search.analysis import analyse


def textured(height=96, width=128, seed=0) -> np.ndarray:
    """A picture with edges and texture, in [0, 1]: the latents of a smooth one are too few to fit."""
    rng = np.random.default_rng(seed)
    y, x = np.mgrid[0:height, 0:width] / 16.0
    base = 0.5 + 0.3 * np.sin(x * 1.7 + np.cos(y)) * np.cos(y * 1.3)
    noise = rng.normal(0, 0.08, (height // 4, width // 4)).repeat(4, 0).repeat(4, 1)
    return np.clip(np.stack([base + noise, base * 0.8, 1 - base + noise / 2], -1), 0, 1).astype(np.float32)


def test_symbol_bits_at_mean_zero_are_the_two_number_models_bits():
    values = np.array([0.0, 1, -1, 3, -7, 40])
    for log_scale in (-2.0, 0.0, 1.5):
        bits, _, _ = context.symbol_bits(values, np.zeros(6), np.full(6, log_scale))
        np.testing.assert_allclose(bits, laplace_bits(values, log_scale), rtol=1e-9)


def test_symbol_bits_gradients_match_finite_differences():
    rng = np.random.default_rng(1)
    y = rng.integers(-5, 6, 200).astype(np.float64)
    mean, log_scale = rng.normal(0, 1, 200), rng.normal(0, 1, 200)
    _, d_mean, d_scale = context.symbol_bits(y, mean, log_scale)
    h = 1e-6
    numeric_mean = (context.symbol_bits(y, mean + h, log_scale)[0] - context.symbol_bits(y, mean - h, log_scale)[0]) / (2 * h)
    numeric_scale = (context.symbol_bits(y, mean, log_scale + h)[0] - context.symbol_bits(y, mean, log_scale - h)[0]) / (2 * h)
    np.testing.assert_allclose(d_mean, numeric_mean, atol=1e-4)
    np.testing.assert_allclose(d_scale, numeric_scale, atol=1e-4)


@pytest.fixture(scope="module")
def pyramid():
    return analyse(textured() @ COLOURS[3].T, 0.02, 5)


@pytest.fixture(scope="module")
def fitted(pyramid):
    """The model fitted to ``pyramid`` for 2 s (a quiet machine finds one that pays in a quarter of that)."""
    found = context.fit(pyramid, seconds=2.0)
    assert found is not None, "a textured picture's latents have structure a network finds"
    return found


def test_a_fitted_model_saves_what_it_says_and_decodes_exactly(pyramid, fitted):
    plain, learned = sections.write(pyramid, None), sections.write(pyramid, None, fitted.context)
    saved = 8 * (len(plain) - len(learned))
    # The estimate counts every grid's bits (sampled in the largest) and the model's cost; the coder adds a few words.
    assert saved > 0 and abs(saved - (fitted.saved - fitted.cost)) < 0.05 * 8 * len(plain)
    decoded = codec.read(learned).pyramid
    for mine, theirs in zip(pyramid.latents, decoded.latents):
        np.testing.assert_array_equal(mine, theirs)
    np.testing.assert_array_equal(codec.decode(learned), codec.decode(plain))


def test_the_room_it_plans_with_spends_the_saving_on_the_picture(fitted):
    bits = 50_000.0
    room = fitted.room(bits)
    assert room * (1 - fitted.saving) + fitted.cost == pytest.approx(bits)
    assert fitted.room(fitted.cost / 2) == 0.0


def test_a_model_that_does_not_pay_is_dropped(pyramid, fitted):
    """A network whose outputs are far off costs more than the two numbers everywhere: no grid takes it."""
    wrong = [(np.full_like(q, 300), 0) for q, _ in fitted.context.tensors]
    bad = context.learned.ContextModel(fitted.context.shifts, tuple(wrong), fitted.context.learned)
    assert context.choose(bad, pyramid) is None


def test_compress_writes_the_context_model_where_it_pays():
    picture = np.round(textured(128, 160, seed=3) * 255).astype(np.uint8)
    made = codec.compress_array(picture, bpp=1.0, seconds=6)
    header = sections.read_header(made.data)
    assert made.bpp <= 1.0
    if header.context:  # it pays on this picture at this time: every flagged grid is coded under it
        assert any(flag for flag, in header.context_grids)
    np.testing.assert_array_equal(codec.decode(made.data).shape, picture.shape)


def test_info_says_which_grids_the_context_model_codes(pyramid, fitted, tmp_path, capsys):
    from ironlearn.cli import main

    path = tmp_path / "learned.ilc"
    path.write_bytes(sections.write(pyramid, None, fitted.context))
    assert main(["info", str(path)]) == 0
    grids = sum(fitted.context.learned)
    assert f"a learned context model (width 8) in {grids} of {len(fitted.context.learned)} grids" in capsys.readouterr().out
    assert main(["info", str(path), "--json"]) == 0
    assert f'"grids": {grids}' in capsys.readouterr().out


def test_the_model_trains_on_a_device_whose_steps_copy_nothing(pyramid, monkeypatch):
    """``compress --device cuda``: the sample goes to the device once, the loss and its gradient
    are worked out there (the same as on the host), and the weights come back to the host."""
    from strict_device import guard_every_step, strict_device

    from ironlearn.backend import Backend

    rng = np.random.default_rng(2)
    out = rng.normal(0, 1, (300, 2)).astype(np.float32)
    target = np.stack([rng.integers(-4, 5, 300), rng.normal(0, 1, 300), rng.uniform(0, 2, 300)], 1).astype(np.float32)
    host_loss, host_grad = context.code_length(out, target)
    with strict_device(monkeypatch) as device:
        backend = Backend("cuda")
        loss, grad = context.code_length(backend.asarray(out), backend.asarray(target))
        np.testing.assert_allclose(backend.to_host(loss), host_loss, rtol=1e-6)
        np.testing.assert_allclose(backend.to_host(grad), host_grad, rtol=1e-6)
        guard_every_step(monkeypatch, device, backend)
        found = context.fit(pyramid, seconds=2.0, backend=backend)
    assert found is not None and all(type(q) is np.ndarray for q, _ in found.context.tensors)
    assert sections.write(pyramid, None, found.context)  # a file it writes
