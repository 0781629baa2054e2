"""Shared pieces of the benchmarks: the test pictures, the fit job as ``ironlearn fit`` builds it,
its timed run with PSNR marks, and step timing.

Every benchmark that trains a preset builds its job with :func:`job_for`, which calls the fit
job's own :func:`~ironlearn.fitting.run.build`: the same model (started as the picture where
``fit`` starts it so), data, held parameters, loss guard, counted callbacks and checkpoints (in
a folder of the benchmark's), so that its figures are the command's.  A test checks that the
two take the same first steps bit for bit (tests/test_benchmark_jobs.py).
"""

from __future__ import annotations

import glob
import io
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from dataclasses import dataclass
from importlib import resources
from typing import Callable

import numpy as np
from PIL import Image

from ironlearn.backend import Backend
from ironlearn.fitting import FitOptions, make_plan
from ironlearn.train.timed import Replan
from ironlearn.fitting.run import Job, build
from ironlearn.image import load_picture, psnr, render
from ironlearn.image.io import Picture
from ironlearn.train import Callback


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


#: What a busy neighbour runs: products of NumPy's default BLAS threads (two on two cores), until
#: it is stopped (``python -c NEIGHBOUR``).
NEIGHBOUR = ("import numpy as np\n"
             "a = np.random.default_rng(0).random((1500, 1500))\n"
             "while True:\n"
             "    a = a @ a\n"
             "    a /= np.abs(a).max()\n")


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


def sporco_pngs(work: str, wheels: str, count: int | None = None) -> list[tuple[str, str]]:
    """The first ``count`` (default all) of :func:`sporco_photos`, saved as PNGs in ``work``:
    ``[(name, path)]``, for benchmarks that run the command on them."""
    saved = []
    for name, pixels in sporco_photos(wheels)[:count]:
        path = os.path.join(work, f"{name}.png")
        Image.fromarray(pixels).save(path)
        saved.append((name, path))
    return saved


def add_tree_arguments(parser) -> None:
    """``--trees`` (``src`` folders of checkouts to run side by side) and ``--wheels`` (where
    sporco's wheel is kept): what the benchmarks that compare trees on sporco's photos take."""
    parser.add_argument("--trees", nargs="+", default=[None], help="src folders of ironlearn checkouts")
    parser.add_argument("--wheels", default=os.path.join(tempfile.gettempdir(), "ironlearn-wheels"))


def tree_environment(tree: str | None) -> dict:
    """This environment with the ironlearn checkout ``src`` folder ``tree`` first on the path
    (None: the installed ironlearn), for a benchmark that runs trees side by side."""
    env = dict(os.environ)
    if tree is not None:
        env["PYTHONPATH"] = os.pathsep.join(filter(None, [tree, env.get("PYTHONPATH")]))
    return env


def sample_picture() -> Picture:
    with resources.as_file(resources.files("ironlearn") / "data" / "sample.png") as path:
        return load_picture(path, mode="binary")


# -- the fit job --------------------------------------------------------------------------------
class _Shape(Picture):
    """A picture's size and mode without its pixels: all a plan needs (its fingerprint is of nothing)."""

    def band(self, rows=slice(None)):
        return np.zeros((0, self.width, self.channels), np.float32)


def shape_of(width: int, height: int, mode: str) -> Picture:
    """A stand-in of a ``width`` x ``height`` picture in ``mode`` for :func:`make_plan`."""
    channels = 3 if mode == "rgb" else 1
    return _Shape(np.broadcast_to(np.zeros((1, 1, channels), np.uint8), (height, width, channels)), mode, "shape")


def pyramid(width: int, height: int) -> dict:
    """The fit settings that force the hash-grid pyramid on a ``width`` x ``height`` picture, at
    its own default sizing: ``--finest`` at the longest side (a layout option given)."""
    return {"model_options": {"finest": max(width, height)}}


