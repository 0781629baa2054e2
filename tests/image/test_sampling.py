"""Training on samples of a picture: seeded, exact at pixel centres, bounded in memory."""

import math
import tracemalloc

import numpy as np
import pytest

from ironlearn.backend import Backend
from ironlearn.image import psnr, render
from ironlearn.image.io import Picture
from ironlearn.image.metrics import BandScore
from ironlearn.image.coords import pixel_grid
from ironlearn.image.sampling import FILTERS, SPLINE_HALF, EveryPixel, PictureSampler, TileSampler, uniform
from ironlearn.nn import hashgrid, mse
from ironlearn.optim import Adam
from ironlearn.train import Trainer


def photo(height=24, width=40, channels=3, dtype=np.uint8, seed=0):
    values = np.random.default_rng(seed).uniform(size=(height, width, channels))
    return (values * 255).astype(np.uint8) if dtype == np.uint8 else values.astype(np.float32)


@pytest.mark.parametrize("kind", [kind for kind in FILTERS if kind != "spline"])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_targets_equal_the_pixels_at_pixel_centres(kind, dtype):
    values = photo(dtype=dtype)
    sampler = PictureSampler(values, 10, kind=kind)
    rows, cols = np.mgrid[0:24, 0:40]
    targets = sampler.targets((cols.ravel() + 0.5).astype(np.float32), (rows.ravel() + 0.5).astype(np.float32))
    expected = values.reshape(-1, 3) / (255.0 if dtype == np.uint8 else 1.0)
    np.testing.assert_allclose(targets, expected, atol=1e-6)


def reference_target(values, x: float, y: float, kind: str) -> np.ndarray:
    """The filtered picture at one position, in float64, written out tap by tap: separable
    weights along each axis (Lanczos' normalised to sum 1), taps clamped at the edges."""
    def taps(u, n):
        u -= 0.5
        base = math.floor(u)
        t = u - base
        if kind == "bilinear":
            pairs = [(0, 1 - t), (1, t)]
        elif kind == "bicubic":
            a = -0.5
            def keys(d):
                d = abs(d)
                return (a + 2) * d**3 - (a + 3) * d**2 + 1 if d <= 1 else a * d**3 - 5 * a * d**2 + 8 * a * d - 4 * a
            pairs = [(o, keys(t - o)) for o in (-1, 0, 1, 2)]
        else:
            pairs = [(o, float(np.sinc(t - o) * np.sinc((t - o) / 3))) for o in range(-2, 4)]
            total = sum(w for _, w in pairs)
            pairs = [(o, w / total) for o, w in pairs]
        return [(min(max(base + o, 0), n - 1), w) for o, w in pairs]

    height, width, _ = values.shape
    out = sum(wy * wx * values[iy, ix].astype(np.float64)
              for iy, wy in taps(y, height) for ix, wx in taps(x, width))
    return np.clip(out / (255.0 if values.dtype == np.uint8 else 1.0), 0, 1)


@pytest.mark.parametrize("kind", ["lanczos", "bicubic", "bilinear"])
@pytest.mark.parametrize("channels", [1, 3])
def test_targets_between_pixels_are_the_filter_written_out(kind, channels):
    values = photo(channels=channels)
    rng = np.random.default_rng(7)
    # Anywhere, the edges and corners (taps clamped) included.
    px = np.concatenate([rng.uniform(0, 40, 200), [0.0, 0.2, 39.9, 39.999, 20.5]]).astype(np.float32)
    py = np.concatenate([rng.uniform(0, 24, 200), [0.0, 23.99, 0.1, 12.25, 23.5]]).astype(np.float32)
    targets = PictureSampler(values, 10, kind=kind).targets(px, py)
    expected = np.array([reference_target(values, float(x), float(y), kind) for x, y in zip(px, py)])
    assert targets.shape == (len(px), channels) and targets.dtype == np.float32
    np.testing.assert_allclose(targets, expected, atol=2e-6)


