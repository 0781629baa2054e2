"""One command for a GPU machine: the tests on CuPy, the step and quality benchmarks, a report.

    python benchmarks/gpu.py --out DIR                 # on the GPU, within a 9-minute budget (--budget 540)
    python benchmarks/gpu.py --out DIR --device cpu    # the same parts, tiny, on the CPU (under a minute)
    make gpu-check OUT=DIR                             # the first, through make

It writes ``DIR/report.md`` and ``DIR/report.json`` after every part, so a run cut short keeps
what it measured.  Each part runs in a process of its own, under a time limit of its own and
within the run's ``--budget``: a kernel that crashes, or a part that hangs, costs that part only.
The parts, in the order they run (``--parts`` picks some):

env       the GPU, its driver, CUDA, CuPy and PyTorch versions; nvcc; scikit-image
tests     pytest with the cuda backend selected (tests whose id names cuda, the kernels' and the
          no-hidden-syncs tests; ``--tests all`` runs the whole suite), outcome of each test
syncs     host<->device copies (the backend's counter) and syncs (``cupyx.allow_synchronize(False)``
          around the step, and whether a step returns while the GPU is still busy with a kernel
          queued before it) in training steps of the default model, each kernel mode
kernels   the hash grid's read and scatter and Adam's update: CUDA kernels against the portable
          CuPy path (``cupyx.scatter_add``), time and largest difference
step      the default model's step at batch 2^16 and 2^18 (12-megapixel picture): cold (the first
          step) and warm (median of 500 after 50, CUDA events), each kernel mode; peak pool bytes
torch     the same model in PyTorch (benchmarks/torch_peer.py), eager and ``torch.compile``
siren     SIREN 3x256 on 262,144 points, ironlearn against PyTorch eager
camera    scikit-image's camera at 512x512: training time to 40 dB (a 30 s schedule)
photo12   a 12-megapixel test photograph: PSNR at 10 s and 60 s, peak pool bytes
photo100  100 megapixels: PSNR at 60 s, peak pool bytes
parity    the same seed on NumPy and CuPy, 1,000 steps: the PSNR of each and their difference

Nothing here needs the internet: without scikit-image the pictures are synthetic (made on the
device) and the report says so.  ``--device cpu`` runs every part at tiny sizes (the test suite
runs it so, so that this script cannot rot); its figures measure nothing.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import json
import math
import os
import platform
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
SRC = os.path.join(ROOT, "src")
sys.path.insert(0, HERE)
sys.path.insert(1, SRC)  # a GPU machine may have CuPy and PyTorch but no installed ironlearn


def _environment() -> dict:
    """The environment of the processes this starts: ironlearn importable from src/."""
    path = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": SRC + (os.pathsep + path if path else "")}

from ironlearn import backend as be  # noqa: E402
from ironlearn import kernels  # noqa: E402
from ironlearn.backend import Backend  # noqa: E402
from ironlearn.fitting import FitOptions, calibrate, make_plan  # noqa: E402
from ironlearn.fitting.pace import Replan  # noqa: E402
from ironlearn.fitting.run import new_model, training_data  # noqa: E402
from ironlearn.image.io import Picture  # noqa: E402
from ironlearn.nn import mse, siren  # noqa: E402
from ironlearn.optim import Adam  # noqa: E402
from ironlearn.train import Callback, Trainer  # noqa: E402


# -- sizes and limits ------------------------------------------------------------------------------
@dataclass(frozen=True)
class Sizes:
    """How large each part runs: ``full`` on a GPU, ``tiny`` for the CPU's check of the script."""

    warmup: int  # steps before timing
    steps: int  # steps timed
    batches: tuple  # the step benchmark's batch sizes
    photo: tuple  # (width, height) of the 12-megapixel picture
    photo_marks: tuple  # training seconds at which its PSNR is read
    big_photo: tuple
    big_marks: tuple
    camera: int  # camera's side
    camera_target: float  # dB
    camera_seconds: float  # the schedule's length, and the most it may take
    probe_seconds: float  # training time between PSNR reads while waiting for the target
    parity_side: int
    parity_steps: int
    siren_width: int
    siren_side: int  # points = side**2
    kernel_reps: int
    pytest: tuple  # what pytest runs for the tests part


FULL = Sizes(warmup=50, steps=500, batches=(1 << 16, 1 << 18), photo=(4096, 3072), photo_marks=(10, 60),
             big_photo=(10000, 10000), big_marks=(60,), camera=512, camera_target=40.0, camera_seconds=30.0,
             probe_seconds=0.25, parity_side=256, parity_steps=1000, siren_width=256, siren_side=512,
             kernel_reps=50, pytest=("tests", "-k", "cuda or kernels or hidden_syncs"))
TINY = Sizes(warmup=2, steps=5, batches=(1 << 10, 1 << 12), photo=(320, 240), photo_marks=(0.25, 0.5),
             big_photo=(480, 360), big_marks=(0.5,), camera=64, camera_target=30.0, camera_seconds=1.0,
             probe_seconds=0.25, parity_side=32, parity_steps=20, siren_width=32, siren_side=64,
             kernel_reps=3, pytest=("tests/test_backend.py",))
SIZES = {"full": FULL, "tiny": TINY}

#: Each part's time limit in seconds at full size (tiny: :data:`TINY_LIMIT`), before the budget.
LIMITS = {"env": 60, "tests": 150, "syncs": 90, "kernels": 60, "step": 120, "torch": 200, "siren": 90,
          "camera": 90, "photo12": 150, "photo100": 180, "parity": 150}