def job_for(picture: Picture, backend, folder: str, **settings) -> Job:
    """What ``ironlearn fit`` builds for ``picture`` (its values on ``backend``'s device, or the
    host: copied once), given ``settings`` (FitOptions fields: ``model``, ``steps``,
    ``time_budget``, ``batch_size``, ...), with its run folder at ``folder`` (an existing,
    empty folder: the checkpoints go there).  A plan with only a time budget is calibrated.

    The plan reads the picture's size and mode only: fingerprinting a picture on a device would
    copy it to the host, and the fingerprint changes nothing in training.
    """
    options = FitOptions(picture.source, out=folder, device=backend.device, quiet=True, progress="none", **settings)
    plan = make_plan(options, shape_of(picture.width, picture.height, picture.mode))
    return build(plan, picture, None, backend)


class Watch(Callback):
    """The whole picture's PSNR, from ``evaluate(model) -> dB``, when the training clock passes
    each of ``marks`` (seconds), and every ``probe`` seconds until ``target`` dB (then the run
    stops).  The work the device still has queued is waited for and counted as training, as a
    checkpoint's would be; the evaluation is not (the job counts its callbacks' time, so this
    takes it back off).  Put it after the callbacks that read the clock (Replan)."""

    def __init__(self, evaluate, backend, marks=(), target=None, probe=None):
        super().__init__(1)
        self.evaluate, self.backend = evaluate, backend
        self.pending, self.target, self.probe = sorted(marks), target, probe
        self.next_probe = probe or float("inf")
        self.reached, self.curve, self.hit = {}, [], None
        self.pool_held = 0  # the most bytes CuPy's pool held when an evaluation began (0 on the CPU)

    def _due(self, seconds: float) -> bool:
        return bool(self.pending and seconds >= self.pending[0]) or seconds >= self.next_probe

    def step(self, trainer) -> None:
        if not self._due(trainer.train_seconds):
            return
        t0 = time.perf_counter()
        self.backend.synchronize()
        synced = time.perf_counter()
        seconds = trainer.train_seconds + (synced - t0)
        self.pool_held = max(self.pool_held, self.backend.memory_stats().get("pool_total_bytes", 0))
        value = self.evaluate(trainer.model)
        self.backend.release_unused()  # the evaluation's arrays are not the training's
        trainer.train_seconds -= time.perf_counter() - synced
        self._record(trainer, seconds, value)

    def _record(self, trainer, seconds: float, value: float) -> None:
        point = {"psnr_db": value, "step": trainer.step, "seconds": round(seconds, 3)}
        while self.pending and seconds >= self.pending[0]:
            self.reached[self.pending.pop(0)] = point
        if seconds >= self.next_probe:
            self.curve.append([point["seconds"], trainer.step, value])
            self.next_probe = seconds + self.probe
            if self.target is not None and value >= self.target and self.hit is None:
                self.hit = point
                trainer.request_stop()

    def finish(self, trainer) -> None:
        """Marks the run ended before: its last state holds there."""
        if self.pending:
            self.backend.synchronize()
            point = {"psnr_db": self.evaluate(trainer.model), "step": trainer.step,
                     "seconds": round(trainer.train_seconds, 3)}
            self.reached.update(dict.fromkeys(self.pending, point))
            self.pending = []


def timed_run(job: Job, watch: Watch | None = None) -> Job:
    """Train ``job`` as ``ironlearn fit`` trains it (fitting.run.train): to its steps, or, timed,
    through its budget with the schedule re-planned to the pace (Replan); ``watch`` reads the
    PSNR on the way.  Unlike ``fit`` it does not retry after divergence: a benchmark that
    diverges says so."""
    trainer = job.trainer
    if job.plan.timed:
        trainer.callbacks.append(Replan(job))
    if watch is not None:
        trainer.callbacks.append(watch)
    trainer.run(None if job.plan.timed else job.plan.steps, time_budget=job.plan.remaining_seconds)
    if watch is not None:
        watch.finish(trainer)
    return job