def reference_spline(values, x: float, y: float) -> np.ndarray:
    """The ``spline`` filter at one position, in float64, written out: the interpolating
    coefficients solved as a dense system along each axis (the B-spline weighs a vertex and its
    neighbours 1/6, 4/6, 1/6, the edge vertex repeated past the edge), halfway to the pixels, then
    read tap by tap."""
    pixels = values.astype(np.float64) / (255.0 if values.dtype == np.uint8 else 1.0)

    def system(n):
        matrix = np.zeros((n, n))
        for i in range(n):
            for offset, weight in ((-1, 1 / 6), (0, 4 / 6), (1, 1 / 6)):
                matrix[i, min(max(i + offset, 0), n - 1)] += weight
        return matrix

    height, width, _ = pixels.shape
    through = np.linalg.solve(system(height), pixels.reshape(height, -1)).reshape(pixels.shape)
    through = np.linalg.solve(system(width), through.transpose(1, 0, 2).reshape(width, -1))
    through = through.reshape(width, height, -1).transpose(1, 0, 2)
    vertices = SPLINE_HALF * through + (1 - SPLINE_HALF) * pixels

    def taps(u, n):
        u -= 0.5
        base = math.floor(u)
        t = u - base
        weights = ((1 - t) ** 3 / 6, (3 * t**3 - 6 * t**2 + 4) / 6, (-3 * t**3 + 3 * t**2 + 3 * t + 1) / 6, t**3 / 6)
        return [(min(max(base + o, 0), n - 1), w) for o, w in zip((-1, 0, 1, 2), weights)]

    out = sum(wy * wx * vertices[iy, ix] for iy, wy in taps(y, height) for ix, wx in taps(x, width))
    return np.clip(out, 0, 1)


@pytest.mark.parametrize("channels", [1, 3])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_the_spline_filter_is_the_halfway_spline_written_out(channels, dtype):
    values = photo(channels=channels, dtype=dtype)
    rng = np.random.default_rng(8)
    px = np.concatenate([rng.uniform(0, 40, 100), [0.0, 0.5, 39.9, 39.999, 20.5]]).astype(np.float32)
    py = np.concatenate([rng.uniform(0, 24, 100), [0.0, 23.99, 0.5, 12.25, 23.5]]).astype(np.float32)
    targets = PictureSampler(values, 10, kind="spline").targets(px, py)
    expected = np.array([reference_spline(values, float(x), float(y)) for x, y in zip(px, py)])
    assert targets.shape == (len(px), channels) and targets.dtype == np.float32
    np.testing.assert_allclose(targets, expected, atol=2e-5)


def test_the_spline_filter_at_a_pixel_centre_is_halfway_between_the_pixel_and_its_smoothing():
    """The spline through the pixels gives the pixel there, and the B-spline of the pixels weighs
    each and its neighbours 1/6, 4/6, 1/6 along each axis; the filter takes the two halfway."""
    values = photo(channels=1, dtype=np.float32)[..., :1]
    smooth = values.astype(np.float64)
    for axis in (0, 1):
        padded = np.concatenate([smooth.take([0], axis), smooth, smooth.take([-1], axis)], axis)
        n = smooth.shape[axis]
        smooth = (padded.take(range(0, n), axis) + 4 * padded.take(range(1, n + 1), axis)
                  + padded.take(range(2, n + 2), axis)) / 6
    rows, cols = np.mgrid[0:24, 0:40]
    sampler = PictureSampler(values, 10, kind="spline")
    at = sampler.targets((cols.ravel() + 0.5).astype(np.float32), (rows.ravel() + 0.5).astype(np.float32))
    expected = np.clip(SPLINE_HALF * values + (1 - SPLINE_HALF) * smooth, 0, 1).reshape(-1, 1)
    np.testing.assert_allclose(at, expected, atol=2e-5)


