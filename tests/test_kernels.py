"""The backend's kernels agree with the NumPy code they replace.

Three paths: NumPy (the reference, run everywhere), the portable device path (run here on the
pretend GPU of ``strict_device``, and on a real one in ``portable`` mode) and the hand-written
CUDA kernels (run only where CuPy sees a GPU; skipped here).  Each is checked on repeated rows,
tiny grids and one, two and three features.  The kernels whose threads share nothing (the
elementwise bodies, the grid's fused read, the sampler) also run here, on the CPU as C++
(``cuda_on_cpu``), against their NumPy twins.
"""

import cuda_on_cpu
import numpy as np
import pytest
from strict_device import forbidding, strict_device

from ironlearn import fused, kernels
from ironlearn.backend import Backend, cuda_available
from ironlearn.nn import HashGrid, hashgrid, mse
from ironlearn.optim import Adam
from ironlearn.train import Trainer

needs_cuda = pytest.mark.skipif(not cuda_available(), reason="no GPU with CuPy here: the CUDA kernels run on one")
needs_compiler = pytest.mark.skipif(cuda_on_cpu.compiler() is None, reason="no C++ compiler to run kernels on the CPU")


@needs_compiler
@pytest.mark.parametrize("masked", [False, True])
def test_adams_elementwise_body_is_its_numpy_twin(masked):
    rng = np.random.default_rng(0)
    n = 500
    param, grad, m = (rng.normal(size=n).astype(np.float32) for _ in range(3))
    v = rng.uniform(0, 1, n).astype(np.float32)
    touched = rng.uniform(size=n) < 0.5
    b1, b2, step_size, eps_hat = 0.9, 0.999, 1e-2, 1e-8
    want = [a.copy() for a in (param, m, v)]
    kernels._adam_step(np, want[0], grad, want[1], want[2], np.empty(n, np.float32), b1, b2, step_size, eps_hat)
    if masked:
        want = [np.where(touched, new, old) for new, old in zip(want, (param, m, v))]
    scalars = [np.full(n, s, np.float32) for s in (1 - b1, 1 - b2, step_size, eps_hat)]
    got = [a.copy() for a in (param, m, v)]
    if masked:
        cuda_on_cpu.elementwise("adam_masked")(grad, touched, *scalars, *got)
    else:
        cuda_on_cpu.elementwise("adam")(grad, *scalars, *got)
    for name, a, b in zip(("param", "m", "v"), got, want):
        np.testing.assert_allclose(a, b, rtol=2e-6, atol=1e-7, err_msg=name)


