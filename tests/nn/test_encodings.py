import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from helpers import check_layer_gradients
from ironlearn.nn import LOG2_TABLE_SIZES, FourierFeatures, HashGrid, Linear, Sequential
from ironlearn.optim import Adam
from ironlearn.nn.splines import bspline_coefficients


def test_fourier_features_gradient(rng):
    check_layer_gradients(FourierFeatures(2, 8, sigma=2.0, rng=rng), rng.uniform(-1, 1, (6, 2)))


def test_fourier_features_are_sin_and_cos_of_one_projection(rng):
    layer = FourierFeatures(2, 5, sigma=3.0, rng=rng)
    x = rng.uniform(-1, 1, (4, 2)).astype(np.float32)
    out = layer.forward(x)
    z = x @ layer.buffers["projection"]
    np.testing.assert_allclose(out, np.concatenate([np.sin(z), np.cos(z)], axis=1), atol=1e-6)
    assert out.dtype == np.float32 and layer.params == {}  # nothing to train


def small_grid(rng, **kwargs):
    settings = {"levels": 3, "features": 2, "log2_table_size": 6, "coarsest": 2, "finest": 20, **kwargs}
    return HashGrid(**settings, rng=rng)


def test_hash_grid_levels_dense_then_hashed(rng):
    grid = small_grid(rng)
    assert grid.resolutions == [2, 6, 20]
    assert grid.hashed == [False, False, True]  # 21**2 = 441 vertices > 64 table rows
    assert grid.sizes == [9, 49, 64] and grid.params["table"].shape == (122, 2)


def test_hash_grid_gradient_with_hashing_active(rng):
    grid = small_grid(rng)
    grid.params["table"][:] = rng.normal(size=grid.params["table"].shape)  # not tiny, so the check bites
    check_layer_gradients(grid, rng.uniform(-0.99, 0.99, (7, 2)))


@pytest.mark.parametrize("interpolation, taps", [("linear", 4), ("bspline", 16)])
def test_hash_grid_scatter_matches_a_reference_loop(rng, interpolation, taps):
    grid = small_grid(rng, interpolation=interpolation)
    x = rng.uniform(-1, 1, (50, 2)).astype(np.float32)
    out = grid.forward(x)
    upstream = rng.normal(size=out.shape).astype(np.float32)
    grid.backward(upstream, need_grad_in=False)
    indices, weights, _, _ = grid._lookup(x)
    assert len(indices) == taps
    expected = np.zeros_like(grid.params["table"], dtype=np.float64)
    per_level = upstream.reshape(50, 3, 2)
    for corner in range(taps):
        for level in range(3):
            np.add.at(expected, indices[corner, :, level], weights[corner, :, level, None] * per_level[:, level])
    np.testing.assert_allclose(grid.grads["table"], expected, rtol=1e-5, atol=1e-6)


def test_hash_grid_interpolates_its_vertices(rng):
    grid = HashGrid(levels=1, features=1, log2_table_size=8, coarsest=4, finest=4, rng=rng)
    grid.params["table"][:, 0] = np.arange(25)  # vertex (ix, iy) holds iy * 5 + ix
    # x = -1 + 2 * ix / 4 lands exactly on a vertex; halfway between two gives their mean.
    x = np.array([[-1.0, -1.0], [0.0, 0.0], [-0.75, -1.0]], np.float32)
    np.testing.assert_allclose(grid.forward(x)[:, 0], [0.0, 12.0, 0.5])


def test_centred_hash_grid_gives_each_pixel_centre_a_vertex_of_its_own(rng):
    from ironlearn.image.coords import pixel_grid

    grid = HashGrid(levels=1, features=1, log2_table_size=8, coarsest=4, finest=4, centred=True, rng=rng)
    assert grid.sides == [4] and grid.sizes == [16] and not grid.hashed[0]
    grid.params["table"][:, 0] = np.arange(16)  # texel (ix, iy) holds iy * 4 + ix
    # A 4x4 picture's pixel centres, row by row, read texels 0..15 alone; between two centres, their mean;
    # past the outer centres, the edge texel (clamped, as a texture is).
    np.testing.assert_allclose(grid.forward(pixel_grid(4, 4))[:, 0], np.arange(16))
    x = np.array([[-0.5, -0.75], [-1.0, -1.0], [1.0, 1.0]], np.float32)
    np.testing.assert_allclose(grid.forward(x)[:, 0], [0.5, 0.0, 15.0])