def test_batches_are_a_pure_function_of_seed_and_step():
    sampler = PictureSampler(photo(), 500, seed=3)
    x5, y5 = sampler(5)
    again = PictureSampler(photo(), 500, seed=3)(5)
    np.testing.assert_array_equal(x5, again[0])
    np.testing.assert_array_equal(y5, again[1])
    assert not np.array_equal(x5, sampler(6)[0])
    assert not np.array_equal(x5, PictureSampler(photo(), 500, seed=4)(5)[0])


def test_positions_cover_the_picture_uniformly():
    sampler = PictureSampler(photo(64, 64), 4096)
    x, _ = sampler(0)
    assert x.dtype == np.float32 and x.shape == (4096, 2)
    assert -1 <= x.min() and x.max() < 1
    counts, _, _ = np.histogram2d(x[:, 0], x[:, 1], bins=4, range=[[-1, 1], [-1, 1]])
    assert counts.min() > 200 and counts.max() < 320  # 256 expected in each of 16 cells
    u = uniform(np, 1, 2, (10000,))
    assert 0 <= u.min() and u.max() < 1 and abs(u.mean() - 0.5) < 0.02


def test_interpolated_targets_stay_in_range_and_between_neighbours():
    edge = np.zeros((8, 8, 1), np.uint8)
    edge[:, 4:] = 255  # a hard edge: cubic overshoot must be clipped
    sampler = PictureSampler(edge, 2000, kind="bicubic")
    _, y = sampler(1)
    assert 0 <= y.min() and y.max() <= 1
    bilinear = PictureSampler(edge, 10, kind="bilinear")
    half = bilinear.targets(np.array([4.0], np.float32), np.array([3.5], np.float32))
    assert half[0, 0] == pytest.approx(0.5)


def test_band_scores_equal_the_whole_picture_scores():
    values = photo(37, 29, 1)
    picture = Picture(values, "gray", "p")
    prediction = np.clip(picture.pixels + np.random.default_rng(1).normal(0, 0.05, picture.pixels.shape), 0, 1)
    score = BandScore(picture)
    for start in range(0, 37, 8):
        score.add(start, prediction[start:start + 8])
    assert score.psnr == pytest.approx(psnr(prediction, picture.pixels), abs=1e-9)
    assert score.accuracy == pytest.approx(np.mean((prediction > 0.5) == (picture.pixels > 0.5)))


def test_a_fit_on_samples_learns_between_the_pixels():
    values = photo(32, 32, 1)
    picture = Picture(values, "gray", "p")
    backend = Backend("cpu")
    model = hashgrid(2, 1, levels=2, log2_table_size=10, coarsest=8, finest=32, width=16, depth=1,
                     rng=np.random.default_rng(0))
    before = psnr(render(model, 32, 32, backend), picture.pixels)
    Trainer(model, Adam(model.named_parameters(), lr=1e-2), mse, batches=PictureSampler(values, 1024)).run(300)
    assert psnr(render(model, 32, 32, backend), picture.pixels) > before + 8


def step_peak_allocation(side: int) -> int:
    """Peak bytes allocated by four training steps on a ``side`` x ``side`` RGB picture."""
    picture = np.zeros((side, side, 3), np.uint8)
    model = hashgrid(2, 3, levels=4, log2_table_size=12, coarsest=16, finest=256, width=16, depth=1,
                     rng=np.random.default_rng(0))
    trainer = Trainer(model, Adam(model.named_parameters(), lr=1e-2), mse, batches=PictureSampler(picture, 4096))
    trainer.run(2)  # the optimizer's slots exist from here on
    tracemalloc.start()
    trainer.run(6)
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    return peak


def test_a_step_allocates_nothing_proportional_to_the_picture():
    """The same model and batch on a 256x256 and a 2048x2048 picture (64 times the pixels):
    a step allocates the same, and less than the big picture itself."""
    small, big = step_peak_allocation(256), step_peak_allocation(2048)
    assert big < 1.1 * small + 65536, (small, big)
    assert big < 2048 * 2048 * 3  # less than the picture itself


