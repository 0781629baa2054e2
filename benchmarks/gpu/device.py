"""What the GPU check's parts share: test pictures made on the device, their PSNR read in bands,
the fit job on a device picture, the kernel modes and the memory pool.

Nothing here needs the internet: without scikit-image the pictures are synthetic (made on the
device) and the part's notes say so.
"""

from __future__ import annotations

import contextlib
import math
import tempfile

import numpy as np
from common import backend_clock, job_for, time_steps

from ironlearn import kernels
from ironlearn.image.io import Picture


# -- pictures --------------------------------------------------------------------------------------
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


# -- jobs, kernels and the pool ----------------------------------------------------------------
@contextlib.contextmanager
def fit_job(backend, values, mode: str, **settings):
    """Inside: the job ``ironlearn fit`` builds for ``values`` (``(h, w, c)`` on ``backend``'s
    device, uint8 or float) with ``settings`` (FitOptions fields), its run folder a temporary
    one; the pool's free blocks are given back before and after."""
    free_pool(backend)
    with tempfile.TemporaryDirectory(prefix="gpu-check-") as folder:
        yield job_for(Picture(values, mode, "gpu-check"), backend, folder, **settings)
    free_pool(backend)


def free_pool(backend) -> None:
    """Give the pool's cached blocks back, so that its total after a run is that run's peak."""
    if backend.device == "cuda":
        backend.synchronize()
        backend.xp.get_default_memory_pool().free_all_blocks()


def bench(fn, backend, reps: int) -> float:
    """Median milliseconds of ``fn()`` over ``reps`` calls after three."""
    for _ in range(3):
        fn()
    return time_steps(fn, backend_clock(backend), 0, reps)["warm_median_ms"]


def modes(ctx) -> tuple:
    """The kernel modes a part compares: both on a GPU; on the CPU NumPy has one path."""
    return kernels.MODES if ctx.device == "cuda" else ("numpy",)


@contextlib.contextmanager
def mode(name: str):
    with kernels.use(name) if name in kernels.MODES else contextlib.nullcontext():
        yield


def fastest(rows: list, *keys) -> str:
    """``"KEY ...: MS ms warm"`` for the fastest row of each ``keys`` combination."""
    best = {}
    for row in rows:
        key = " ".join(str(row[k]) for k in keys)
        best[key] = min(best.get(key, math.inf), row["warm_median_ms"])
    return "; ".join(f"{key}: {ms:.3f} ms warm" for key, ms in best.items())