def test_a_level_as_wide_and_tall_as_the_picture_gives_each_pixel_a_vertex_of_its_own(rng):
    from ironlearn.image.coords import pixel_grid

    grid = HashGrid(levels=1, features=1, log2_table_size=8, coarsest=6, finest=6, finest_y=4, centred=True, rng=rng)
    assert (grid.sides, grid.sides_y, grid.sizes, grid.hashed) == ([6], [4], [24], [False])
    grid.params["table"][:, 0] = np.arange(24)  # texel (ix, iy) holds iy * 6 + ix
    np.testing.assert_allclose(grid.forward(pixel_grid(6, 4))[:, 0], np.arange(24), atol=1e-6)  # a 6x4 picture
    # Down the height a step of one pixel is a step of one texel, as across: halfway between two
    # rows' centres reads their mean.
    x = np.array([[(0.5 / 6) * 2 - 1, 0.0]], np.float32)  # pixel column 0, between rows 1 and 2
    np.testing.assert_allclose(grid.forward(x)[:, 0], [(6 + 12) / 2])


@pytest.mark.parametrize("centred", [False, True])
@pytest.mark.parametrize("interpolation", ["linear", "bspline"])
def test_a_grid_taller_or_wider_than_square_has_exact_gradients(rng, centred, interpolation):
    for finest_y in (9, 33):  # levels of 2x1, 6x3 and 20x9 cells; of 2x3, 6x10 and 20x33
        grid = small_grid(rng, centred=centred, interpolation=interpolation, finest_y=finest_y)
        assert grid.resolutions_y == [round(res * finest_y / 20) for res in (2, 6, 20)] and grid.hashed[-1]
        grid.params["table"][:] = rng.normal(size=grid.params["table"].shape)
        check_layer_gradients(grid, rng.uniform(-0.6, 0.6, (7, 2)))
        assert HashGrid(**grid.config(), rng=rng).sizes == grid.sizes  # saved and rebuilt alike


def test_centred_hash_grid_gradient_with_hashing_active(rng):
    grid = small_grid(rng, centred=True)
    assert grid.hashed == [False, False, True] and grid.sizes == [4, 36, 64]
    grid.params["table"][:] = rng.normal(size=grid.params["table"].shape)
    check_layer_gradients(grid, rng.uniform(-0.6, 0.6, (7, 2)))  # inside the clamped border


@pytest.mark.parametrize("centred", [False, True])
def test_bspline_hash_grid_gradient_with_hashing_active(rng, centred):
    grid = small_grid(rng, centred=centred, interpolation="bspline")
    grid.params["table"][:] = rng.normal(size=grid.params["table"].shape)
    check_layer_gradients(grid, rng.uniform(-0.6, 0.6, (7, 2)))


def test_a_bspline_level_is_the_cubic_bspline_of_its_vertices(rng):
    # Along one axis a uniform cubic B-spline weighs the vertices 1/6, 4/6, 1/6 at a vertex and
    # 1/48, 23/48, 23/48, 1/48 halfway between two; the read is the product along x and y.
    grid = HashGrid(levels=1, features=1, log2_table_size=8, coarsest=8, finest=8, centred=True,
                    interpolation="bspline", rng=rng)
    values = rng.normal(size=(8, 8))  # texel (ix, iy) at row iy * 8 + ix
    grid.params["table"][:, 0] = values.reshape(-1)
    at_vertex, halfway = np.array([1, 4, 1]) / 6, np.array([1, 23, 23, 1]) / 48
    x = np.array([[(3 + 0.5) / 4 - 1, (4 + 0.5) / 4 - 1],    # on texel (3, 4)
                  [(3 + 1.0) / 4 - 1, (4 + 1.0) / 4 - 1]],   # halfway to (4, 5) along both axes
                 np.float32)
    expected = [at_vertex @ values[3:6, 2:5] @ at_vertex, halfway @ values[3:7, 2:6] @ halfway]
    np.testing.assert_allclose(grid.forward(x)[:, 0], expected, rtol=1e-5)
    # A constant table reads as that constant everywhere, edges included (the weights sum to one).
    grid.params["table"][:] = 2.5
    np.testing.assert_allclose(grid.forward(rng.uniform(-1, 1, (40, 2)).astype(np.float32))[:, 0], 2.5, rtol=1e-6)


