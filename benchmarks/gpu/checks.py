"""The GPU check's parts that say what the machine is and whether ironlearn runs right on it:
``env``, ``tests``, ``syncs`` and ``kernels``.  Each is a function of a part's context
(:class:`gpu.harness.Context`) that saves its result as it goes."""

from __future__ import annotations

import importlib.metadata
import math
import os
import platform
import re
import shlex
import subprocess
import sys
import time

import numpy as np
from common import pyramid

from ironlearn import backend as be
from ironlearn import kernels
from ironlearn.image.sampling import PictureSampler

from .device import bench, fit_job, mode, modes, synthetic_photo

#: The repository (this is benchmarks/gpu/checks.py), where the tests part runs pytest.
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), os.pardir, os.pardir))


# -- env ---------------------------------------------------------------------------------------------
def env(ctx):
    info = {"python": platform.python_version(), "numpy": np.__version__, "platform": platform.platform(),
            "cpu_count": os.cpu_count(), "kernel_mode": kernels.mode(),
            "scikit_image": _version("skimage"), "torch": _version("torch"), "cupy": _version("cupy"),
            "cupy_package": _cupy_package()}
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


def _cupy_package():
    """Which CuPy wheel is installed (cupy-cuda12x, cupy-cuda13x, ...): the check uses whichever it is."""
    names = sorted({d.metadata["Name"] for d in importlib.metadata.distributions()
                    if (d.metadata["Name"] or "").lower().startswith("cupy")})
    return ", ".join(names) or None


def _cuda_version(number: int) -> str:
    return f"{number // 1000}.{number % 1000 // 10}"


def _run(command) -> str:
    try:
        return subprocess.run(command, capture_output=True, text=True, timeout=20).stdout
    except Exception:
        return ""


_OUTCOME = re.compile(r"^(\S+::\S+)\s+(PASSED|FAILED|ERROR|SKIPPED|XFAIL|XPASS)")


def tests(ctx):
    selection = ("tests",) if ctx.args.tests == "all" and ctx.device == "cuda" else ctx.sizes.pytest
    # Modules that cannot be imported here (no Playwright, no hypothesis) are reported, not fatal.
    command = [sys.executable, "-m", "pytest", *selection, "-v", "-rfE", "-p", "no:cacheprovider", "-o", "addopts=",
               "--continue-on-collection-errors"]
    log = os.path.join(ctx.out, "logs", "pytest.log")
    ctx.save(command=" ".join(shlex.quote(c) for c in command[1:]), log=os.path.relpath(log, ctx.out))
    with open(log, "w") as file:
        process = subprocess.Popen(command, cwd=ROOT, stdout=file, stderr=subprocess.STDOUT, env=ctx.environment)
        try:
            process.wait(timeout=max(10, ctx.args.limit - 15))
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
            ctx.note("pytest ran out of time: the counts are of the tests it finished")
    with open(log, errors="replace") as file:
        text = file.read()
    counts, failed = _outcomes(text)
    summary = [line for line in text.splitlines() if re.search(r"\d+ (passed|failed)", line)]
    not_collected = sorted({m.group(1) for m in re.finditer(r"^ERROR (\S+\.py)(?: -|$)", text, re.M)})
    ctx.save(exit_code=process.returncode, counts=counts, failed=failed[:200], summary=summary[-1:] or None,
             not_collected=not_collected,
             failures_tail=text[-6000:] if failed or process.returncode not in (0, 5) else None,
             headline=", ".join(f"{n} {k}" for k, n in sorted(counts.items())) or "no test ran")


def _outcomes(text: str) -> tuple[dict, list]:
    """pytest -v's outcome counts, and the ids of the tests that failed or erred."""
    counts, failed = {}, []
    for line in text.splitlines():
        match = _OUTCOME.match(line)
        if match:
            counts[match.group(2).lower()] = counts.get(match.group(2).lower(), 0) + 1
            if match.group(2) in ("FAILED", "ERROR"):
                failed.append(match.group(1))
    return counts, failed


