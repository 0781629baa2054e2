"""Shared pieces of the benchmarks: the test pictures and a timed fit with PSNR marks."""

from __future__ import annotations

import glob
import io
import os
import platform
import subprocess
import sys
import zipfile
from importlib import resources

import numpy as np
from PIL import Image

from ironlearn.backend import Backend
from ironlearn.fitting import FitOptions, calibrate, make_plan
from ironlearn.fitting.pace import Replan
from ironlearn.fitting.run import new_model, training_data
from ironlearn.image import load_picture, psnr, render
from ironlearn.image.io import Picture
from ironlearn.nn import mse
from ironlearn.optim import Adam
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


SPORCO_PHOTOS = ("kodim23", "monarch", "sail", "tulips")


def sporco_photos(folder: str, names=SPORCO_PHOTOS) -> list[tuple[str, np.ndarray]]:
    """The photographs that the ``sporco`` wheel ships, read from the wheel, never imported.

    The wheel is downloaded into ``folder`` (``pip download --no-deps sporco``) unless one is
    there already. Returns (name, uint8 RGB array of shape (512, 768, 3)) for each of ``names``;
    kodim23, monarch, sail and tulips are all 768x512 (its barbara, 702x574, is left out).
    """
    wheels = glob.glob(os.path.join(folder, "sporco-*.whl"))
    if not wheels:
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "--quiet", "sporco", "-d", folder],
                       check=True)
        wheels = glob.glob(os.path.join(folder, "sporco-*.whl"))
    with zipfile.ZipFile(sorted(wheels)[-1]) as wheel:
        return [(name, np.asarray(Image.open(io.BytesIO(wheel.read(f"sporco/data/{name}.png"))).convert("RGB")))
                for name in names]


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


class _TimedRun:
    """What :class:`~ironlearn.fitting.pace.Replan` needs of a fit job: its plan, and the schedule
    following a new one."""

    def __init__(self, plan, optimizer):
        self.plan, self.optimizer = plan, optimizer
        self.stalled_seconds = 0.0

    def replan(self, plan) -> None:
        self.plan = plan
        self.optimizer.schedule = plan.make_schedule()


def timed_fit(preset_name: str, picture: Picture, seconds: float, marks, seed: int = 0, options=None, **settings):
    """Fit as ``ironlearn fit --model NAME --time-budget SECONDS`` does (the same plan, data and
    calibrated schedule); returns (model, {mark: (psnr, step)}, steps, train seconds).

    ``settings`` are further FitOptions (``filter="centres"``, ``batch_size=0``, ...)."""
    backend = Backend("cpu")
    plan = make_plan(FitOptions("benchmark", model=preset_name, model_options=options or {}, seed=seed,
                                time_budget=seconds, **settings), picture)
    model = new_model(plan).to(backend)
    data = training_data(plan, picture, backend)
    plan = plan.calibrated(calibrate(model, data))
    optimizer = Adam(model.named_parameters(), lr=plan.make_schedule())
    recorder = Marks(marks, picture, backend)
    trainer = Trainer(model, optimizer, mse, **data, callbacks=[recorder], check_every=100, backend=backend)
    trainer.callbacks.append(Replan(_TimedRun(plan, optimizer)))
    trainer.run(time_budget=seconds)
    for mark in recorder.pending:  # finished before the mark: its final quality holds there
        recorder.reached[mark] = (recorder.evaluate(trainer.model), trainer.step)
    return trainer.model, recorder.reached, trainer.step, trainer.train_seconds