def test_a_level_of_one_texel_reads_it_everywhere(rng):
    grid = HashGrid(levels=1, features=1, log2_table_size=6, coarsest=1, finest=1, centred=True, rng=rng)
    grid.params["table"][:, 0] = 3.0
    np.testing.assert_allclose(grid.forward(rng.uniform(-1, 1, (5, 2)).astype(np.float32))[:, 0], 3.0)


def test_hash_grid_config_keeps_the_layout_and_old_files_read_as_corners(rng):
    centred = small_grid(rng, centred=True)
    assert centred.config()["centred"] is True
    corners = small_grid(rng)
    assert "centred" not in corners.config()  # what files written before the option hold
    assert HashGrid(**corners.config(), rng=rng).centred is False
    assert "interpolation" not in corners.config()  # nor the read
    assert HashGrid(**corners.config(), rng=rng).interpolation == "linear"
    smooth = small_grid(rng, interpolation="bspline")
    assert HashGrid(**smooth.config(), rng=rng).interpolation == "bspline"


def test_a_detail_level_gradient_with_the_pyramid_hashed(rng):
    # check_layer_gradients moves the layer to float64 first: the detail table must follow it.
    grid = small_grid(rng, detail=5)
    for name in ("table", "detail"):
        grid.params[name][:] = rng.normal(size=grid.params[name].shape)
    check_layer_gradients(grid, rng.uniform(-0.6, 0.6, (7, 2)))
    assert grid.params["detail"] is grid.detail_grid.params["table"]


def test_a_detail_level_is_a_dense_bspline_level_after_the_pyramid(rng):
    grid = small_grid(rng, detail=9)
    assert grid.params["detail"].shape == (81, 1) and grid.out_features == 3 * 2 + 1
    alone = HashGrid(levels=1, features=1, log2_table_size=7, coarsest=9, finest=9, centred=True,
                     interpolation="bspline", rng=rng)
    pyramid = small_grid(rng)
    grid.params["detail"][:] = alone.params["table"] = rng.normal(size=(81, 1)).astype(np.float32)
    pyramid.params["table"][:] = grid.params["table"]
    x = rng.uniform(-1, 1, (30, 2)).astype(np.float32)
    np.testing.assert_array_equal(grid.forward(x), np.concatenate([pyramid.forward(x), alone.forward(x)], axis=1))
    assert HashGrid(**grid.config(), rng=rng).detail == 9
    assert "detail" not in pyramid.config() and HashGrid(**pyramid.config(), rng=rng).detail == 0


def test_hash_grid_tables_train_with_adam(rng):
    grid = small_grid(rng, levels=4, finest=32)
    model = Sequential(grid, Linear(8, 1, rng=rng))
    x = rng.uniform(-1, 1, (400, 2)).astype(np.float32)
    y = (np.sin(4 * x[:, :1]) * np.cos(3 * x[:, 1:])).astype(np.float32)
    opt = Adam(model.named_parameters(), lr=1e-2)
    losses = []
    for _ in range(300):
        pred = model(x)
        diff = pred - y
        losses.append(float((diff ** 2).mean()))
        model.backward(2 * diff / diff.size)
        opt.step(model.named_gradients())
    assert losses[-1] < 0.05 * losses[0]


def test_lookup_cache_follows_the_input(rng):
    grid = small_grid(rng)
    a = rng.uniform(-1, 1, (5, 2)).astype(np.float32)
    b = rng.uniform(-1, 1, (5, 2)).astype(np.float32)
    np.testing.assert_array_equal(grid.forward(a), grid.forward(a))
    assert not np.array_equal(grid.forward(a), grid.forward(b))


def test_bad_settings_are_refused(rng):
    with pytest.raises(ValueError, match="coarsest <= finest"):
        HashGrid(coarsest=64, finest=16, rng=rng)
    for size in (LOG2_TABLE_SIZES[0] - 1, LOG2_TABLE_SIZES[-1] + 1):
        with pytest.raises(ValueError, match=r"log2_table_size must lie in 6\.\.24 \(got"):
            HashGrid(log2_table_size=size, rng=rng)
    with pytest.raises(ValueError, match="unknown interpolation 'cubic': use one of linear, bspline"):
        HashGrid(interpolation="cubic", rng=rng)
    with pytest.raises(ValueError, match="detail counts vertices a side, 0 for none"):
        HashGrid(detail=-1, rng=rng)
    with pytest.raises(ValueError, match="finest_y counts cells down the finest level"):
        HashGrid(finest_y=-1, rng=rng)
    with pytest.raises(ValueError, match="sigma"):
        FourierFeatures(2, 4, sigma=0, rng=rng)


