"""A training step makes no host<->device copy and no device sync.

On a GPU, ``benchmarks/gpu`` proves it with CuPy's ``allow_synchronize(False)``; here, the
CPU shows it on a pretend GPU (``strict_device``) whose arrays raise at every hidden sync and
whose module raises at every uncounted copy, while the backend's counter proves the counted
copies are none.  The same steps are checked against the NumPy path, since the device path
trains lazily through a mask where the host lists rows.
"""

import numpy as np
import pytest
from strict_device import HiddenCopy, HiddenSync, forbidding, strict_device

from ironlearn import backend as be
from ironlearn.backend import Backend
from ironlearn.image.coords import pixel_grid
from ironlearn.image.sampling import FILTERS, EveryPixel, PictureSampler, TileSampler
from ironlearn.nn import hashgrid, mse
from ironlearn.nn.sparse import MaskedGrad, RowGrad
from ironlearn.optim import SGD, Adam
from ironlearn.train import Trainer

PICTURE = (np.random.default_rng(0).uniform(size=(48, 64, 3)) * 255).astype(np.uint8)

#: Grids that take each path of a step: a sparse gradient, a dense one, B-spline reads, a detail level.
GRIDS = {
    "sparse": dict(levels=4, log2_table_size=14, coarsest=4, finest=256),
    "dense": dict(levels=4, log2_table_size=8, coarsest=4, finest=64),
    "bspline": dict(levels=1, features=1, log2_table_size=12, coarsest=40, finest=40, centred=True,
                    interpolation="bspline"),
    "detail": dict(levels=2, log2_table_size=10, coarsest=4, finest=16, detail=20),
}


def _trainer(backend, grid, source="sampler", optimizer="adam", steps=None):
    model = hashgrid(2, 3, width=16, depth=2, rng=np.random.default_rng(1), **GRIDS[grid]).to(backend)
    params = model.named_parameters()
    optim = Adam(params, lr=1e-2) if optimizer == "adam" else SGD(params, lr=0.1, momentum=0.9)
    values = backend.asarray(PICTURE, dtype=np.uint8)  # the picture, copied once
    if source == "sampler":
        batches = PictureSampler(values, 300, seed=3)
    elif source == "tiles":
        batches = TileSampler(values, 300, seed=3)
    else:
        batches = EveryPixel(values, backend.asarray(pixel_grid(64, 48)), seed=3, between=1 / 16, weight=0.2)
    return Trainer(model, optim, mse, batches=batches, backend=backend)


@pytest.mark.parametrize("source", ["sampler", "every-pixel"])
@pytest.mark.parametrize("grid", sorted(GRIDS))
def test_a_hashgrid_step_on_the_device_copies_nothing_and_never_syncs(monkeypatch, grid, source):
    with strict_device(monkeypatch) as device:
        backend = Backend("cuda")
        trainer = _trainer(backend, grid, source)
        before = be.crossings(), backend.transfers
        with forbidding(device), backend.device_only():
            for _ in range(3):
                trainer.train_step()
        assert (be.crossings(), backend.transfers) == before
        assert isinstance(trainer.loss, float)  # read back outside the step: one counted copy
        assert be.crossings() == before[0] + 1
        table = trainer.model.layers[0].grads["table"]
        assert not isinstance(table, RowGrad)  # RowGrad lists rows: a sync on a GPU
        if grid == "sparse" and source == "sampler":
            assert isinstance(table, MaskedGrad)


@pytest.mark.parametrize("grid", ["bspline", "detail"])
def test_tiles_train_on_the_device_with_nothing_copied_once_each_tile_was_seen(monkeypatch, grid):
    """A tile's reads along its axes are worked out on the host and copied once (they recur every
    epoch); after the first epoch a step copies nothing and never syncs."""
    with strict_device(monkeypatch) as device:
        backend = Backend("cuda")
        trainer = _trainer(backend, grid, "tiles")
        for _ in range(trainer.batches.tiles):
            trainer.train_step()
        before = be.crossings(), backend.transfers
        with forbidding(device), backend.device_only():
            for _ in range(trainer.batches.tiles):
                trainer.train_step()
        assert (be.crossings(), backend.transfers) == before


@pytest.mark.parametrize("optimizer", ["adam", "sgd"])
@pytest.mark.parametrize("grid", ["sparse", "dense"])
def test_the_device_path_trains_as_the_host_path(monkeypatch, grid, optimizer):
    """Lazy updates through a mask (device) move the same rows, the same way, as through a list
    of rows (host); the scatter's order of summation is all that differs."""
    host = _trainer(Backend("cpu"), grid, optimizer=optimizer).run(8)
    sparse = any(isinstance(g, RowGrad) for g in host.model.named_gradients().values())
    assert sparse == (grid == "sparse")
    with strict_device(monkeypatch):
        backend = Backend("cuda")
        device = _trainer(backend, grid, optimizer=optimizer).run(8)
        assert any(isinstance(g, MaskedGrad) for g in device.model.named_gradients().values()) == sparse
        start = _trainer(Backend("cpu"), grid, optimizer=optimizer).model.named_parameters()
        for name, value in host.model.named_parameters().items():
            moved = backend.to_host(device.model.named_parameters()[name])
            # The same rows moved (Adam's m / sqrt(v) turns rounding in tiny gradients into 1e-6 steps).
            np.testing.assert_array_equal(moved != start[name], value != start[name], err_msg=name)
            np.testing.assert_allclose(moved, value, rtol=1e-4, atol=1e-5, err_msg=name)
        assert device.loss == pytest.approx(host.loss, rel=1e-4)