def timed_fit(preset_name: str, picture: Picture, seconds: float, marks, seed: int = 0, options=None, **settings):
    """Fit on the CPU as ``ironlearn fit --model NAME --time-budget SECONDS`` does; returns
    (model, {mark: {"psnr_db", "step", "seconds"}}, steps, train seconds).

    ``settings`` are further FitOptions (``filter="centres"``, ``batch_size=0``, ...)."""
    backend = Backend("cpu")

    def evaluate(model) -> float:
        return psnr(render(model, picture.width, picture.height, backend), picture.pixels)

    watch = Watch(evaluate, backend, marks)
    with tempfile.TemporaryDirectory(prefix="ironlearn-benchmark-") as folder:
        job = job_for(picture, backend, folder, model=preset_name, model_options=options or {}, seed=seed,
                      time_budget=seconds, **settings)
        timed_run(job, watch)
    trainer = job.trainer
    return trainer.model, watch.reached, trainer.step, trainer.train_seconds


# -- timing -------------------------------------------------------------------------------------
@dataclass(frozen=True)
class Clock:
    """How a benchmark waits for a device and marks time: ``mark()`` records a point (a CUDA
    event on a GPU, which costs no sync until read), ``elapsed_ms(a, b)`` reads two back."""

    sync: Callable[[], None]
    mark: Callable[[], object]
    elapsed_ms: Callable[[object, object], float]


def wall_clock(sync=lambda: None) -> Clock:
    return Clock(sync, time.perf_counter, lambda a, b: (b - a) * 1000)


def backend_clock(backend) -> Clock:
    """CUDA events on ``backend``'s GPU; the wall clock on the CPU."""
    if backend.device != "cuda":
        return wall_clock(backend.synchronize)
    cuda = backend.xp.cuda

    def mark():
        event = cuda.Event()
        event.record()
        return event

    return Clock(backend.synchronize, mark, cuda.get_elapsed_time)


def time_steps(step, clock: Clock, warmup: int, steps: int) -> dict:
    """Cold (the first step, compilation included) and warm (the median of ``steps`` after
    ``warmup``, each between two of ``clock``'s marks) milliseconds a ``step()``; and the wall
    time a step over the timed ones, which also counts the host's launch overhead."""
    clock.sync()
    t0 = time.perf_counter()
    step()
    clock.sync()
    cold = (time.perf_counter() - t0) * 1000
    for _ in range(warmup):
        step()
    clock.sync()
    t0, marks = time.perf_counter(), []
    for _ in range(steps):
        start = clock.mark()
        step()
        marks.append((start, clock.mark()))
    clock.sync()
    wall = (time.perf_counter() - t0) * 1000 / max(steps, 1)
    times = sorted(clock.elapsed_ms(a, b) for a, b in marks)
    return {"cold_ms": round(cold, 3), "warm_median_ms": round(statistics.median(times), 4),
            "warm_p90_ms": round(times[int(0.9 * (len(times) - 1))], 4), "wall_ms_per_step": round(wall, 4),
            "warmup": warmup, "steps": steps}


def spread(values, unit: str = "") -> str:
    """``min X, median Y, max Z`` of ``values`` (signed, two decimals, ``unit`` after each)."""
    return (f"min {min(values):+.2f}{unit}, median {statistics.median(values):+.2f}{unit}, "
            f"max {max(values):+.2f}{unit}")


def write_results(folder: str, rows: list) -> str:
    """Every row of a benchmark as ``folder``/results.json (written atomically); returns its path."""
    from ironlearn.files import atomic_write

    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, "results.json")
    atomic_write(path, lambda file: file.write(json.dumps(rows, indent=1).encode()))
    return path


def add_set_arguments(parser, name: str, rates) -> None:
    """``--rates`` (bits a pixel; default ``rates``), ``--out`` (runs/``name``) and ``--wheels``
    (where sporco's wheel is kept): what the codec's experiments on sporco's photographs take."""
    parser.add_argument("--rates", nargs="+", type=float, default=list(rates))
    parser.add_argument("--out", default=os.path.join("runs", name))
    parser.add_argument("--wheels", default=os.path.join(tempfile.gettempdir(), "ironlearn-wheels"))
