"""The GPU check's step timings: ``step`` (the default model of a photograph, a pixel spline
trained a tile a step, and the hash-grid pyramid, each kernel mode), ``torch`` (the pyramid in
PyTorch, eager and compiled) and ``siren`` (SIREN 3x256 against PyTorch eager).

Each times the training step of the job ``ironlearn fit`` builds (benchmarks/common.py): cold
(the first step) and warm (the median over the timed steps, CUDA events on a GPU), and the
wall time a step of the whole run, its callbacks included.
"""

from __future__ import annotations

import contextlib
import time

import numpy as np
from common import backend_clock, pyramid, time_steps

from ironlearn.backend import Backend

from .device import camera, device_psnr, fastest, fit_job, mode, modes, synthetic_photo

#: The models the step part times on the photograph: name -> fit settings for its size.
MODELS = {"pixel spline": lambda width, height: {}, "pyramid": pyramid}


# -- step --------------------------------------------------------------------------------------------
def step(ctx):
    backend, sizes = ctx.backend, ctx.sizes
    width, height = sizes.photo
    values = synthetic_photo(backend.xp, width, height, 3)
    ctx.note(f"a {width}x{height} colour picture (synthetic: the pixels do not change a step's cost); the pixel "
             f"spline is fit's default, the pyramid forced with --finest {max(width, height)}")
    for model, settings in MODELS.items():
        for batch in sizes.batches:
            for kernel_mode in modes(ctx):
                steps = sizes.warmup + 2 * sizes.steps + 10
                with mode(kernel_mode), fit_job(backend, values, "rgb", batch_size=batch, steps=steps,
                                                **settings(width, height)) as job:
                    ctx.add_row({"model": model, "batch": batch, "mode": kernel_mode, **_step_row(ctx, job)})
    ctx.save(headline=fastest(ctx.result["rows"], "model", "batch"))


def _step_row(ctx, job) -> dict:
    """The step's times, its tile, peak pool bytes, and the wall time a step of the fit's own
    loop (its loss checks and callbacks included)."""
    backend, sizes, trainer = ctx.backend, ctx.sizes, job.trainer
    row = time_steps(trainer.train_step, backend_clock(backend), sizes.warmup, sizes.steps)
    row["tiles"] = job.plan.trains_tiles
    row["table gradient"] = type(trainer.model.layers[0].grads["table"]).__name__
    backend.synchronize()
    trained = trainer.train_seconds  # fit's clock: steps and callbacks, not the save when run() ends
    trainer.run(trainer.step + sizes.steps)
    t0 = time.perf_counter()
    backend.synchronize()
    seconds = trainer.train_seconds - trained + time.perf_counter() - t0
    row["fit loop ms/step"] = round(seconds * 1000 / sizes.steps, 4)
    with backend.tracking_peak():
        for _ in range(2):
            trainer.train_step()
        backend.synchronize()
    return {**row, **backend.memory_stats(), "params": trainer.model.num_parameters}


# -- torch -------------------------------------------------------------------------------------------
def _torch(ctx):
    """``(torch, torch_peer, device)``, or None where PyTorch cannot run the part (said in the result)."""
    try:
        import torch
        import torch_peer
    except ImportError as exc:
        ctx.save(skipped=f"PyTorch is not importable here ({exc})", headline="skipped: no PyTorch")
        return None
    device = "cuda" if ctx.device == "cuda" else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        ctx.save(skipped="PyTorch sees no GPU", headline="skipped: PyTorch sees no GPU")
        return None
    return torch, torch_peer, device


def torch_peer_part(ctx):
    found = _torch(ctx)
    if found is None:
        return
    torch, torch_peer, device = found
    sizes = ctx.sizes
    ctx.save(**torch_peer.versions())
    width, height = sizes.photo
    pixels = torch.randint(0, 256, (width * height, 3), dtype=torch.uint8, device=device)
    host, blank = Backend("cpu"), np.zeros((height, width, 3), np.uint8)
    if device != "cuda":
        ctx.note("on the CPU the peer runs eager only (torch.compile is measured on the GPU)")
    ctx.note(f"the hash-grid pyramid (--finest {max(width, height)}), as the step part's pyramid rows")
    for compiled in (False, True) if device == "cuda" else (False,):
        for batch in sizes.batches:
            with fit_job(host, blank, "rgb", batch_size=batch, steps=sizes.warmup + sizes.steps + 10,
                         **pyramid(width, height)) as job:
                step_fn = torch_peer.hashgrid_stepper(job.trainer.model, pixels, width, height, batch,
                                                      job.plan.steps, device, compiled)
            row = {"model": "pyramid", "batch": batch, "torch.compile": compiled,
                   **time_steps(step_fn, torch_peer.clock(device), sizes.warmup, sizes.steps)}
            if device == "cuda":
                row["peak_allocated_bytes"] = int(torch.cuda.max_memory_allocated())
                torch.cuda.reset_peak_memory_stats()
            ctx.add_row(row)
            del step_fn
    ctx.save(headline=fastest(ctx.result["rows"], "model", "batch"))