# -- syncs -------------------------------------------------------------------------------------------
def _step_configs(ctx) -> list:
    """The training steps checked for copies and syncs: the default model of the photograph (a
    pixel spline a tile a step), the hash-grid pyramid on it (sampled pixels: a masked gradient
    at the smaller batch, a dense one at the larger), and a gray thumbnail trained whole with samples between pixels (two
    terms a step)."""
    sizes = ctx.sizes
    (width, height), thumb = sizes.photo, sizes.thumb
    return [(f"photo {width}x{height}, pixel spline, batch {sizes.batches[0]}", (width, height), "rgb",
             {"batch_size": sizes.batches[0]}),
            (f"photo {width}x{height}, pyramid, batch {sizes.batches[0]}", (width, height), "rgb",
             {"batch_size": sizes.batches[0], **pyramid(width, height)}),
            (f"photo {width}x{height}, pyramid, batch {sizes.batches[-1]}", (width, height), "rgb",
             {"batch_size": sizes.batches[-1], **pyramid(width, height)}),
            (f"gray {thumb}x{thumb}, every pixel and samples between", (thumb, thumb), "gray", {})]


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


def syncs(ctx):
    backend = ctx.backend
    ctx.save(sync_detection=backend.can_detect_syncs if backend.device == "cuda" else "no device: copies only")
    for name, (width, height), picture_mode, settings in _step_configs(ctx):
        values = synthetic_photo(backend.xp, width, height, 3 if picture_mode == "rgb" else 1)
        for kernel_mode in modes(ctx):
            with mode(kernel_mode), fit_job(backend, values, picture_mode, steps=100, **settings) as job:
                ctx.add_row({"step": name, "mode": kernel_mode, **_copies_and_syncs(job.trainer, backend)})
    clean = all(r["copies"] == 0 and r["sync or copy error"] is None and r.get("returned before the GPU", True) is True
                for r in ctx.result["rows"])
    ctx.save(clean=clean, headline=("no copy and no sync in any step" if clean else "COPIES OR SYNCS FOUND: see rows"))


def _copies_and_syncs(trainer, backend, steps: int = 5) -> dict:
    """The copies (the backend's counter) and syncs (``device_only``) in ``steps`` training steps,
    after three that compile the kernels and build the cached lookups; on a GPU, whether a step
    returns while the GPU is still busy."""
    for _ in range(3):
        trainer.train_step()
    backend.synchronize()
    before, transfers, error = be.crossings(), backend.transfers, None
    try:
        with backend.device_only():
            for _ in range(steps):
                trainer.train_step()
    except Exception as exc:
        error = f"{type(exc).__name__}: {exc}"[:500]
    backend.synchronize()
    row = {"table gradient": type(trainer.model.layers[0].grads["table"]).__name__, "steps": steps,
           "held": ", ".join(trainer.held) or "-", "copies": be.crossings() - before,
           "backend transfers": backend.transfers - transfers, "sync or copy error": error}
    if backend.device == "cuda":
        try:
            row.update(returns_while_busy(backend, trainer.train_step))
        except Exception as exc:
            row["returned before the GPU"] = f"{type(exc).__name__}: {exc}"[:300]
    row["loss finite"] = bool(np.isfinite(trainer.loss))
    return row


