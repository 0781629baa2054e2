"""The GPU check's quality runs: ``parity`` (the same seed on NumPy and CuPy), ``photo12`` and
``photo100`` (the default model, a pixel spline started as the picture, on a 12.6 MP and a 100 MP
photograph: PSNR at the budget's end and the pool's peak), and ``camera`` (a pixel spline from a
random start, ``--start random``: the time it takes to learn camera to 40 dB).

Each runs the job ``ironlearn fit`` builds, as ``fit`` trains it (benchmarks/common.py).
"""

from __future__ import annotations

import time

import numpy as np
from common import Watch, timed_run

from ironlearn.backend import Backend

from .device import camera, device_psnr, fit_job, photo


def run_to_quality(ctx, values, mode_name: str, seconds: float, marks=(), target=None, probe=None,
                   **settings) -> dict:
    """Fit ``values`` as ``ironlearn fit --time-budget SECONDS`` does, on ``ctx``'s device: PSNR
    at ``marks`` (training seconds), or the time to ``target`` dB read every ``probe`` seconds."""
    backend = ctx.backend
    watch = Watch(lambda model: device_psnr(model, values, backend), backend, marks, target, probe)
    with fit_job(backend, values, mode_name, time_budget=seconds, **settings) as job:
        timed_run(job, watch)
        trainer = job.trainer
        held = max(watch.pool_held, backend.memory_stats().get("pool_total_bytes", 0))
        height, width, _ = values.shape
        return {"picture": f"{width}x{height}", "model_options": job.plan.model_options,
                "batch_size": job.plan.batch_size, "tiles": job.plan.trains_tiles, "start": job.plan.start,
                "held": list(trainer.held), "steps": trainer.step, "train_seconds": round(trainer.train_seconds, 3),
                "stalled_seconds": round(job.stalled_seconds, 3),
                "marks": {str(k): v for k, v in watch.reached.items()}, "curve": watch.curve, "target_hit": watch.hit,
                "pool_held_training_bytes": held,  # before any evaluation's arrays
                "final_psnr_db": device_psnr(trainer.model, values, backend), **backend.memory_stats()}


# -- parity ------------------------------------------------------------------------------------------
def parity(ctx):
    sizes, notes = ctx.sizes, []
    host = camera(sizes.parity_side, notes)
    devices = ("cpu", "cuda") if ctx.device == "cuda" else ("cpu", "cpu")
    if ctx.device != "cuda":
        notes.append("no GPU: NumPy against NumPy (the difference must be 0)")
    for device in devices:
        backend = Backend(device)
        values = backend.asarray(host, dtype=np.uint8)
        with fit_job(backend, values, "gray", steps=sizes.parity_steps) as job:
            t0 = time.perf_counter()
            timed_run(job)
            backend.synchronize()
            ctx.add_row({"device": device, "steps": job.trainer.step, "seconds": round(time.perf_counter() - t0, 3),
                         "psnr_db": device_psnr(job.trainer.model, values, backend),
                         "final_loss": job.trainer.loss})
            options = job.plan.model_options
    first, second = ctx.result["rows"]
    difference = round(second["psnr_db"] - first["psnr_db"], 3)
    ctx.save(notes=notes, model_options=options, psnr_difference_db=difference,
             headline=f"{second['device']} - {first['device']}: {difference:+.3f} dB after {sizes.parity_steps} steps")


# -- photographs -------------------------------------------------------------------------------------
def _photo_part(ctx, size, marks):
    notes = []
    values = photo(ctx.backend, *size, notes)
    result = run_to_quality(ctx, values, "rgb", max(marks), marks=marks)
    peak = result.get("pool_held_training_bytes")  # the pool keeps what it frees: its total is its peak
    headline = ", ".join(f"{v['psnr_db']} dB at {k} s" for k, v in result["marks"].items())
    ctx.save(notes=notes, **result, headline=headline + (f"; pool held while training {peak / 2**30:.2f} GiB" if peak else ""))


def photo12(ctx):
    _photo_part(ctx, ctx.sizes.photo, ctx.sizes.photo_marks)


def photo100(ctx):
    _photo_part(ctx, ctx.sizes.big_photo, ctx.sizes.big_marks)


# -- camera ------------------------------------------------------------------------------------------
def camera_part(ctx):
    sizes, notes = ctx.sizes, ["--start random: the default starts as the picture, past the target before a step"]
    values = ctx.backend.asarray(camera(sizes.camera, notes), dtype=np.uint8)
    result = run_to_quality(ctx, values, "gray", sizes.camera_seconds, target=sizes.camera_target,
                            probe=sizes.probe_seconds, start="random")
    hit = result["target_hit"]
    ctx.save(notes=notes, target_db=sizes.camera_target, **result,
             headline=(f"{sizes.camera_target:g} dB after {hit['seconds']} s ({hit['step']} steps)" if hit else
                       f"{sizes.camera_target:g} dB not reached in {sizes.camera_seconds:g} s "
                       f"(final {result['final_psnr_db']} dB)"))