def test_the_sampler_draws_on_the_device(monkeypatch):
    with strict_device(monkeypatch) as device:
        backend = Backend("cuda")
        values = backend.asarray(PICTURE, dtype=np.uint8)
        for kind in FILTERS:  # the spline filter's vertices go to the device when it is made
            sampler = PictureSampler(values, 500, seed=1, kind=kind)
            with forbidding(device), backend.device_only():
                x, y = sampler(4)
            assert be.on_device(x) and be.on_device(y)
            host_x, host_y = PictureSampler(PICTURE, 500, seed=1, kind=kind)(4)
            np.testing.assert_array_equal(backend.to_host(x), host_x)
            np.testing.assert_allclose(backend.to_host(y), host_y, rtol=1e-6, atol=1e-7)
        with forbidding(device), backend.device_only():  # a tile: a slice of the picture on the device
            lattice, y = TileSampler(values, 500, seed=1)(4)
        host_lattice, host_y = TileSampler(PICTURE, 500, seed=1)(4)
        np.testing.assert_array_equal(lattice.points(), host_lattice.points())
        np.testing.assert_array_equal(backend.to_host(y), host_y)


def test_the_loop_and_its_callbacks_read_the_device_once_a_second(monkeypatch):
    """Around the steps, the check for NaN, the history and the progress lines read the loss at
    most once a second between them (a clock of 1 ms a step here), at the run's first step and
    at its end.  What a callback put off waits for the next read: the history's rows are read
    as the run goes (each loss its own step's), and the progress line comes at a read."""
    import io

    from ironlearn.train import Callback, History, Progress

    def run(backend):
        trainer = _trainer(backend, "dense")
        ticks = iter(range(10 ** 6))
        trainer.clock = lambda: next(ticks) * 0.0005  # read twice a step
        history, progress = History(every=10), Progress(3000, plain=True, stream=io.StringIO())
        trainer.callbacks = [history, progress]
        trainer.check_every = 10
        return trainer, history, progress

    host, host_history, _ = run(Backend("cpu"))
    host.run(3000)
    with strict_device(monkeypatch):
        device, history, progress = run(Backend("cuda"))
        read_at, updated_at, rows_at, cross, update = set(), [], {}, be._cross, progress._update
        monkeypatch.setattr(be, "_cross", lambda: (read_at.add(device.step), cross()))
        monkeypatch.setattr(progress, "_update", lambda trainer: (updated_at.append(trainer.step), update(trainer)))

        class Rows(Callback):
            def step(self, trainer):
                rows_at[trainer.step] = len(history.rows)

        device.callbacks.append(Rows(500))
        device.run(3000)
    assert sorted(read_at) == [1, 1001, 2001, 3000]  # the first step, a second later, ..., the end
    assert updated_at == [1001, 2001]  # due at 300, 1200 and 2100 (its tenths), shown at the reads after
    assert rows_at == {500: 0, 1000: 0, 1500: 100, 2000: 100, 2500: 200, 3000: 200}
    assert [row["step"] for row in history.rows] == list(range(10, 3001, 10))
    for got, want in zip(history.rows[:50], host_history.rows):  # each loss its step's (later, the paths drift)
        assert got["loss"] == pytest.approx(want["loss"], rel=1e-4), got["step"]


# -- the pretend GPU and the guard catch what they must ----------------------------------------
def test_the_pretend_device_catches_hidden_syncs(monkeypatch):
    with strict_device(monkeypatch):
        xp = Backend("cuda").xp
        a = xp.arange(6, dtype=np.float32)
        for sync in (lambda: float(a.sum()), lambda: a.sum().item(), lambda: a[a > 2], lambda: xp.flatnonzero(a),
                     lambda: xp.bincount(xp.arange(3)), lambda: bool(a.any()), lambda: xp.unique(a)):
            with pytest.raises(HiddenSync):
                sync()


def test_the_guard_catches_copies(monkeypatch):
    with strict_device(monkeypatch) as device:
        backend = Backend("cuda")
        on_device = backend.asarray(np.ones(3))
        with backend.device_only():
            with pytest.raises(be.HostTransferError):
                backend.asarray(np.ones(3))
            with pytest.raises(be.HostTransferError):
                be.to_host(on_device)
        with forbidding(device), pytest.raises(HiddenCopy):
            backend.xp.asarray([1.0, 2.0])  # a host constant rebuilt on the device
    with Backend("cpu").device_only():
        Backend("cpu").asarray(np.ones(3))  # on the CPU nothing crosses


def test_crossings_count_every_copy(monkeypatch):
    with strict_device(monkeypatch):
        backend = Backend("cuda")
        before = be.crossings()
        device = backend.asarray(np.ones(3))
        be.asarray_like(device, np.zeros(2))
        be.to_host(device)
        backend.to_host(device)
        assert be.crossings() - before == 4 and backend.transfers == 2