def test_every_pixel_comes_whole_with_samples_between_pixels():
    values = photo(16, 20, 3)
    coordinates = pixel_grid(20, 16)
    source = EveryPixel(values, coordinates, seed=2, between=0.25)
    (x, y, w), (between, targets, w_between) = source(7)
    assert x is coordinates and (w, w_between) == pytest.approx((320 / 400, 80 / 400))  # as many as they are
    np.testing.assert_allclose(y, values.reshape(-1, 3) / 255.0, atol=1e-7)
    assert len(between) == 80 and targets.shape == (80, 3)
    off_centre = np.abs((between + 1) * [10, 8] % 1 - 0.5) > 1e-3  # pixel centres sit at .5
    assert off_centre.any(axis=1).mean() > 0.9
    again = EveryPixel(values, coordinates, seed=2, between=0.25)(7)[1]
    np.testing.assert_array_equal(between, again[0])
    assert not np.array_equal(between, source(8)[1][0])
    weighted = EveryPixel(values, coordinates, seed=2, between=0.25, weight=0.2)(7)
    assert (weighted[0][2], weighted[1][2]) == pytest.approx((0.8, 0.2))
    np.testing.assert_array_equal(weighted[1][0], between)  # the same samples, weighed otherwise
    with pytest.raises(ValueError, match="weight"):
        EveryPixel(values, coordinates, between=0.25, weight=1.0)


def test_a_fit_of_every_pixel_keeps_the_grid_lookups_for_the_whole_run(monkeypatch):
    """The pixel grid is looked up once; each step looks up only its samples between pixels."""
    values = photo(32, 32, 1)
    model = hashgrid(2, 1, levels=2, log2_table_size=10, coarsest=8, finest=32, width=16, depth=1,
                     rng=np.random.default_rng(0))
    grid = model.layers[0]
    looked_up = []
    original = type(grid)._lookup

    def counting(self, x):
        if not any(cached[0] is x for cached in self._lookups):
            looked_up.append(len(x))
        return original(self, x)

    monkeypatch.setattr(type(grid), "_lookup", counting)
    source = EveryPixel(values, pixel_grid(32, 32), between=1 / 8)
    Trainer(model, Adam(model.named_parameters(), lr=1e-2), mse, batches=source).run(5)
    assert looked_up == [1024] + [128] * 5


@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_tiles_visit_every_pixel_once_an_epoch_with_its_own_value(dtype):
    values = photo(height=70, width=90, dtype=dtype)
    sampler = TileSampler(values, 1000, seed=3)
    assert sampler.tiles == 3 * 2  # about 1000 pixels a tile: 30 x 35
    visits = np.zeros((70, 90), int)
    expected = pixel_grid(90, 70).reshape(70, 90, 2)
    pixels = values.astype(np.float32) / (255 if dtype == np.uint8 else 1)
    for step in range(sampler.tiles, 2 * sampler.tiles):  # the second epoch
        lattice, targets = sampler(step)
        columns = np.searchsorted(expected[0, :, 0], lattice.xs)
        rows = np.searchsorted(expected[:, 0, 1], lattice.ys)
        np.testing.assert_array_equal(lattice.points(), expected[np.ix_(rows, columns)].reshape(-1, 2))
        np.testing.assert_allclose(targets, pixels[np.ix_(rows, columns)].reshape(-1, 3), rtol=1e-6)
        visits[np.ix_(rows, columns)] += 1
    assert (visits == 1).all()


def test_tiles_come_in_an_order_of_the_seed_and_epoch_alone():
    values = photo(height=64, width=64)
    first = [TileSampler(values, 256, seed=1)(step)[0].points() for step in range(32)]
    again = TileSampler(values, 256, seed=1)
    for step in (17, 3, 31):  # any step, in any order, draws the same tile
        np.testing.assert_array_equal(again(step)[0].points(), first[step])
    by_epoch = [[tuple(p[0]) for p in first[e * 16:(e + 1) * 16]] for e in (0, 1)]
    assert sorted(by_epoch[0]) == sorted(by_epoch[1]) and by_epoch[0] != by_epoch[1]