@needs_compiler
def test_the_sines_elementwise_bodies_are_their_numpy_twins():
    rng = np.random.default_rng(1)
    x, g = rng.uniform(-1, 1, 400).astype(np.float32), rng.normal(size=400).astype(np.float32)
    w0 = np.full(400, 30.0, np.float32)
    y, dx = np.empty_like(x), np.empty_like(x)
    cuda_on_cpu.elementwise("sine")(x, w0, y)
    cuda_on_cpu.elementwise("sine_backward")(x, g, w0, dx)
    y_want, saved = kernels.sine(x, 30.0)
    np.testing.assert_allclose(y, y_want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(dx, kernels.sine_backward(saved, g, 30.0), rtol=1e-5, atol=1e-5)


def _reads(rng, rows, points, levels, taps, repeated=False):
    indices = rng.integers(0, rows, size=(taps, points, levels))
    if repeated:  # every read on a handful of rows: the atomics' worst case
        indices %= 3
    weights = rng.uniform(-1, 1, size=(taps, points, levels)).astype(np.float32)
    return indices.astype(np.int64), weights


def _naive_gather(table, indices, weights):
    return np.einsum("knl,knlf->nlf", weights.astype(np.float64), table.astype(np.float64)[indices])


def _naive_scatter(rows, indices, weights, grad):
    out = np.zeros((rows, grad.shape[-1]))
    np.add.at(out, indices.reshape(-1), (weights[..., None].astype(np.float64) * grad[None]).reshape(-1, grad.shape[-1]))
    return out


CASES = [(1, False), (2, False), (3, False), (2, True)]  # (features, every read on three rows)


# -- the NumPy reference against the plain definition ------------------------------------------
@pytest.mark.parametrize("features, repeated", CASES)
def test_numpy_gather_and_scatter_are_the_definitions(features, repeated):
    rng = np.random.default_rng(features)
    table = rng.uniform(-1, 1, size=(50, features)).astype(np.float32)
    indices, weights = _reads(rng, 50, 40, 3, 4, repeated)
    np.testing.assert_allclose(kernels.gather_weighted(table, indices, weights), _naive_gather(table, indices, weights),
                               rtol=1e-5, atol=1e-6)
    grad = rng.uniform(-1, 1, size=(40, 3, features)).astype(np.float32)
    out = np.full((50, features), np.nan, np.float32)  # overwritten, not added to
    kernels.scatter_weighted(out, indices.reshape(-1), weights, grad)
    np.testing.assert_allclose(out, _naive_scatter(50, indices, weights, grad), rtol=1e-5, atol=1e-5)


def test_kernel_modes_are_checked():
    with pytest.raises(ValueError, match="unknown kernel mode"):
        with kernels.use("fast"):
            pass
    with kernels.use("portable"):
        assert kernels.mode() == "portable"
    assert kernels.mode() in kernels.MODES


def test_only_small_levels_sum_in_shared_memory():
    # 289 rows (a 16-cell level) and 4,096 rows fit 32 KiB of two features; 16,384 rows do not.
    assert kernels.shared_levels([289, 4096, 16384], 2, 65536, 4) == [0, 1]
    assert kernels.shared_levels([289, 4096], 2, 1000, 4) == [0]  # fewer points: a level near the reads in size is not


# -- the portable device path, on the pretend GPU ----------------------------------------------
@pytest.mark.parametrize("features, repeated", CASES)
def test_the_portable_path_agrees_with_numpy(monkeypatch, features, repeated):
    rng = np.random.default_rng(10 + features)
    table = rng.uniform(-1, 1, size=(30, features)).astype(np.float32)
    indices, weights = _reads(rng, 30, 25, 2, 16, repeated)
    grad = rng.uniform(-1, 1, size=(25, 2, features)).astype(np.float32)
    reference = np.empty((30, features), np.float32)
    kernels.scatter_weighted(reference, indices.reshape(-1), weights, grad)
    with strict_device(monkeypatch) as device:
        backend = Backend("cuda")
        on = [backend.asarray(a, dtype=a.dtype) for a in (table, indices, weights, grad)]
        out = backend.xp.empty((30, features), dtype=np.float32)
        with forbidding(device), backend.device_only():
            mixed = kernels.gather_weighted(*on[:3])
            kernels.scatter_weighted(out, on[1].reshape(-1), on[2], on[3], ([0, 15], [15, 15]))
        np.testing.assert_allclose(backend.to_host(mixed), kernels.gather_weighted(table, indices, weights), rtol=1e-6)
        np.testing.assert_allclose(backend.to_host(out), reference, rtol=1e-5, atol=1e-6)


def _adam_arrays(rng, shape=(40, 2)):
    param, grad = (rng.uniform(-1, 1, size=shape).astype(np.float32) for _ in range(2))
    m = rng.uniform(-0.1, 0.1, size=shape).astype(np.float32)
    v = rng.uniform(0, 0.01, size=shape).astype(np.float32)
    return param, grad, m, v


ADAM = dict(b1=0.9, b2=0.999, step_size=0.01, eps_hat=1e-8)


def _masked_reference(param, grad, m, v, touched):
    """Lazy Adam as the host runs it: the marked rows updated, the others as they were."""
    rows = np.flatnonzero(touched)
    p, g, mm, vv = (a[rows].copy() for a in (param, grad, m, v))
    kernels.adam_update(p, g, mm, vv, np.empty_like(p), **ADAM)
    out = [a.copy() for a in (param, m, v)]
    for array, part in zip(out, (p, mm, vv)):
        array[rows] = part
    return out


def test_the_portable_adam_agrees_with_numpy(monkeypatch):
    rng = np.random.default_rng(3)
    param, grad, m, v = _adam_arrays(rng)
    touched = rng.uniform(size=40) < 0.3
    dense = [a.copy() for a in (param, m, v)]
    kernels.adam_update(dense[0], grad, dense[1], dense[2], np.empty_like(param), **ADAM)
    masked = _masked_reference(param, grad, m, v, touched)
    with strict_device(monkeypatch) as device:
        backend = Backend("cuda")
        for mask, expected in ((None, dense), (touched, masked)):
            p, g, mm, vv = (backend.asarray(a) for a in (param, grad, m, v))
            on_mask = None if mask is None else backend.asarray(mask, dtype=bool)
            with forbidding(device), backend.device_only():
                kernels.adam_update(p, g, mm, vv, backend.xp.empty_like(p), **ADAM, touched=on_mask)
            for got, want in zip((p, mm, vv), expected):
                np.testing.assert_allclose(backend.to_host(got), want, rtol=1e-6, atol=1e-8)


# -- the CUDA kernels, on a GPU ----------------------------------------------------------------
@needs_cuda
@pytest.mark.parametrize("features, repeated", CASES)
@pytest.mark.parametrize("taps", [4, 16])
def test_cuda_gather_and_scatter_agree_with_numpy(features, repeated, taps):
    rng = np.random.default_rng(features * taps)
    rows, points, levels = 5000, 3000, 4
    table = rng.uniform(-1, 1, size=(rows, features)).astype(np.float32)
    indices, weights = _reads(rng, rows, points, levels, taps, repeated)
    grad = rng.uniform(-1, 1, size=(points, levels, features)).astype(np.float32)
    reference = np.empty((rows, features), np.float32)
    kernels.scatter_weighted(reference, indices.reshape(-1), weights, grad)
    backend = Backend("cuda")
    on = [backend.asarray(a, dtype=a.dtype) for a in (table, indices, weights, grad)]
    with kernels.use("kernels"):
        mixed = kernels.gather_weighted(*on[:3])
        np.testing.assert_allclose(backend.to_host(mixed), kernels.gather_weighted(table, indices, weights),
                                   rtol=1e-5, atol=1e-5)
        # Levels of 3 and 40 rows (shared memory) beside two larger ones (global atomics).
        level_rows = ([0, 3, 43, 2000], [3, 40, 1957, 3000])
        levels_indices = indices.copy()
        for level, (offset, size) in enumerate(zip(*level_rows)):
            levels_indices[:, :, level] = offset + indices[:, :, level] % size
        for index, levels in ((indices, None), (levels_indices, level_rows)):
            expected = np.empty((rows, features), np.float32)
            kernels.scatter_weighted(expected, index.reshape(-1), weights, grad)
            out = backend.xp.full((rows, features), np.nan, dtype=np.float32)
            kernels.scatter_weighted(out, backend.asarray(index.reshape(-1), dtype=np.int64), on[2], on[3], levels)
            np.testing.assert_allclose(backend.to_host(out), expected, rtol=1e-4, atol=1e-4)


@needs_cuda
@pytest.mark.parametrize("masked", [False, True])
def test_cuda_adam_agrees_with_numpy(masked):
    rng = np.random.default_rng(5)
    param, grad, m, v = _adam_arrays(rng, (1000, 2))
    touched = rng.uniform(size=1000) < 0.3 if masked else None
    if masked:
        expected = _masked_reference(param, grad, m, v, touched)
    else:
        expected = [a.copy() for a in (param, m, v)]
        kernels.adam_update(expected[0], grad, expected[1], expected[2], np.empty_like(param), **ADAM)
    backend = Backend("cuda")
    p, g, mm, vv = (backend.asarray(a) for a in (param, grad, m, v))
    with kernels.use("kernels"):
        kernels.adam_update(p, g, mm, vv, backend.xp.empty_like(p), **ADAM,
                            touched=None if touched is None else backend.asarray(touched, dtype=bool))
    for got, want in zip((p, mm, vv), expected):
        np.testing.assert_allclose(backend.to_host(got), want, rtol=1e-5, atol=1e-7)


@needs_cuda
@pytest.mark.parametrize("mode", kernels.MODES)
@pytest.mark.parametrize("interpolation", ["linear", "bspline"])
def test_cuda_hashgrid_layer_agrees_with_numpy(mode, interpolation):
    rng = np.random.default_rng(7)
    x = rng.uniform(-1, 1, size=(4096, 2)).astype(np.float32)
    g = rng.uniform(-1, 1, size=(4096, 8)).astype(np.float32)
    host = HashGrid(4, 2, 12, 4, 128, interpolation=interpolation, rng=np.random.default_rng(0))
    device = HashGrid(4, 2, 12, 4, 128, interpolation=interpolation, rng=np.random.default_rng(0))
    backend = Backend("cuda")
    device.to(backend)
    with kernels.use(mode):
        out = device.forward(backend.asarray(x))
        device.backward(backend.asarray(g), need_grad_in=False)
    np.testing.assert_allclose(backend.to_host(out), host.forward(x), rtol=1e-5, atol=1e-6)
    host.backward(g, need_grad_in=False)
    np.testing.assert_allclose(backend.to_host(device.grads["table"].dense() if hasattr(device.grads["table"], "dense")
                                               else device.grads["table"]),
                               host.grads["table"].dense() if hasattr(host.grads["table"], "dense")
                               else host.grads["table"], rtol=1e-4, atol=1e-5)


def test_numpy_sine_is_the_definition():
    rng = np.random.default_rng(11)
    x, g = rng.uniform(-2, 2, size=(2, 500, 7)).astype(np.float32)
    y, saved = kernels.sine(x, 30.0)
    np.testing.assert_allclose(y, np.sin(30.0 * x.astype(np.float64)), atol=1e-4)
    np.testing.assert_allclose(kernels.sine_backward(saved, g, 30.0), 30 * np.cos(30.0 * x.astype(np.float64)) * g,
                               rtol=1e-4, atol=1e-3)


@needs_cuda
@pytest.mark.parametrize("mode", kernels.MODES)
def test_cuda_sine_agrees_with_numpy(mode):
    rng = np.random.default_rng(12)
    x, g = rng.uniform(-2, 2, size=(2, 4096, 33)).astype(np.float32)
    y, saved = kernels.sine(x, 30.0)
    want = kernels.sine_backward(saved, g, 30.0)
    backend = Backend("cuda")
    with kernels.use(mode):
        y_device, saved_device = kernels.sine(backend.asarray(x), 30.0)
        grad = kernels.sine_backward(saved_device, backend.asarray(g), 30.0)
    np.testing.assert_allclose(backend.to_host(y_device), y, rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(backend.to_host(grad), want, rtol=1e-5, atol=1e-4)


@needs_cuda
@pytest.mark.parametrize("mode", kernels.MODES)
@pytest.mark.parametrize("batch", [300, 20000])  # a sparse gradient, then a dense one
def test_cuda_step_copies_nothing_and_never_syncs(mode, batch):
    from ironlearn import backend as be
    from ironlearn.image.sampling import PictureSampler

    backend = Backend("cuda")
    picture = backend.asarray((np.random.default_rng(0).uniform(size=(200, 300, 3)) * 255).astype(np.uint8),
                              dtype=np.uint8)
    model = hashgrid(2, 3, levels=4, log2_table_size=14, coarsest=4, finest=300, width=16, depth=2,
                     rng=np.random.default_rng(1)).to(backend)
    trainer = Trainer(model, Adam(model.named_parameters(), lr=1e-2), mse, batches=PictureSampler(picture, batch),
                      backend=backend)
    with kernels.use(mode):
        trainer.train_step()  # compiles the kernels, outside the guard
        before = be.crossings()
        with backend.device_only():
            for _ in range(3):
                trainer.train_step()
        assert be.crossings() == before
        assert np.isfinite(trainer.loss)


@pytest.mark.parametrize("value, expected", [("portable", "portable"), ("off", "portable"), ("kernels", "kernels"),
                                             ("portabel", None)])
def test_the_kernel_mode_comes_from_the_environment_and_a_typo_is_refused(monkeypatch, value, expected):
    from ironlearn.backend import BackendError

    monkeypatch.setenv("IRONLEARN_KERNELS", value)
    monkeypatch.setattr(kernels, "_mode", None)
    if expected is None:
        with pytest.raises(BackendError, match="IRONLEARN_KERNELS='portabel' is not a kernel mode"):
            kernels.mode()
    else:
        assert kernels.mode() == expected


# -- the fused kernels (ironlearn.fused) ---------------------------------------------------------
GRIDS = [  # (levels, features, log2 table, coarsest, finest, options): dense and hashed, each read
    (4, 2, 12, 4, 128, {}),
    (3, 1, 8, 3, 40, {"interpolation": "bspline", "centred": True}),
    (5, 3, 10, 2, 300, {"finest_y": 170}),
    (2, 2, 14, 8, 64, {"interpolation": "bspline", "centred": True, "finest_y": 20}),
]


def _kernel_rows_in_numpy(grid, x):
    """``read_grid``'s arithmetic, written in NumPy from ``fused.level_table`` alone: the rows and
    weights it reads, ``(K, n, L)`` as ``HashGrid._lookup`` orders them."""
    from ironlearn import fused

    floats, ints = fused.level_table(grid)
    shift = np.float32(0.5 if grid.centred else 0.0)
    taps, first = (2, 0) if grid.interpolation == "linear" else (4, -1)
    weights_along = {2: lambda t: (1 - t, t),
                     4: lambda t: (((1 - t) ** 3) / 6, (3 * t ** 3 - 6 * t ** 2 + 4) / 6,
                                   (-3 * t ** 3 + 3 * t ** 2 + 3 * t + 1) / 6, t ** 3 / 6)}[taps]

    def axis(coord, cells, last, corner_max, last_index):
        position = np.clip((coord[:, None] + 1) * np.float32(0.5) * cells - shift, 0, last)
        corner = np.minimum(np.floor(position), corner_max)
        vertices = [np.clip(corner.astype(np.int64) + first + o, 0, last_index) for o in range(taps)]
        return weights_along(position - corner), vertices

    (wx, vx), (wy, vy) = (axis(x[:, a], floats[:, a], floats[:, 2 + a], floats[:, 4 + a], ints[:, 4 + a]) for a in (0, 1))
    sides, offsets, masks, hashed = (ints[:, c] for c in range(4))
    rows, weights = [], []
    for j in range(taps):
        for i in range(taps):
            h = (vx[i].astype(np.uint64) ^ (vy[j].astype(np.uint64) * np.uint64(2654435761))) & masks.astype(np.uint64)
            rows.append(np.where(hashed.astype(bool), h.astype(np.int64), vy[j] * sides + vx[i]) + offsets)
            weights.append(wx[i] * wy[j])
    return np.stack(rows), np.stack(weights)


@pytest.mark.parametrize("levels, features, log2, coarsest, finest, options", GRIDS)
def test_the_fused_reads_level_table_reads_where_the_lookup_does(levels, features, log2, coarsest, finest, options):
    """On the CPU: the numbers the fused kernels get (``fused.level_table``), read by the kernel's
    own formulas, name the rows and weights that ``HashGrid._lookup`` names."""
    grid = HashGrid(levels, features, log2, coarsest, finest, rng=np.random.default_rng(0), **options)
    x = np.random.default_rng(1).uniform(-1.05, 1.05, size=(3000, 2)).astype(np.float32)
    x[:4] = [[-1, -1], [1, 1], [-1, 1], [0, 0]]
    reads = grid._lookup(x)
    rows, weights = _kernel_rows_in_numpy(grid, x)
    np.testing.assert_array_equal(rows, reads.indices)
    np.testing.assert_allclose(weights, reads.weights, rtol=1e-6, atol=1e-7)


@needs_compiler
@pytest.mark.parametrize("levels, features, log2, coarsest, finest, options", GRIDS)
def test_the_fused_grid_read_runs_on_the_cpu_as_its_numpy_twin(monkeypatch, levels, features, log2, coarsest,
                                                               finest, options):
    """``read_grid`` (a thread a point and level, nothing shared) run as C++ on the CPU: at points
    and at a lattice's, every level as ``HashGrid.forward`` reads it."""
    from ironlearn.image.coords import axis
    from ironlearn.nn.lattice import Lattice

    monkeypatch.setattr(fused.cuda, "functions", cuda_on_cpu.functions)
    rng = np.random.default_rng(levels)
    grid = HashGrid(levels, features, log2, coarsest, finest, rng=np.random.default_rng(0), **options)
    grid.params["table"][:] = rng.uniform(-1, 1, size=grid.params["table"].shape)
    x = rng.uniform(-1, 1, size=(150, 2)).astype(np.float32)
    np.testing.assert_allclose(fused.read_grid(grid, x), grid.forward(x), rtol=1e-5, atol=1e-6)
    if not any(grid.hashed):
        xs, ys = axis(30)[5:17], axis(20)[3:12]
        np.testing.assert_allclose(fused.read_grid(grid, lattice=(xs, ys)), grid.forward(Lattice(xs, ys)),
                                   rtol=1e-5, atol=1e-6)


@needs_compiler
@pytest.mark.parametrize("kind", ["lanczos", "bicubic", "bilinear", "spline", "centres"])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_the_fused_sampler_runs_on_the_cpu_as_its_numpy_twin(monkeypatch, kind, dtype):
    """``picture_batch`` run as C++ on the CPU draws the batch the host's sampler draws."""
    from ironlearn.image import batch_kernel
    from ironlearn.image.sampling import PictureSampler, step_key

    monkeypatch.setattr(batch_kernel.cuda, "functions", cuda_on_cpu.functions)
    picture = np.random.default_rng(5).uniform(size=(37, 53, 3))
    picture = (picture * 255).astype(np.uint8) if dtype == np.uint8 else picture.astype(np.float32)
    sampler = PictureSampler(picture, 300, seed=3, kind=kind)
    for step in (0, 7):
        x, y = batch_kernel.picture_batch(sampler, step_key(3, step))
        x_host, y_host = sampler(step)
        np.testing.assert_allclose(x, x_host, rtol=0, atol=2e-7)
        np.testing.assert_allclose(y, y_host, rtol=1e-5, atol=1e-5)


@needs_cuda
@pytest.mark.parametrize("levels, features, log2, coarsest, finest, options", GRIDS)
@pytest.mark.parametrize("points", [50, 5000])  # a masked gradient, then (mostly) a dense one
def test_cuda_fused_grid_agrees_with_its_numpy_twin(levels, features, log2, coarsest, finest, options, points):
    rng = np.random.default_rng(points)
    x = rng.uniform(-1, 1, size=(points, 2)).astype(np.float32)
    host = HashGrid(levels, features, log2, coarsest, finest, rng=np.random.default_rng(0), **options)
    device = HashGrid(levels, features, log2, coarsest, finest, rng=np.random.default_rng(0), **options)
    host.params["table"][:] = rng.uniform(-1, 1, size=host.params["table"].shape)
    device.params["table"][:] = host.params["table"]
    g = rng.uniform(-1, 1, size=(points, host.out_features)).astype(np.float32)
    backend = Backend("cuda")
    device.to(backend)
    with kernels.use("kernels"):
        out = device.forward(backend.asarray(x))
        assert device._fused
        device.backward(backend.asarray(g), need_grad_in=False)
    np.testing.assert_allclose(backend.to_host(out), host.forward(x), rtol=1e-5, atol=1e-6)
    host.backward(g, need_grad_in=False)
    want, got = host.grads["table"], device.grads["table"]
    assert type(got).__name__ == ("MaskedGrad" if type(want).__name__ == "RowGrad" else "ndarray")
    np.testing.assert_allclose(backend.to_host(got.dense() if hasattr(got, "dense") else got),
                               want.dense() if hasattr(want, "dense") else want, rtol=1e-4, atol=1e-5)
    if hasattr(want, "rows"):  # the rows marked are the rows read
        np.testing.assert_array_equal(np.flatnonzero(backend.to_host(got.touched)), want.rows)


@needs_cuda
@pytest.mark.parametrize("kind", ["lanczos", "bicubic", "bilinear", "spline", "centres"])
@pytest.mark.parametrize("dtype", [np.uint8, np.float32])
def test_cuda_fused_sampler_agrees_with_its_numpy_twin(kind, dtype):
    from ironlearn.image.sampling import PictureSampler

    rng = np.random.default_rng(5)
    picture = rng.uniform(size=(37, 53, 3))
    picture = (picture * 255).astype(np.uint8) if dtype == np.uint8 else picture.astype(np.float32)
    backend = Backend("cuda")
    for batch in (1, 700, 1999):
        host = PictureSampler(picture, batch, seed=3, kind=kind)
        device = PictureSampler(backend.asarray(picture, dtype=dtype), batch, seed=3, kind=kind)
        for step in (0, 7):
            x, y = host(step)
            with kernels.use("kernels"):
                x_device, y_device = device(step)
            np.testing.assert_allclose(backend.to_host(x_device), x, rtol=0, atol=2e-7)
            np.testing.assert_allclose(backend.to_host(y_device), y, rtol=1e-5, atol=1e-5)


@needs_cuda
@pytest.mark.parametrize("levels, features, log2, coarsest, finest, options", [
    (1, 3, 14, 90, 90, {"interpolation": "bspline", "centred": True, "finest_y": 60}),  # a pixel spline
    (3, 2, 16, 8, 90, {"interpolation": "bspline", "centred": True, "detail": 40}),
    (2, 1, 14, 5, 40, {}),
])
def test_cuda_fused_lattice_read_agrees_with_its_numpy_twin(levels, features, log2, coarsest, finest, options):
    from ironlearn.image.coords import axis
    from ironlearn.nn.lattice import Lattice

    rng = np.random.default_rng(9)
    host = HashGrid(levels, features, log2, coarsest, finest, rng=np.random.default_rng(0), **options)
    device = HashGrid(levels, features, log2, coarsest, finest, rng=np.random.default_rng(0), **options)
    assert not any(host.hashed)
    for grid in (host, device):
        grid.params["table"][:] = np.random.default_rng(1).uniform(-1, 1, size=grid.params["table"].shape)
    backend = Backend("cuda")
    device.to(backend)
    for x0, x1, y0, y1 in ((0, 90, 0, 60), (30, 61, 17, 40)):  # the whole picture, then a tile
        lattice = Lattice(axis(90)[x0:x1], axis(60)[y0:y1])
        g = rng.uniform(-1, 1, size=(len(lattice), host.out_features)).astype(np.float32)
        with kernels.use("kernels"):
            out = device.forward(lattice)
            assert device._fused
            device.backward(backend.asarray(g), need_grad_in=False)
        np.testing.assert_allclose(backend.to_host(out), host.forward(lattice), rtol=1e-5, atol=1e-5)
        host.backward(g, need_grad_in=False)
        for name in host.grads:
            want, got = host.grads[name], device.grads[name]
            assert type(got).__name__ == type(want).__name__
            np.testing.assert_allclose(backend.to_host(got.dense() if hasattr(got, "dense") else got),
                                       want.dense() if hasattr(want, "dense") else want, rtol=1e-4, atol=1e-5)


@needs_cuda
def test_cuda_adam_on_many_parameters_at_once_is_adam_on_each():
    rng = np.random.default_rng(13)
    backend = Backend("cuda")
    shapes = [(300, 64), (64,), (64, 3), (3,), (1,)]
    arrays = [[backend.asarray(rng.uniform(-1, 1, size=shape).astype(np.float32)) for _ in range(4)] for shape in shapes]
    for param, grad, m, v in arrays:
        v[...] = abs(v)
    alone = [[array.copy() for array in update] for update in arrays]
    for _ in range(3):
        fused.adam_update_many(arrays, 0.9, 0.99, 1e-2, 1e-8)
        for param, grad, m, v in alone:
            kernels.adam_update(param, grad, m, v, None, 0.9, 0.99, 1e-2, 1e-8)
    for together, each in zip(arrays, alone):
        for a, b in zip(together, each):
            np.testing.assert_allclose(backend.to_host(a), backend.to_host(b), rtol=1e-6, atol=1e-7)


@needs_cuda
def test_cuda_squared_error_agrees_with_numpy():
    rng = np.random.default_rng(14)
    pred, target = rng.uniform(size=(2, 5000, 3)).astype(np.float32)
    backend = Backend("cuda")
    value, grad = mse(pred, target)
    with kernels.use("kernels"):
        value_device, grad_device = mse(backend.asarray(pred), backend.asarray(target))
    np.testing.assert_allclose(float(backend.to_host(value_device)), float(value), rtol=1e-5)
    np.testing.assert_allclose(backend.to_host(grad_device), grad, rtol=1e-6, atol=1e-9)
