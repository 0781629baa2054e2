"""A benchmark trains what ``ironlearn fit`` trains: a job from benchmarks/common.py takes the
same first steps as the fit job, bit for bit, on the default models of a photograph (a pixel
spline started as the picture, a tile a step, its head held), of a gray thumbnail (every pixel
and samples between), on the hash-grid pyramid and on SIREN."""

import os
import sys

import numpy as np
import pytest
from PIL import Image

BENCHMARKS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "benchmarks")
sys.path.insert(0, BENCHMARKS)

import common  # noqa: E402

from ironlearn.backend import Backend  # noqa: E402
from ironlearn.fitting import FitOptions, fit  # noqa: E402
from ironlearn.fitting.regimes import PIXEL_SPLINE, PYRAMID  # noqa: E402
from ironlearn.image.io import Picture  # noqa: E402
from ironlearn.train import checkpoint  # noqa: E402

STEPS = 5


def _picture(width: int, height: int, channels: int) -> np.ndarray:
    """A uint8 picture with smooth parts and fine detail (the same every call)."""
    y, x = np.mgrid[0:height, 0:width].astype(np.float32)
    rng = np.random.default_rng(7)
    values = [0.5 + 0.3 * np.sin(x / (9 + 4 * c) + y / (13 + c)) for c in range(channels)]
    pixels = np.stack(values, -1) + rng.normal(0, 0.08, (height, width, channels))
    return (np.clip(pixels, 0, 1) * 255 + 0.5).astype(np.uint8)


CASES = {  # name: (width, height, mode, FitOptions settings, the regime the plan must have)
    "photograph, pixel spline a tile a step": (320, 240, "rgb", {}, PIXEL_SPLINE),
    "gray thumbnail, every pixel and between": (48, 40, "gray", {}, None),
    "hash-grid pyramid, sampled": (120, 80, "rgb", {"model_options": {"finest": 120}, "batch_size": 2048}, PYRAMID),
    "SIREN": (32, 24, "gray", {"model": "siren", "model_options": {"width": 16}}, None),
}


@pytest.mark.parametrize("name", list(CASES))
def test_a_benchmark_job_takes_the_fit_commands_first_steps_bit_for_bit(tmp_path, name, one_thread_count):
    width, height, mode, settings, regime = CASES[name]
    pixels = _picture(width, height, 3 if mode == "rgb" else 1)
    path = tmp_path / "picture.png"
    Image.fromarray(pixels if mode == "rgb" else pixels[..., 0]).save(path)

    fit(FitOptions(str(path), out=str(tmp_path / "fit"), mode=mode, steps=STEPS, quiet=True, progress="none",
                   **settings))
    fitted = checkpoint.load(tmp_path / "fit" / "checkpoint.npz")

    folder = tmp_path / "benchmark"
    folder.mkdir()
    job = common.job_for(Picture(pixels, mode, "benchmark"), Backend("cpu"), str(folder), steps=STEPS, **settings)
    start = {key: np.array(array) for key, array in job.trainer.model.named_arrays().items()}
    common.timed_run(job)

    if regime is not None:
        assert job.plan.regime is regime
    if regime is PIXEL_SPLINE:  # what the issue found missing: tiles, the picture as the start, a held head
        assert job.plan.trains_tiles and job.trainer.held and job.trainer.count_callbacks
    assert fitted.step == job.trainer.step == STEPS
    ours = job.trainer.model.named_arrays()
    theirs = fitted.model.named_arrays()
    assert list(ours) == list(theirs)
    for key, array in ours.items():
        np.testing.assert_array_equal(array, theirs[key], err_msg=f"{name}: {key}")
    assert any(not np.array_equal(array, start[key]) for key, array in ours.items())  # it trained

def test_a_benchmark_job_starts_a_photograph_as_the_picture(tmp_path):
    pixels = _picture(320, 240, 3)
    job = common.job_for(Picture(pixels, "rgb", "benchmark"), Backend("cpu"), str(tmp_path), steps=STEPS)
    from ironlearn.image import psnr, render

    start = psnr(render(job.trainer.model, 320, 240, Backend("cpu")), pixels.astype(np.float32) / 255)
    assert start > 60  # a random start is near 10 dB