# -- kernels -----------------------------------------------------------------------------------------
def kernel_timings(ctx):
    backend, sizes = ctx.backend, ctx.sizes
    width, height = sizes.photo
    photo = synthetic_photo(backend.xp, width, height, 3)
    thumb = synthetic_photo(backend.xp, sizes.thumb, sizes.thumb, 1)
    cases = [("pyramid, bilinear", photo, "rgb", sizes.batches, pyramid(width, height)),
             ("pixel spline, B-spline", photo, "rgb", sizes.batches, {}),
             ("gray thumbnail, B-spline", thumb, "gray", (sizes.thumb ** 2,), {})]
    for name, values, picture_mode, batches, settings in cases:
        with fit_job(backend, values, picture_mode, batch_size=max(batches), steps=10, **settings) as job:
            grid = job.trainer.model.layers[0]
            for points in batches:
                ctx.add_row(_read_and_scatter(ctx, name, grid, values, points))
            ctx.add_row(_adam(ctx, name, grid.params["table"]), "adam")
            del grid
    rows = ctx.result.get("rows", [])
    if ctx.device == "cuda" and rows:
        faster = sum(r.get("scatter kernels ms", math.inf) < r.get("scatter portable ms", 0) for r in rows)
        ctx.save(headline=f"scatter kernel faster than cupyx.scatter_add in {faster} of {len(rows)} cases")
    else:
        ctx.save(headline="NumPy reference only (no GPU)")


def _read_and_scatter(ctx, name: str, grid, values, points: int) -> dict:
    """The hash grid's read and its gradient's scatter at ``points`` pixel centres, each kernel
    mode: milliseconds, and the largest difference between the modes."""
    backend, reps = ctx.backend, ctx.sizes.kernel_reps
    xp, table = backend.xp, grid.params["table"]
    x, _ = PictureSampler(values, points, kind="centres")(0)
    reads = grid._lookup(x)
    per_level = xp.ones((points, grid.levels, grid.features), dtype=xp.float32)
    index, levels = reads.indices.reshape(-1), (grid.offsets, grid.sizes)
    row = {"case": name, "points": points, "table rows": int(table.shape[0]), "taps": int(reads.indices.shape[0])}
    results = {}
    for kernel_mode in modes(ctx):
        with mode(kernel_mode):
            out = xp.empty_like(table)

            def gather():
                return kernels.gather_weighted(table, reads.indices, reads.weights, reads.spread)

            results[kernel_mode] = (gather(), out)
            kernels.scatter_weighted(out, index, reads.weights, per_level, levels)
            row[f"gather {kernel_mode} ms"] = bench(gather, backend, reps)
            row[f"scatter {kernel_mode} ms"] = bench(
                lambda: kernels.scatter_weighted(out, index, reads.weights, per_level, levels), backend, reps)
            if kernel_mode == "kernels":
                row["scatter kernels, no shared memory ms"] = bench(
                    lambda: kernels.scatter_weighted(out, index, reads.weights, per_level, None), backend, reps)
                row["shared-memory levels"] = kernels.shared_levels(grid.sizes, grid.features, points,
                                                                    int(reads.indices.shape[0]))
    if len(results) == 2:
        (g1, s1), (g2, s2) = results.values()
        row["gather max diff"] = float(backend.to_host(xp.abs(g1 - g2).max()))
        row["scatter max diff"] = float(backend.to_host(xp.abs(s1 - s2).max()))
    return row


def _adam(ctx, name: str, table) -> dict:
    """Adam's update of ``table``, each kernel mode (and, on a GPU, of a fifth of its rows)."""
    backend, reps = ctx.backend, ctx.sizes.kernel_reps
    xp, rng = backend.xp, np.random.default_rng(0)
    grad = backend.asarray(rng.uniform(-1, 1, table.shape))
    touched = backend.asarray(rng.uniform(size=table.shape[0]) < 0.2, dtype=bool)
    row = {"case": f"{name}: Adam on the table", "table rows": int(table.shape[0])}
    for kernel_mode in modes(ctx):
        with mode(kernel_mode):
            p, m, v, s = (xp.zeros_like(table) for _ in range(4))
            row[f"adam {kernel_mode} ms"] = bench(
                lambda: kernels.adam_update(p, grad, m, v, s, 0.9, 0.999, 1e-3, 1e-8), backend, reps)
            if ctx.device == "cuda":
                row[f"adam masked {kernel_mode} ms"] = bench(
                    lambda: kernels.adam_update(p, grad, m, v, s, 0.9, 0.999, 1e-3, 1e-8, touched), backend, reps)
    return row
