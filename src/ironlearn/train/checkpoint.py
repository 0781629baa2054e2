"""Checkpoints: one ``.npz`` holding everything a run needs to continue.

Layout of the archive:

* ``model/<dotted name>``: every parameter (``model/layers.0.weight``);
* ``optim/<slot>.<dotted name>``: optimizer slots (``optim/m.layers.0.weight``);
* ``meta``: UTF-8 JSON as a byte array: format version, architecture, optimizer
  and schedule settings, step, random state (the seed: batch order is a pure
  function of seed and step) and whatever the caller adds under ``settings``.

Files are written atomically: a temporary file in the same folder, flushed and
synced, then ``os.replace``; a crash mid-write leaves the previous file intact.
"""

from __future__ import annotations

import json
import os
import zipfile
from dataclasses import dataclass, field

import numpy as np

from ..backend import to_host
from ..files import atomic_write
from ..nn.model import Sequential
from ..optim import schedules
from ..optim.optimizers import OPTIMIZERS

FORMAT = "ironlearn"
FORMAT_VERSION = 1


class CheckpointError(ValueError):
    """A checkpoint could not be written or read; the message says why and what to do."""


def save(path, model, optimizer=None, *, step: int | None = None, seed: int | None = None,
         settings: dict | None = None) -> None:
    """Write ``model`` (and ``optimizer``, when given) to ``path`` atomically.

    ``step`` defaults to the optimizer's step count (0 without one).

    Raises
    ------
    CheckpointError
        When a parameter is NaN/inf (a diverged model is never saved over a good
        one), the optimizer's schedule cannot be saved (a plain function: a
        resumed run could not continue its curve) or the file cannot be written
        (disk full, permissions).  Nothing is written then.
    """
    if optimizer is not None and not hasattr(optimizer.schedule, "config"):
        raise CheckpointError(f"refusing to save {path}: the learning-rate schedule {optimizer.schedule!r} cannot be "
                              "saved, so a resumed run could not continue it; build it with "
                              "ironlearn.optim.constant, cosine or warmup_cosine")
    arrays = {f"model/{name}": to_host(value) for name, value in model.named_arrays().items()}
    bad = [name for name, value in arrays.items() if not np.isfinite(value).all()]
    if bad:
        raise CheckpointError(f"refusing to save {path}: {bad[0][6:]} holds NaN or inf values")
    meta = {"format": FORMAT, "version": FORMAT_VERSION, "architecture": model.config(),
            "parameters": model.num_parameters, "step": step or 0, "seed": seed, "settings": settings or {}}
    if optimizer is not None:
        state = optimizer.state_dict()
        optimizer_step = state.pop("step")
        meta["step"] = optimizer_step if step is None else step
        meta["optimizer"] = optimizer.config()
        meta["schedule"] = optimizer.schedule.config()
        arrays.update({f"optim/{key}": to_host(value) for key, value in state.items()})
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    try:
        atomic_write(path, lambda file: np.savez(file, **arrays))
    except OSError as exc:
        raise CheckpointError(f"could not write {path}: {exc.strerror or exc}; "
                              "free some space or choose another folder (the previous file is intact)") from None


@dataclass
class Checkpoint:
    """What :func:`load` returns: a rebuilt model (on the CPU), optimizer arrays and metadata."""

    model: Sequential
    meta: dict
    optimizer_state: dict = field(default_factory=dict)

    @property
    def step(self) -> int:
        return int(self.meta.get("step", 0))

    @property
    def settings(self) -> dict:
        return self.meta.get("settings", {})

    def optimizer(self, params: dict, schedule=None):
        """Rebuild the saved optimizer on ``params``, its step and slots restored.

        ``schedule`` replaces the saved learning-rate schedule (a resumed run may
        train longer); by default the saved one is rebuilt.
        """
        if "optimizer" not in self.meta:
            raise CheckpointError("this file holds a model without optimizer state; build a new optimizer")
        if schedule is None:
            if "schedule" not in self.meta:
                raise CheckpointError("this checkpoint does not record its learning-rate schedule; "
                                      "pass one: checkpoint.optimizer(params, schedule=...)")
            schedule = schedules.from_config(self.meta["schedule"])
        config = dict(self.meta["optimizer"])
        cls = OPTIMIZERS[config.pop("type").lower()]
        if "betas" in config:
            config["betas"] = tuple(config["betas"])
        optimizer = cls(params, lr=schedule, **config)
        try:
            optimizer.load_state_dict({"step": self.step, **self.optimizer_state})
        except ValueError as exc:
            raise CheckpointError(f"the saved optimizer state does not fit these parameters ({exc})") from None
        return optimizer


def load(path) -> Checkpoint:
    """Read a checkpoint or model file written by :func:`save`.

    Raises
    ------
    CheckpointError
        Missing, truncated, corrupt, foreign or newer-format files, or arrays
        that do not fit the saved architecture; the message names the file.
    """
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise CheckpointError(f"{path}: no such file")
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {key: archive[key] for key in archive.files}  # reads (and CRC-checks) everything
        meta = json.loads(arrays.pop("meta").tobytes().decode())
    except (zipfile.BadZipFile, ValueError, KeyError, OSError, EOFError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"{path}: not a readable ironlearn checkpoint (truncated or corrupt: {exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CheckpointError(f"{path}: not an ironlearn checkpoint")
    version = meta.get("version")
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise CheckpointError(f"{path}: written in checkpoint format {version}, newer than this ironlearn "
                              f"reads ({FORMAT_VERSION}); upgrade ironlearn")
    try:
        model = Sequential.from_config(meta["architecture"])
        model.load_state_dict({k[6:]: v for k, v in arrays.items() if k.startswith("model/")}, strict=True)
    except (KeyError, TypeError, ValueError) as exc:
        raise CheckpointError(f"{path}: arrays do not fit the saved architecture ({exc})") from None
    optimizer_state = {k[6:]: v for k, v in arrays.items() if k.startswith("optim/")}
    return Checkpoint(model=model, meta=meta, optimizer_state=optimizer_state)


def read_meta(path) -> dict:
    """The metadata of a checkpoint or model file (step, settings, ...) without reading its arrays.

    Raises
    ------
    CheckpointError
        Missing, unreadable or foreign files; the message names the file.
    """
    path = os.fspath(path)
    try:
        with np.load(path, allow_pickle=False) as archive:
            meta = json.loads(archive["meta"].tobytes().decode())
    except FileNotFoundError:
        raise CheckpointError(f"{path}: no such file") from None
    except (zipfile.BadZipFile, ValueError, KeyError, OSError, EOFError, UnicodeDecodeError) as exc:
        raise CheckpointError(f"{path}: not a readable ironlearn checkpoint (truncated or corrupt: {exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CheckpointError(f"{path}: not an ironlearn checkpoint")
    return meta
