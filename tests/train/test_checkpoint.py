import errno
import os

import numpy as np
import pytest

from ironlearn.nn import mlp, siren
from ironlearn.optim import Adam, constant, cosine
from helpers import rewrite_meta
from ironlearn.train import CheckpointError, checkpoint


@pytest.fixture
def saved(tmp_path):
    model = siren(2, 1, width=8, depth=2, rng=np.random.default_rng(0))
    opt = Adam(model.named_parameters(), lr=cosine(1e-3, 1e-5, 100))
    opt.step(model.named_gradients())
    path = tmp_path / "ckpt.npz"
    checkpoint.save(path, model, opt, seed=3, settings={"image": "cat.png"})
    return path, model


def test_load_rebuilds_model_optimizer_and_settings(saved):
    path, model = saved
    ckpt = checkpoint.load(path)
    assert ckpt.step == 1 and ckpt.settings == {"image": "cat.png"} and ckpt.meta["seed"] == 3
    assert ckpt.model.config() == model.config()
    for name, value in model.named_parameters().items():
        np.testing.assert_array_equal(ckpt.model.named_parameters()[name], value)
    opt = ckpt.optimizer(ckpt.model.named_parameters())
    assert opt.step_count == 1 and opt.schedule == cosine(1e-3, 1e-5, 100)
    assert set(opt.slots["m"]) == set(model.named_parameters())


def test_crash_mid_write_leaves_the_previous_checkpoint(saved, monkeypatch):
    path, model = saved
    before = path.read_bytes()

    def crash(file, **arrays):
        file.write(b"PK\x03\x04 half a zip")
        raise KeyboardInterrupt  # the process dies here

    monkeypatch.setattr(np, "savez", crash)
    with pytest.raises(KeyboardInterrupt):
        checkpoint.save(path, model, seed=3)
    assert path.read_bytes() == before
    assert os.listdir(path.parent) == [path.name]  # no temporary file left behind
    monkeypatch.undo()
    assert checkpoint.load(path).step == 1


def test_disk_full_is_a_clear_error(saved, monkeypatch):
    path, model = saved
    before = path.read_bytes()

    def full(file, **arrays):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(np, "savez", full)
    with pytest.raises(CheckpointError, match="No space left on device.*previous file is intact"):
        checkpoint.save(path, model)
    assert path.read_bytes() == before


def test_refuses_to_save_nan(tmp_path):
    model = mlp(2, 1, width=4, depth=1, rng=np.random.default_rng(0))
    model.layers[0].params["weight"][0, 0] = np.nan
    with pytest.raises(CheckpointError, match="NaN"):
        checkpoint.save(tmp_path / "x.npz", model)
    assert not (tmp_path / "x.npz").exists()


@pytest.mark.parametrize("damage", ["truncated", "random", "empty", "missing"])
def test_damaged_files_raise_a_clear_error(saved, damage):
    path, _ = saved
    data = path.read_bytes()
    if damage == "truncated":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "random":
        path.write_bytes(np.random.default_rng(0).bytes(2000))
    elif damage == "empty":
        path.write_bytes(b"")
    else:
        path.unlink()
    for read in (checkpoint.load, checkpoint.read_meta):
        with pytest.raises(CheckpointError, match=str(path.name)):
            read(path)


def test_read_meta_gives_step_and_settings_without_the_arrays(saved):
    path, _ = saved
    meta = checkpoint.read_meta(path)
    assert meta["step"] == 1 and meta["settings"] == {"image": "cat.png"} and meta == checkpoint.load(path).meta


def test_newer_format_is_refused(saved):
    path, _ = saved
    rewrite_meta(path, lambda meta, arrays: meta.update(version=99))
    with pytest.raises(CheckpointError, match="format 99.*upgrade"):
        checkpoint.load(path)


def test_arrays_from_another_architecture_are_refused(saved):
    path, _ = saved
    rewrite_meta(path, lambda meta, arrays: meta["architecture"]["layers"][0].update(out_features=9))
    with pytest.raises(CheckpointError, match="do not fit"):
        checkpoint.load(path)


def test_foreign_npz_is_refused(tmp_path):
    path = tmp_path / "foreign.npz"
    np.savez(path, a=np.zeros(3))
    for read in (checkpoint.load, checkpoint.read_meta):
        with pytest.raises(CheckpointError, match="foreign.npz"):
            read(path)


def test_a_schedule_that_cannot_be_saved_is_refused_at_save_time(tmp_path):
    model = mlp(2, 1, width=4, depth=1, rng=np.random.default_rng(0))
    opt = Adam(model.named_parameters(), lr=lambda step: 1e-3)  # no config(): it could not be rebuilt
    with pytest.raises(CheckpointError, match="ironlearn.optim.constant"):
        checkpoint.save(tmp_path / "x.npz", model, opt)
    assert not (tmp_path / "x.npz").exists()


def test_a_checkpoint_without_its_schedule_needs_one_given(saved):
    path, _ = saved
    rewrite_meta(path, lambda meta, arrays: meta.pop("schedule"))
    ckpt = checkpoint.load(path)
    with pytest.raises(CheckpointError, match="schedule"):
        ckpt.optimizer(ckpt.model.named_parameters())
    opt = ckpt.optimizer(ckpt.model.named_parameters(), schedule=constant(1e-4))
    assert opt.schedule == constant(1e-4) and opt.step_count == 1