coordinates = st.lists(st.tuples(st.floats(-1, 1), st.floats(-1, 1)), min_size=1, max_size=20)


@settings(max_examples=60, deadline=None)
@given(points=coordinates, levels=st.integers(1, 6), log2_table_size=st.sampled_from(LOG2_TABLE_SIZES),
       coarsest=st.integers(1, 64), growth=st.integers(0, 192), interpolation=st.sampled_from(["linear", "bspline"]),
       centred=st.booleans(), finest_y=st.integers(0, 256))
def test_hash_grid_reads_only_inside_each_level_of_its_table(points, levels, log2_table_size, coarsest, growth,
                                                             interpolation, centred, finest_y):
    # finest and finest_y stay <= 256, so even 2**24-row settings allocate at most 257**2 rows a level.
    grid = HashGrid(levels, 1, log2_table_size, coarsest, coarsest + growth, centred, interpolation,
                    finest_y=finest_y, rng=np.random.default_rng(0))
    indices, weights, _, _ = grid._lookup(np.array(points, np.float32))
    level_of_row = np.repeat(np.arange(levels), grid.sizes)
    assert indices.min() >= 0 and indices.max() < grid.params["table"].shape[0]
    assert (level_of_row[indices] == np.arange(levels)).all()  # no level reads another's rows
    np.testing.assert_allclose(weights.sum(axis=0), 1.0, rtol=1e-6)


def test_a_batch_that_reads_few_rows_gets_a_row_gradient_equal_to_the_dense_one(rng):
    from ironlearn.nn.sparse import RowGrad

    grid = HashGrid(levels=3, features=2, log2_table_size=12, coarsest=4, finest=64, rng=rng)
    x = rng.uniform(-1, 1, size=(50, 2)).astype(np.float32)
    upstream = rng.normal(size=(50, 6)).astype(np.float32)
    grid.forward(x)
    grid.backward(upstream, need_grad_in=False)
    sparse = grid.grads["table"]
    assert isinstance(sparse, RowGrad) and len(sparse.rows) <= 50 * 4 * 3
    assert (np.diff(sparse.rows) > 0).all()  # each row once, sorted
    many = np.concatenate([x] * 400)  # more lookups than rows: the dense path
    grid.forward(many)
    grid.backward(np.concatenate([upstream] * 400), need_grad_in=False)
    np.testing.assert_allclose(sparse.dense() * 400, grid.grads["table"], rtol=1e-4, atol=1e-6)


def test_lazy_adam_moves_only_the_rows_a_step_touched(rng):
    from ironlearn.nn.sparse import RowGrad
    from ironlearn.optim import SGD

    for make in (lambda p: Adam(p, lr=0.1), lambda p: SGD(p, lr=0.1, momentum=0.9)):
        table = rng.normal(size=(10, 2)).astype(np.float32)
        dense_table = table.copy()
        lazy, dense = make({"t": table}), make({"t": dense_table})
        grad = rng.normal(size=(10, 2)).astype(np.float32)
        for _ in range(3):  # every row touched: lazy equals dense
            lazy.step({"t": RowGrad(np.arange(10), grad, table.shape)})
            dense.step({"t": grad})
        np.testing.assert_allclose(table, dense_table, rtol=1e-6)
        before = table.copy()
        lazy.step({"t": RowGrad(np.array([2, 7]), grad[[2, 7]], table.shape)})
        moved = np.flatnonzero((table != before).any(axis=1))
        assert list(moved) == [2, 7]


@pytest.mark.parametrize("shape", [(1, 5), (7, 1), (6, 9, 3), (2, 2)])
def test_bspline_coefficients_invert_the_splines_weights_at_the_vertices(shape):
    samples = np.random.default_rng(0).normal(size=shape)
    coefficients = bspline_coefficients(samples, axes=(0, 1))
    redrawn = coefficients
    for axis in (0, 1):  # 1/6, 4/6, 1/6 at a vertex, the edge vertex repeated past the edge
        moved = np.moveaxis(redrawn, axis, 0)
        before, after = np.concatenate([moved[:1], moved[:-1]]), np.concatenate([moved[1:], moved[-1:]])
        redrawn = np.moveaxis((before + 4 * moved + after) / 6, 0, axis)
    np.testing.assert_allclose(redrawn, samples, atol=1e-12)