TINY_LIMIT = 60
PARTS = tuple(LIMITS)
BUDGET = {"cuda": 540.0, "cpu": 120.0}  # the whole run: about 9 minutes on the GPU


# -- pictures ----------------------------------------------------------------------------------------
def synthetic_photo(xp, width: int, height: int, channels: int = 3, seed: int = 0):
    """A ``(height, width, channels)`` uint8 test picture made with ``xp`` (on the device for CuPy):
    smooth colour, gratings, hard-edged tiles and fine texture, so that every scale holds detail.
    Deterministic; a stand-in for photographs where scikit-image is missing."""
    out = xp.empty((height, width, channels), dtype=xp.uint8)
    band = max(1, (1 << 22) // max(width, 1))
    x = xp.arange(width, dtype=xp.float32)[None, :] / np.float32(max(width, height))
    cells_x = (xp.arange(width, dtype=xp.uint32) // 97)[None, :]
    for start in range(0, height, band):
        rows = xp.arange(start, min(height, start + band), dtype=xp.float32)[:, None]
        y = rows / np.float32(max(width, height))
        cells = (rows.astype(xp.uint32) // 89) * xp.uint32(40503) ^ cells_x * xp.uint32(9973)
        for c in range(channels):
            phase = np.float32(2.1 * c + seed)
            smooth = 0.5 + 0.25 * xp.sin(np.float32(2 * math.pi) * (1.3 * x + 0.7 * y) + phase)
            grating = 0.12 * xp.sin(np.float32(2 * math.pi * 40) * (x * (1 + 0.3 * c) - 0.5 * y) + phase)
            tile = ((cells + xp.uint32(c * 7919 + seed)) * xp.uint32(2654435761) >> xp.uint32(24)).astype(xp.float32)
            noise = (((rows.astype(xp.uint32) * xp.uint32(73856093)) ^ (xp.arange(width, dtype=xp.uint32)[None, :]
                     * xp.uint32(19349663)) ^ xp.uint32(83492791 * (c + 1))) & xp.uint32(255)).astype(xp.float32)
            value = smooth + grating + (tile / np.float32(255) - 0.5) * 0.3 + (noise / np.float32(255) - 0.5) * 0.08
            out[start:start + len(rows), :, c] = (xp.clip(value, 0, 1) * 255 + 0.5).astype(xp.uint8)
    return out


def skimage_available() -> bool:
    try:
        import skimage.data  # noqa: F401
    except Exception:
        return False
    return True


def photo(backend, width: int, height: int, notes: list):
    """The test photograph at ``width`` x ``height`` on ``backend``'s device: scikit-image's
    photographs tiled (benchmarks/make_photo.py, copied to the device once), or a synthetic one."""
    if skimage_available():
        from make_photo import tiled

        notes.append(f"{width}x{height}: scikit-image's photographs tiled (make_photo.py)")
        return backend.asarray(tiled(width, height), dtype=np.uint8)
    notes.append(f"{width}x{height}: scikit-image is missing: a synthetic picture made on the device")
    return synthetic_photo(backend.xp, width, height, 3)


def camera(side: int, notes: list) -> np.ndarray:
    """scikit-image's camera resized to ``side`` (Lanczos), uint8 ``(side, side, 1)``; synthetic without it."""
    if skimage_available():
        import skimage.data
        from PIL import Image

        notes.append(f"camera: scikit-image's, resized to {side}x{side}")
        return np.asarray(Image.fromarray(skimage.data.camera()).resize((side, side), Image.LANCZOS))[..., None]
    notes.append(f"camera: scikit-image is missing: a synthetic gray picture {side}x{side} stands in (not camera)")
    return synthetic_photo(np, side, side, 1, seed=3)


class _Shape(Picture):
    """A picture's size and mode without its pixels: all a plan needs (its fingerprint is of nothing)."""

    def band(self, rows=slice(None)):
        return np.zeros((0, self.width, self.channels), np.float32)


def shape_of(width: int, height: int, mode: str) -> Picture:
    channels = 3 if mode == "rgb" else 1
    return _Shape(np.broadcast_to(np.zeros((1, 1, channels), np.uint8), (height, width, channels)), mode, "shape")


def default_job(backend, values, mode: str, *, batch_size=None, steps=None, time_budget=None, seed=0):
    """What ``ironlearn fit`` builds for a picture of ``values`` (on ``backend``'s device, or the
    host: copied once): the plan, the model on the device and the Trainer's data."""
    height, width, _ = values.shape
    plan = make_plan(FitOptions("gpu-check", batch_size=batch_size, steps=steps, time_budget=time_budget, seed=seed,
                                device=backend.device), shape_of(width, height, mode))
    picture = Picture(values, mode, "gpu-check")
    model = new_model(plan, picture).to(backend)  # a spline level of a vertex per pixel starts as the picture
    data = training_data(plan, picture, backend)
    return plan, model, data


def trainer_for(plan, model, data, backend, **options) -> Trainer:
    optimizer = Adam(model.named_parameters(), lr=plan.make_schedule())
    return Trainer(model, optimizer, mse, **data, seed=plan.seed, backend=backend, **options)


def device_psnr(model, values, backend, band_points: int = 1 << 20) -> float:
    """PSNR (dB) of ``model``'s render at every pixel centre against ``values`` (uint8 0-255 or
    float 0-1), computed in bands on the device: one number comes back to the host."""
    xp = backend.xp
    height, width, channels = values.shape
    scale = np.float32(1 / 255) if values.dtype == np.uint8 else np.float32(1)
    xs = ((2 * xp.arange(width, dtype=xp.float64) + 1) / width - 1).astype(xp.float32)
    rows = max(1, band_points // width)
    total = xp.zeros((), dtype=xp.float64)
    for start in range(0, height, rows):
        stop = min(height, start + rows)
        ys = ((2 * xp.arange(start, stop, dtype=xp.float64) + 1) / height - 1).astype(xp.float32)
        coords = xp.empty(((stop - start) * width, 2), dtype=xp.float32)
        coords[:, 0] = xp.tile(xs, stop - start)
        coords[:, 1] = xp.repeat(ys, width)
        pred = xp.clip(model.forward(coords), 0, 1)
        target = values[start:stop].reshape(-1, channels).astype(xp.float32) * scale
        diff = (pred - target).astype(xp.float64)
        total += (diff * diff).sum()
    mse_value = float(backend.to_host(total)) / (height * width * channels)
    return round(float(10 * math.log10(1 / max(mse_value, 1e-20))), 3)


# -- timing ------------------------------------------------------------------------------------------
def time_steps(step, backend, warmup: int, steps: int) -> dict:
    """Cold (the first step, kernel compilation included) and warm (median of ``steps`` after
    ``warmup``, each between two CUDA events; wall time on the CPU) milliseconds a step; and the
    wall time a step over the timed ones, which also counts the host's launch overhead."""
    backend.synchronize()
    t0 = time.perf_counter()
    step()
    backend.synchronize()
    cold = (time.perf_counter() - t0) * 1000
    for _ in range(warmup):
        step()
    if backend.device == "cuda":
        cuda = backend.xp.cuda

        def mark():
            event = cuda.Event()
            event.record()
            return event

        def elapsed(a, b):
            return cuda.get_elapsed_time(a, b)
    else:
        mark, elapsed = time.perf_counter, (lambda a, b: (b - a) * 1000)
    backend.synchronize()
    t0, marks = time.perf_counter(), []
    for _ in range(steps):
        start = mark()
        step()
        marks.append((start, mark()))
    backend.synchronize()
    wall = (time.perf_counter() - t0) * 1000 / max(steps, 1)
    times = sorted(elapsed(a, b) for a, b in marks)
    return {"cold_ms": round(cold, 3), "warm_median_ms": round(statistics.median(times), 4),
            "warm_p90_ms": round(times[int(0.9 * (len(times) - 1))], 4), "wall_ms_per_step": round(wall, 4),
            "warmup": warmup, "steps": steps}


def bench(fn, backend, reps: int) -> float:
    """Median milliseconds of ``fn()`` over ``reps`` calls after three."""
    for _ in range(3):
        fn()
    return time_steps(fn, backend, 0, reps)["warm_median_ms"]


def free_pool(backend) -> None:
    """Give the pool's cached blocks back, so that its total after a run is that run's peak."""
    if backend.device == "cuda":
        backend.synchronize()
        backend.xp.get_default_memory_pool().free_all_blocks()


def modes(ctx) -> tuple:
    """The kernel modes a part compares: both on a GPU; on the CPU NumPy has one path."""
    return kernels.MODES if ctx.device == "cuda" else ("numpy",)


@contextlib.contextmanager
def mode(name: str):
    with kernels.use(name) if name in kernels.MODES else contextlib.nullcontext():
        yield


class _TimedRun:
    """What Replan needs of a fit job (as in common.py)."""

    def __init__(self, plan, optimizer):
        self.plan, self.optimizer = plan, optimizer
        self.stalled_seconds = 0.0

    def replan(self, plan) -> None:
        self.plan = plan
        self.optimizer.schedule = plan.make_schedule()


class Watch(Callback):
    """Whole-picture PSNR when the training clock passes each of ``marks``, and every ``probe``
    seconds until ``target`` dB (then the run stops).  The work the device still has queued is
    waited for and counted as training; the evaluation is not."""

    def __init__(self, values, backend, marks=(), target=None, probe=None):
        super().__init__(1)
        self.values, self.backend = values, backend
        self.pending, self.target, self.probe = sorted(marks), target, probe
        self.next_probe = probe or math.inf
        self.reached, self.curve, self.hit = {}, [], None

    def step(self, trainer):
        seconds = trainer.train_seconds
        if not ((self.pending and seconds >= self.pending[0]) or seconds >= self.next_probe):
            return
        t0 = time.perf_counter()
        self.backend.synchronize()
        trainer.train_seconds += time.perf_counter() - t0
        seconds = trainer.train_seconds
        value = device_psnr(trainer.model, self.values, self.backend)
        while self.pending and seconds >= self.pending[0]:
            self.reached[self.pending.pop(0)] = {"psnr_db": value, "step": trainer.step, "seconds": round(seconds, 3)}
        if seconds >= self.next_probe:
            self.curve.append([round(seconds, 3), trainer.step, value])
            self.next_probe = seconds + self.probe
            if self.target is not None and value >= self.target and self.hit is None:
                self.hit = {"seconds": round(seconds, 3), "step": trainer.step, "psnr_db": value}
                trainer.request_stop()


def timed_fit(ctx, values, mode_name: str, seconds: float, marks=(), target=None, probe=None) -> dict:
    """Fit ``values`` as ``ironlearn fit --time-budget SECONDS`` does (the plan, the calibrated
    and re-planned schedule), on ``ctx``'s device; PSNR at ``marks``, or the time to ``target``."""
    backend = ctx.backend
    free_pool(backend)
    plan, model, data = default_job(backend, values, mode_name, time_budget=seconds)
    plan = plan.calibrated(calibrate(model, data))
    watch = Watch(values, backend, marks, target, probe)
    trainer = trainer_for(plan, model, data, backend, callbacks=[watch], check_every=plan.check_interval)
    trainer.callbacks.append(Replan(_TimedRun(plan, trainer.optimizer)))
    trainer.run(time_budget=seconds)
    for mark in watch.pending:  # the run ended before the mark: its last state holds there
        watch.reached[mark] = {"psnr_db": device_psnr(model, values, backend), "step": trainer.step,
                               "seconds": round(trainer.train_seconds, 3)}
    height, width, _ = values.shape
    return {"picture": f"{width}x{height}", "model_options": plan.model_options, "batch_size": plan.batch_size,
            "steps": trainer.step, "train_seconds": round(trainer.train_seconds, 3),
            "marks": {str(k): v for k, v in watch.reached.items()}, "curve": watch.curve, "target_hit": watch.hit,
            "final_psnr_db": device_psnr(model, values, backend), **backend.memory_stats()}


# -- the parts ---------------------------------------------------------------------------------------
class Context:
    """What a part gets: the device, the sizes, and a result it saves as it goes (``parts/NAME.json``)."""

    def __init__(self, name: str, args):
        self.name, self.device, self.sizes = name, args.device, SIZES[args.size]
        self.args, self.out = args, args.out
        self.result = {}
        self._backend = None

    @property
    def backend(self) -> Backend:
        if self._backend is None:
            self._backend = Backend(self.device)
        return self._backend

    def save(self, **items) -> None:
        self.result.update(items)
        write_json(os.path.join(self.out, "parts", f"{self.name}.json"), self.result)

    def note(self, text: str) -> None:
        self.save(notes=self.result.get("notes", []) + [text])

    def add_row(self, row: dict, table: str = "rows") -> None:
        self.save(**{table: self.result.get(table, []) + [row]})


def part_env(ctx):
    info = {"python": platform.python_version(), "numpy": np.__version__, "platform": platform.platform(),
            "cpu_count": os.cpu_count(), "kernel_mode": kernels.mode(),
            "scikit_image": _version("skimage"), "torch": _version("torch"), "cupy": _version("cupy")}
    ctx.save(**info)
    nvcc = _run(["nvcc", "--version"])
    if nvcc:
        ctx.save(nvcc=nvcc.strip().splitlines()[-1])
    smi = _run(["nvidia-smi", "--query-gpu=name,driver_version,memory.total", "--format=csv,noheader"])
    if smi:
        ctx.save(nvidia_smi=smi.strip())
    if ctx.device == "cuda":
        cupy = ctx.backend.xp
        runtime = cupy.cuda.runtime
        props = runtime.getDeviceProperties(0)
        name = props["name"]
        ctx.save(gpu=name.decode() if isinstance(name, bytes) else str(name),
                 compute_capability=f"{props['major']}.{props['minor']}", gpu_memory_bytes=int(props["totalGlobalMem"]),
                 cuda_driver=_cuda_version(runtime.driverGetVersion()),
                 cuda_runtime=_cuda_version(runtime.runtimeGetVersion()),
                 sync_detection=ctx.backend.can_detect_syncs)
    if info["torch"]:
        import torch

        ctx.save(torch_cuda=torch.version.cuda, torch_sees_gpu=torch.cuda.is_available())
    gpu = ctx.result.get("gpu", "no GPU")
    ctx.save(headline=f"{gpu}; CUDA {ctx.result.get('cuda_runtime', '-')}, CuPy {info['cupy'] or '-'}, "
                      f"PyTorch {info['torch'] or '-'}")


def _version(module: str):
    try:
        return __import__(module).__version__
    except Exception:
        return None


def _cuda_version(number: int) -> str:
    return f"{number // 1000}.{number % 1000 // 10}"


def _run(command) -> str:
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=20).stdout
    except Exception:
        return ""


_OUTCOME = re.compile(r"^(\S+::\S+)\s+(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)")


def part_tests(ctx):
    selection = ("tests",) if ctx.args.tests == "all" and ctx.device == "cuda" else ctx.sizes.pytest
    # Modules that cannot be imported here (no Playwright, no hypothesis) are reported, not fatal.
    command = [sys.executable, "-m", "pytest", *selection, "-v", "-rfE", "-p", "no:cacheprovider", "-o", "addopts=",
               "--continue-on-collection-errors"]
    log = os.path.join(ctx.out, "logs", "pytest.log")
    ctx.save(command=" ".join(shlex.quote(c) for c in command[1:]), log=os.path.relpath(log, ctx.out))
    counts, failed = {}, []
    with open(log, "w") as file:
        process = subprocess.Popen(command, cwd=ROOT, stdout=file, stderr=subprocess.STDOUT, env=_environment())
        try:
            process.wait(timeout=max(10, ctx.args.limit - 15))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            ctx.note("pytest ran out of time: the counts are of the tests it finished")
    with open(log, errors="replace") as file:
        text = file.read()
    for line in text.splitlines():
        match = _OUTCOME.match(line)
        if match:
            counts[match.group(2).lower()] = counts.get(match.group(2).lower(), 0) + 1
            if match.group(2) in ("FAILED", "ERROR"):
                failed.append(match.group(1))
    summary = [line for line in text.splitlines() if re.search(r"\d+ (passed|failed)", line)]
    not_collected = sorted({m.group(1) for m in re.finditer(r"^ERROR (\S+\.py)(?: -|$)", text, re.M)})
    ctx.save(exit_code=process.returncode, counts=counts, failed=failed[:200], summary=summary[-1:] or None,
             not_collected=not_collected,
             failures_tail=text[-6000:] if failed or process.returncode not in (0, 5) else None,
             headline=", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "no test ran")


def _configs(ctx):
    """The training steps checked for copies and syncs: the default model on the 12-megapixel
    picture at both batch sizes (a sparse gradient, then a dense one), and a thumbnail trained
    whole with samples between (two terms a step)."""
    sizes = ctx.sizes
    width, height = sizes.photo
    thumb = 256 if ctx.sizes is FULL else 32
    return [(f"photo {width}x{height}, batch {sizes.batches[0]}", (width, height), "rgb", sizes.batches[0]),
            (f"photo {width}x{height}, batch {sizes.batches[-1]}", (width, height), "rgb", sizes.batches[-1]),
            (f"gray {thumb}x{thumb}, every pixel and samples between", (thumb, thumb), "gray", None)]


_SPIN = r"""
extern "C" __global__ void spin(const unsigned long long nanoseconds) {
    unsigned long long start, now;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(start));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(now)); } while (now - start < nanoseconds);
}
"""


def returns_while_busy(backend, step, seconds: float = 1.0) -> dict:
    """Whether ``step()`` returns while the GPU is still busy with a kernel queued before it
    (one that spins for ``seconds``): a step that synced anywhere, in CuPy or not, would wait."""
    spin = backend.xp.RawKernel(_SPIN, "spin")
    backend.synchronize()
    spin((1,), (1,), (np.uint64(seconds * 1e9),))
    t0 = time.perf_counter()
    step()
    host = time.perf_counter() - t0
    busy = not backend.xp.cuda.get_current_stream().done
    backend.synchronize()
    return {"host ms": round(host * 1000, 2), "GPU busy after the step": busy,
            "returned before the GPU": busy and host < seconds / 2}


def part_syncs(ctx):
    backend = ctx.backend
    ctx.save(sync_detection=backend.can_detect_syncs if backend.device == "cuda" else "no device: copies only")
    for name, (width, height), picture_mode, batch in _configs(ctx):
        values = synthetic_photo(backend.xp, width, height, 3 if picture_mode == "rgb" else 1)
        for kernel_mode in modes(ctx):
            with mode(kernel_mode):
                plan, model, data = default_job(backend, values, picture_mode, batch_size=batch, steps=100)
                trainer = trainer_for(plan, model, data, backend, check_every=0)
                for _ in range(3):  # compiles the kernels and builds the cached lookups
                    trainer.train_step()
                backend.synchronize()
                before, transfers, error = be.crossings(), backend.transfers, None
                try:
                    with backend.device_only():
                        for _ in range(5):
                            trainer.train_step()
                except Exception as exc:
                    error = f"{type(exc).__name__}: {exc}"[:500]
                backend.synchronize()
                grad = model.layers[0].grads["table"]
                row = {"step": name, "mode": kernel_mode, "table gradient": type(grad).__name__, "steps": 5,
                       "copies": be.crossings() - before, "backend transfers": backend.transfers - transfers,
                       "sync or copy error": error}
                if backend.device == "cuda":
                    try:
                        row.update(returns_while_busy(backend, trainer.train_step))
                    except Exception as exc:
                        row["returned before the GPU"] = f"{type(exc).__name__}: {exc}"[:300]
                row["loss finite"] = bool(np.isfinite(trainer.loss))
                ctx.add_row(row)
                del trainer, model, data
                free_pool(backend)
    clean = all(r["copies"] == 0 and r["sync or copy error"] is None and r.get("returned before the GPU", True) is True
                for r in ctx.result["rows"])
    ctx.save(clean=clean, headline=("no copy and no sync in any step" if clean else "COPIES OR SYNCS FOUND: see rows"))


def part_kernels(ctx):
    backend, sizes = ctx.backend, ctx.sizes
    xp = backend.xp
    width, height = sizes.photo
    values = synthetic_photo(xp, width, height, 3)
    cases = [("photo grid, bilinear", "rgb", values, sizes.batches)]
    thumb = 256 if sizes is FULL else 32
    cases.append(("gray thumbnail, B-spline", "gray", synthetic_photo(xp, thumb, thumb, 1), (thumb * thumb,)))
    from ironlearn.image.sampling import PictureSampler

    for name, picture_mode, picture, batches in cases:
        plan, model, _ = default_job(backend, picture, picture_mode, batch_size=max(batches), steps=10)
        grid = model.layers[0]
        table = grid.params["table"]
        for points in batches:
            x, _ = PictureSampler(picture, points, kind="centres")(0)
            reads = grid._lookup(x)
            per_level = xp.ones((points, grid.levels, grid.features), dtype=xp.float32)
            index = reads.indices.reshape(-1)
            levels = (grid.offsets, grid.sizes)
            row = {"case": name, "points": points, "table rows": int(table.shape[0]), "taps": int(reads.indices.shape[0])}
            results = {}
            for kernel_mode in modes(ctx):
                with mode(kernel_mode):
                    out = xp.empty_like(table)
                    results[kernel_mode] = (kernels.gather_weighted(table, reads.indices, reads.weights, reads.spread),
                                            out)
                    kernels.scatter_weighted(out, index, reads.weights, per_level, levels)
                    row[f"gather {kernel_mode} ms"] = bench(
                        lambda: kernels.gather_weighted(table, reads.indices, reads.weights, reads.spread),
                        backend, sizes.kernel_reps)
                    row[f"scatter {kernel_mode} ms"] = bench(
                        lambda: kernels.scatter_weighted(out, index, reads.weights, per_level, levels),
                        backend, sizes.kernel_reps)
                    if kernel_mode == "kernels":
                        row["scatter kernels, no shared memory ms"] = bench(
                            lambda: kernels.scatter_weighted(out, index, reads.weights, per_level, None),
                            backend, sizes.kernel_reps)
                        row["shared-memory levels"] = kernels.shared_levels(grid.sizes, grid.features, points,
                                                                            int(reads.indices.shape[0]))
            if len(results) == 2:
                (g1, s1), (g2, s2) = results.values()
                row["gather max diff"] = float(backend.to_host(xp.abs(g1 - g2).max()))
                row["scatter max diff"] = float(backend.to_host(xp.abs(s1 - s2).max()))
            ctx.add_row(row)
        rng = np.random.default_rng(0)
        grad = backend.asarray(rng.uniform(-1, 1, table.shape))
        touched = backend.asarray(rng.uniform(size=table.shape[0]) < 0.2, dtype=bool)
        row = {"case": f"{name}: Adam on the table", "table rows": int(table.shape[0])}
        for kernel_mode in modes(ctx):
            with mode(kernel_mode):
                p, m, v, s = (xp.zeros_like(table) for _ in range(4))
                row[f"adam {kernel_mode} ms"] = bench(
                    lambda: kernels.adam_update(p, grad, m, v, s, 0.9, 0.999, 1e-3, 1e-8), backend, sizes.kernel_reps)
                if ctx.device == "cuda":
                    row[f"adam masked {kernel_mode} ms"] = bench(
                        lambda: kernels.adam_update(p, grad, m, v, s, 0.9, 0.999, 1e-3, 1e-8, touched),
                        backend, sizes.kernel_reps)
        ctx.add_row(row, "adam")
        del model, grid, table
        free_pool(backend)
    rows = ctx.result.get("rows", [])
    if ctx.device == "cuda" and rows:
        faster = sum(r.get("scatter kernels ms", math.inf) < r.get("scatter portable ms", 0) for r in rows)
        ctx.save(headline=f"scatter kernel faster than cupyx.scatter_add in {faster} of {len(rows)} cases")
    else:
        ctx.save(headline="NumPy reference only (no GPU)")


def part_step(ctx):
    backend, sizes = ctx.backend, ctx.sizes
    width, height = sizes.photo
    values = synthetic_photo(backend.xp, width, height, 3)
    ctx.note(f"default model of a {width}x{height} colour picture (synthetic: the pixels do not change a step's cost)")
    for batch in sizes.batches:
        for kernel_mode in modes(ctx):
            with mode(kernel_mode):
                free_pool(backend)
                plan, model, data = default_job(backend, values, "rgb", batch_size=batch,
                                                steps=sizes.warmup + sizes.steps + 10)
                trainer = trainer_for(plan, model, data, backend, check_every=0)
                row = {"batch": batch, "mode": kernel_mode, **time_steps(trainer.train_step, backend, sizes.warmup,
                                                                        sizes.steps)}
                row["table gradient"] = type(model.layers[0].grads["table"]).__name__
                with backend.tracking_peak():
                    for _ in range(2):
                        trainer.train_step()
                    backend.synchronize()
                row.update(backend.memory_stats())
                row["params"] = model.num_parameters
                ctx.add_row(row)
                del trainer, model, data
        ctx.save(model_options=plan.model_options)
    best = {}
    for row in ctx.result["rows"]:
        best[row["batch"]] = min(best.get(row["batch"], math.inf), row["warm_median_ms"])
    ctx.save(headline="; ".join(f"batch {b}: {ms:.3f} ms warm" for b, ms in best.items()))


def part_torch(ctx):
    try:
        import torch
        import torch_peer
    except ImportError as exc:
        ctx.save(skipped=f"PyTorch is not importable here ({exc})", headline="skipped: no PyTorch")
        return
    sizes = ctx.sizes
    device = "cuda" if ctx.device == "cuda" else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        ctx.save(skipped="PyTorch sees no GPU", headline="skipped: PyTorch sees no GPU")
        return
    ctx.save(**torch_peer.versions())
    width, height = sizes.photo
    pixels = torch.randint(0, 256, (width * height, 3), dtype=torch.uint8, device=device)
    host = Backend("cpu")
    compiles = (False, True) if device == "cuda" else (False,)
    if device != "cuda":
        ctx.note("on the CPU the peer runs eager only (torch.compile is measured on the GPU)")
    for compiled in compiles:
        for batch in sizes.batches:
            plan, model, _ = default_job(host, np.zeros((height, width, 3), np.uint8), "rgb", batch_size=batch,
                                         steps=sizes.warmup + sizes.steps + 10)
            step = torch_peer.hashgrid_stepper(model, pixels, width, height, batch, plan.steps, device, compiled)
            row = {"batch": batch, "torch.compile": compiled,
                   **torch_peer.time_steps(step, device, sizes.warmup, sizes.steps)}
            if device == "cuda":
                row["peak_allocated_bytes"] = int(torch.cuda.max_memory_allocated())
                torch.cuda.reset_peak_memory_stats()
            ctx.add_row(row)
            del step
    best = {}
    for row in ctx.result["rows"]:
        best[row["batch"]] = min(best.get(row["batch"], math.inf), row["warm_median_ms"])
    ctx.save(headline="; ".join(f"batch {b}: {ms:.3f} ms warm" for b, ms in best.items()))


def part_siren(ctx):
    backend, sizes = ctx.backend, ctx.sizes
    side, width = sizes.siren_side, sizes.siren_width
    from ironlearn.image.coords import pixel_grid

    x = pixel_grid(side, side)
    y = np.random.default_rng(0).uniform(0, 1, (len(x), 1)).astype(np.float32)
    model = siren(2, 1, width=width, depth=3, rng=np.random.default_rng(0))
    ctx.save(points=len(x), model=f"SIREN 3x{width}")
    try:
        import torch
        import torch_peer

        device = "cuda" if ctx.device == "cuda" else "cpu"
        if device == "cuda" and not torch.cuda.is_available():
            ctx.note("PyTorch sees no GPU: ironlearn only")
        else:
            step = torch_peer.full_batch_stepper(model, x, y, device)
            ctx.add_row({"framework": f"PyTorch {torch.__version__} eager",
                         **torch_peer.time_steps(step, device, sizes.warmup, sizes.steps)})
            del step
            if device == "cuda":
                torch.cuda.empty_cache()
    except ImportError as exc:
        ctx.note(f"PyTorch is not importable here ({exc}): ironlearn only")
    model.to(backend)
    trainer = Trainer(model, Adam(model.named_parameters(), lr=1e-4), mse, backend.asarray(x), backend.asarray(y),
                      check_every=0, backend=backend)
    ctx.add_row({"framework": f"ironlearn ({backend.device})",
                 **time_steps(trainer.train_step, backend, sizes.warmup, sizes.steps), **backend.memory_stats()})
    rows = {r["framework"].split()[0]: r["warm_median_ms"] for r in ctx.result["rows"]}
    ratio = f", {rows['ironlearn'] / rows['PyTorch']:.2f}x PyTorch's" if "PyTorch" in rows else ""
    ctx.save(headline=f"ironlearn {rows['ironlearn']:.3f} ms warm{ratio}")


def part_camera(ctx):
    sizes, notes = ctx.sizes, []
    host = camera(sizes.camera, notes)
    values = ctx.backend.asarray(host, dtype=np.uint8)
    result = timed_fit(ctx, values, "gray", sizes.camera_seconds, target=sizes.camera_target,
                       probe=sizes.probe_seconds)
    hit = result["target_hit"]
    ctx.save(notes=notes, target_db=sizes.camera_target, **result,
             headline=(f"{sizes.camera_target:g} dB after {hit['seconds']} s ({hit['step']} steps)" if hit else
                       f"{sizes.camera_target:g} dB not reached in {sizes.camera_seconds:g} s "
                       f"(final {result['final_psnr_db']} dB)"))


def _photo_part(ctx, size, marks):
    notes = []
    values = photo(ctx.backend, *size, notes)
    result = timed_fit(ctx, values, "rgb", max(marks), marks=marks)
    peak = result.get("pool_total_bytes")  # the pool keeps what it frees: its total is its peak
    ctx.save(notes=notes, **result, headline=", ".join(f"{v['psnr_db']} dB at {k} s" for k, v in
                                                      result["marks"].items())
             + (f"; pool peak {peak / 2**30:.2f} GiB" if peak else ""))


def part_photo12(ctx):
    _photo_part(ctx, ctx.sizes.photo, ctx.sizes.photo_marks)


def part_photo100(ctx):
    _photo_part(ctx, ctx.sizes.big_photo, ctx.sizes.big_marks)


def part_parity(ctx):
    sizes, notes = ctx.sizes, []
    host = camera(sizes.parity_side, notes)
    devices = ("cpu", "cuda") if ctx.device == "cuda" else ("cpu", "cpu")
    if ctx.device != "cuda":
        notes.append("no GPU: NumPy against NumPy (the difference must be 0)")
    for device in devices:
        backend = Backend(device)
        values = backend.asarray(host, dtype=np.uint8)
        plan, model, data = default_job(backend, values, "gray", steps=sizes.parity_steps)
        trainer = trainer_for(plan, model, data, backend, check_every=plan.check_interval)
        t0 = time.perf_counter()
        trainer.run(sizes.parity_steps)
        backend.synchronize()
        ctx.add_row({"device": device, "steps": trainer.step, "seconds": round(time.perf_counter() - t0, 3),
                     "psnr_db": device_psnr(model, values, backend), "final_loss": trainer.loss})
    first, second = ctx.result["rows"]
    difference = round(second["psnr_db"] - first["psnr_db"], 3)
    ctx.save(notes=notes, model_options=plan.model_options, psnr_difference_db=difference,
             headline=f"{second['device']} - {first['device']}: {difference:+.3f} dB after {sizes.parity_steps} steps")


RUNNERS = {name: globals()[f"part_{name}"] for name in PARTS}


# -- the report ----------------------------------------------------------------------------------------
def write_json(path: str, data) -> None:
    """Write ``data`` as JSON atomically (a temporary file beside it, then a rename)."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=os.path.dirname(path), suffix=".tmp")
    with os.fdopen(handle, "w") as file:
        json.dump(data, file, indent=2, default=str)
    os.replace(temporary, path)


def _cell(value) -> str:
    if isinstance(value, float):
        return f"{value:.4g}"
    if value is None:
        return "-"
    return str(value).replace("|", "/").replace("\n", " ")


def _table(rows: list) -> list:
    columns = []
    for row in rows:
        columns += [k for k in row if k not in columns]
    lines = ["| " + " | ".join(columns) + " |", "| " + " | ".join("---" for _ in columns) + " |"]
    lines += ["| " + " | ".join(_cell(row.get(c)) for c in columns) + " |" for row in rows]
    return lines


def render_markdown(report: dict) -> str:
    meta = report["meta"]
    env = report["parts"].get("env", {}).get("result", {})
    lines = [f"# GPU check: {env.get('gpu', 'no GPU (' + meta['device'] + ')')}", "",
             f"{meta['started']}, `{meta['command']}`, device {meta['device']}, sizes {meta['size']}; "
             f"{meta['finished_parts']} of {len(meta['parts'])} parts run, {meta['seconds']:.0f} s.", ""]
    if meta["device"] != "cuda":
        lines += ["**CPU run: tiny sizes, a check that the script works. These figures measure nothing.**", ""]
    lines += ["| part | status | seconds | headline |", "| --- | --- | --- | --- |"]
    for name in meta["parts"]:
        part = report["parts"].get(name, {"status": "not run"})
        headline = part.get("result", {}).get("headline") or part.get("error", "")
        lines.append(f"| {name} | {part['status']} | {_cell(part.get('seconds'))} | {_cell(headline)[:200]} |")
    for name in meta["parts"]:
        part = report["parts"].get(name)
        if part is None:
            continue
        lines += ["", f"## {name}: {part['status']}", ""]
        result = part.get("result", {})
        for note in result.get("notes", []):
            lines.append(f"- {note}")
        for key, value in result.items():
            if key in ("notes", "headline", "failures_tail", "curve"):
                continue
            if isinstance(value, list) and value and all(isinstance(v, dict) for v in value):
                lines += ["", f"{key}:", ""] + _table(value) + [""]
            else:
                lines.append(f"- {key}: {_cell(json.dumps(value, default=str) if isinstance(value, (dict, list)) else value)}")
        if part.get("error"):
            lines += ["", "```", part["error"][-3000:], "```"]
        if result.get("failures_tail"):
            lines += ["", "```", result["failures_tail"][-3000:], "```"]
    return "\n".join(lines) + "\n"


def write_report(out: str, report: dict) -> None:
    write_json(os.path.join(out, "report.json"), report)
    path = os.path.join(out, "report.md")
    with open(path + ".tmp", "w") as file:
        file.write(render_markdown(report))
    os.replace(path + ".tmp", path)


def run_part(name: str, args, limit: float) -> dict:
    """Run part ``name`` in its own process under ``limit`` seconds; its status and result."""
    command = [sys.executable, os.path.abspath(__file__), "--run-part", name, "--device", args.device,
               "--size", args.size, "--out", args.out, "--tests", args.tests, "--limit", str(int(limit))]
    log = os.path.join(args.out, "logs", f"{name}.log")
    result_path = os.path.join(args.out, "parts", f"{name}.json")
    if os.path.exists(result_path):
        os.remove(result_path)
    t0 = time.perf_counter()
    status, error = "ok", None
    with open(log, "w") as file:
        try:
            done = subprocess.run(command, cwd=ROOT, stdout=file, stderr=subprocess.STDOUT, timeout=limit,
                                  env=_environment())
            if done.returncode != 0:
                status = "error"
        except subprocess.TimeoutExpired:
            status = "timeout"
            error = f"stopped after its limit of {limit:.0f} s"
    seconds = round(time.perf_counter() - t0, 1)
    with open(log, errors="replace") as file:
        tail = file.read()[-4000:]
    if status == "error":
        error = tail
    result = {}
    if os.path.exists(result_path):
        with open(result_path) as file:
            result = json.load(file)
    if status == "ok" and result.get("skipped"):
        status = "skipped"
    return {"status": status, "seconds": seconds, "limit": limit, "result": result, "error": error,
            "log": os.path.relpath(log, args.out)}


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", required=True, help="folder for report.md, report.json, parts/ and logs/")
    parser.add_argument("--device", choices=("cuda", "cpu"), default="cuda")
    parser.add_argument("--size", choices=tuple(SIZES), help="full (the GPU's default) or tiny (the CPU's)")
    parser.add_argument("--parts", nargs="+", choices=PARTS, default=list(PARTS), metavar="PART",
                        help=f"the parts to run, of: {' '.join(PARTS)}")
    parser.add_argument("--budget", type=float, help="seconds for the whole run (default 540 on cuda, 120 on cpu)")
    parser.add_argument("--tests", choices=("cuda", "all"), default="cuda",
                        help="the tests part runs the tests that use the cuda backend, or the whole suite")
    parser.add_argument("--run-part", choices=PARTS, help=argparse.SUPPRESS)
    parser.add_argument("--limit", type=float, default=0, help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    args.size = args.size or ("full" if args.device == "cuda" else "tiny")
    args.out = os.path.abspath(args.out)
    if args.run_part:
        ctx = Context(args.run_part, args)
        RUNNERS[args.run_part](ctx)
        return 0
    for folder in ("parts", "logs"):
        os.makedirs(os.path.join(args.out, folder), exist_ok=True)
    budget = args.budget or BUDGET[args.device]
    started = time.perf_counter()
    report = {"meta": {"started": datetime.datetime.now().isoformat(timespec="seconds"),
                       "command": " ".join(shlex.quote(a) for a in ["python", "benchmarks/gpu.py", *sys.argv[1:]]),
                       "device": args.device, "size": args.size, "budget_seconds": budget, "parts": args.parts,
                       "finished_parts": 0, "seconds": 0.0, "sizes": SIZES[args.size].__dict__},
              "parts": {}}
    for name in args.parts:
        left = budget - (time.perf_counter() - started)
        limit = min(LIMITS[name] if args.size == "full" else TINY_LIMIT, left)
        if limit < 10:
            report["parts"][name] = {"status": "skipped", "seconds": 0, "result": {},
                                     "error": f"out of budget ({budget:.0f} s): run it with --parts {name}"}
        else:
            print(f"[gpu-check] {name} (limit {limit:.0f} s)", flush=True)
            report["parts"][name] = run_part(name, args, limit)
            report["meta"]["finished_parts"] += 1
            print(f"[gpu-check] {name}: {report['parts'][name]['status']} in {report['parts'][name]['seconds']} s",
                  flush=True)
        report["meta"]["seconds"] = round(time.perf_counter() - started, 1)
        write_report(args.out, report)
    print(f"[gpu-check] report: {os.path.join(args.out, 'report.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
