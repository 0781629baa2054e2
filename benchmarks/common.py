"""Shared pieces of the benchmarks: the test pictures and a timed fit with PSNR marks."""

from __future__ import annotations

import os
import platform
from importlib import resources

import numpy as np
from PIL import Image

from ironlearn.backend import Backend
from ironlearn.fitting import PRESETS, calibrate
from ironlearn.image import load_picture, psnr, render
from ironlearn.image.coords import pixel_grid
from ironlearn.image.io import Picture
from ironlearn.nn import mse
from ironlearn.optim import Adam, warmup_cosine
from ironlearn.train import Callback, Trainer


def machine() -> str:
    blas = "unknown BLAS"
    try:
        info = np.show_config(mode="dicts")["Build Dependencies"]["blas"]
        blas = f"{info['name']} {info.get('version', '')}".strip()
    except Exception:
        pass
    return f"{platform.machine()}, {os.cpu_count()} cores, NumPy {np.__version__} with {blas}"


def skimage_picture(name: str, size: int, mode: str) -> Picture:
    """scikit-image's ``camera`` or ``astronaut``, resized (Lanczos) to ``size`` x ``size``."""
    import skimage.data

    array = getattr(skimage.data, name)()
    image = Image.fromarray(array).resize((size, size), Image.LANCZOS)
    pixels = np.asarray(image, np.float32) / 255.0
    pixels = pixels[..., None] if pixels.ndim == 2 else pixels
    return Picture(values=pixels if mode != "gray" or pixels.shape[2] == 1 else pixels.mean(-1, keepdims=True),
                   mode=mode, source=name)


def sample_picture() -> Picture:
    with resources.as_file(resources.files("ironlearn") / "data" / "sample.png") as path:
        return load_picture(path, mode="binary")


class Marks(Callback):
    """Full-image PSNR each time the training clock passes a mark (evaluation time is not counted)."""

    def __init__(self, marks, picture, backend):
        super().__init__(1)
        self.pending, self.picture, self.backend = sorted(marks), picture, backend
        self.reached = {}

    def evaluate(self, model) -> float:
        return psnr(render(model, self.picture.width, self.picture.height, self.backend), self.picture.pixels)

    def step(self, trainer):
        while self.pending and trainer.train_seconds >= self.pending[0]:
            self.reached[self.pending.pop(0)] = (self.evaluate(trainer.model), trainer.step)


def timed_fit(preset_name: str, picture: Picture, seconds: float, marks, seed: int = 0, options=None):
    """Fit as ``ironlearn fit --model NAME --time-budget SECONDS`` does (same presets, the same
    calibrated cosine schedule); returns (model, {mark: (psnr, step)}, steps, train seconds)."""
    backend = Backend("cpu")
    preset = PRESETS[preset_name]
    resolved = preset.resolve(options or {}, picture.width, picture.height, picture.channels)
    model = preset.build(picture.channels, resolved, np.random.default_rng(seed))
    points = picture.width * picture.height
    x = backend.asarray(pixel_grid(picture.width, picture.height))
    y = backend.asarray(picture.pixels.reshape(points, picture.channels))
    batch = preset.batch_size if preset.batch_size and preset.batch_size < points else None
    total = max(10, int(seconds / calibrate(model, x, y, batch, seed)))
    optimizer = Adam(model.named_parameters(), lr=warmup_cosine(preset.lr, preset.lr_min, total))
    recorder = Marks(marks, picture, backend)
    trainer = Trainer(model, optimizer, mse, x, y, batch_size=batch, seed=seed, callbacks=[recorder],
                      check_every=100)
    trainer.run(total, time_budget=seconds)
    for mark in recorder.pending:  # finished before the mark: its final quality holds there
        recorder.reached[mark] = (recorder.evaluate(model), trainer.step)
    return model, recorder.reached, trainer.step, trainer.train_seconds