# -- siren -------------------------------------------------------------------------------------------
def siren(ctx):
    """SIREN's step, ironlearn against PyTorch (eager, and compiled where it compiles), each in full
    float32 and with TF32 tensor cores in the products (neither uses them by default), and each
    ironlearn's PSNR after its timed steps, so that TF32's cost in quality is seen with its speed."""
    backend, sizes, notes = ctx.backend, ctx.sizes, []
    side, width = sizes.siren_side, sizes.siren_width
    host = camera(side, notes)
    settings = {"model": "siren", "model_options": {"width": width, "depth": 3}, "batch_size": 0,
                "filter": "centres", "steps": sizes.warmup + sizes.steps + 10}
    ctx.save(points=side * side, model=f"SIREN 3x{width}", notes=notes + ["every pixel centre a step (--batch-size 0 "
                                                                          "--filter centres)"])
    values = backend.asarray(host, dtype=np.uint8)
    for tf32 in (False, True):
        with tensor_cores(ctx, tf32) as applied, fit_job(backend, values, "gray", **settings) as job:
            _siren_peer(ctx, job, tf32)
            trainer = job.trainer
            ctx.add_row({"framework": f"ironlearn ({backend.device})", "TF32": applied,
                         **time_steps(trainer.train_step, backend_clock(backend), sizes.warmup, sizes.steps),
                         "psnr after the timed steps": device_psnr(trainer.model, values, backend),
                         **backend.memory_stats()})
    rows = {(r["framework"].split()[0], r.get("compiled", False), r["TF32"]): r["warm_median_ms"]
            for r in ctx.result["rows"]}
    ours = rows[("ironlearn", False, False)]
    ratios = [f"{rows[('ironlearn', False, tf)] / ms:.2f}x PyTorch {'compiled' if compiled else 'eager'}"
              f"{' (TF32 both)' if tf else ''}" for (name, compiled, tf), ms in rows.items()
              if name == "PyTorch" and ("ironlearn", False, tf) in rows]
    ctx.save(headline=f"ironlearn {ours:.3f} ms warm; " + "; ".join(ratios))


@contextlib.contextmanager
def tensor_cores(ctx, on: bool):
    """Inside: float32 products on TF32 tensor cores (``on``) in CuPy and PyTorch, or not; yields
    whether CuPy took it (its compute type is private API: ``cupy._core._routines_linalg``)."""
    if not on or ctx.device != "cuda":
        yield False
        return
    try:
        from cupy._core import _routines_linalg as linalg

        linalg.set_compute_type(np.float32, 7)  # COMPUTE_TYPE_TF32
    except Exception as exc:  # an API CuPy does not promise
        ctx.note(f"CuPy's TF32 switch failed ({type(exc).__name__}: {exc}): no TF32 rows")
        yield False
        return
    torch = _torch_module()
    saved = torch.backends.cuda.matmul.allow_tf32 if torch else None
    if torch:
        torch.backends.cuda.matmul.allow_tf32 = True
    try:
        yield True
    finally:
        linalg.set_compute_type(np.float32, 1)  # COMPUTE_TYPE_DEFAULT
        if torch:
            torch.backends.cuda.matmul.allow_tf32 = saved


def _torch_module():
    try:
        import torch
    except ImportError:
        return None
    return torch


def _siren_peer(ctx, job, tf32: bool) -> None:
    """PyTorch's step, eager and compiled, on the same model and data, where PyTorch runs (a note
    where not)."""
    try:
        import torch
        import torch_peer
    except ImportError as exc:
        ctx.note(f"PyTorch is not importable here ({exc}): ironlearn only")
        return
    device = "cuda" if ctx.device == "cuda" else "cpu"
    if device == "cuda" and not torch.cuda.is_available():
        ctx.note("PyTorch sees no GPU: ironlearn only")
        return
    trainer, backend = job.trainer, ctx.backend
    x, y = backend.to_host(trainer.inputs), backend.to_host(trainer.targets)
    for compiled in (False, True):
        try:
            step_fn = torch_peer.full_batch_stepper(trainer.model, x, y, device, compile=compiled)
            ctx.add_row({"framework": f"PyTorch {torch.__version__} {'compiled' if compiled else 'eager'}",
                         "compiled": compiled, "TF32": tf32,
                         **time_steps(step_fn, torch_peer.clock(device), ctx.sizes.warmup, ctx.sizes.steps)})
        except Exception as exc:  # torch.compile needs a compiler PyTorch may not find
            ctx.note(f"PyTorch {'compiled' if compiled else 'eager'} failed: {type(exc).__name__}: {exc}"[:300])
        step_fn = None
        if device == "cuda":
            torch.cuda.empty_cache()


