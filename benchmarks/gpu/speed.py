"""The GPU check's step timings: ``step`` (the default model of a photograph, a pixel spline
trained a tile a step, and the hash-grid pyramid, each kernel mode), ``torch`` (the pyramid in
PyTorch, eager and compiled) and ``siren`` (SIREN 3x256 against PyTorch eager).

Each times the training step of the job ``ironlearn fit`` builds (benchmarks/common.py): cold
(the first step) and warm (the median over the timed steps, CUDA events on a GPU), and the
wall time a step of the whole run, its callbacks included.
"""

from __future__ import annotations

import time

import numpy as np
from common import backend_clock, pyramid, time_steps

from ironlearn.backend import Backend

from .device import camera, fastest, fit_job, mode, modes, synthetic_photo

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
    backend, sizes, notes = ctx.backend, ctx.sizes, []
    side, width = sizes.siren_side, sizes.siren_width
    host = camera(side, notes)
    settings = {"model": "siren", "model_options": {"width": width, "depth": 3}, "batch_size": 0,
                "filter": "centres", "steps": sizes.warmup + sizes.steps + 10}
    ctx.save(points=side * side, model=f"SIREN 3x{width}", notes=notes + ["every pixel centre a step (--batch-size 0 "
                                                                          "--filter centres)"])
    with fit_job(backend, backend.asarray(host, dtype=np.uint8), "gray", **settings) as job:
        _siren_peer(ctx, job)
        trainer = job.trainer
        ctx.add_row({"framework": f"ironlearn ({backend.device})",
                     **time_steps(trainer.train_step, backend_clock(backend), sizes.warmup, sizes.steps),
                     **backend.memory_stats()})
    rows = {r["framework"].split()[0]: r["warm_median_ms"] for r in ctx.result["rows"]}
    ratio = f", {rows['ironlearn'] / rows['PyTorch']:.2f}x PyTorch's" if "PyTorch" in rows else ""
    ctx.save(headline=f"ironlearn {rows['ironlearn']:.3f} ms warm{ratio}")


def _siren_peer(ctx, job) -> None:
    """PyTorch eager's step on the same model and data, where PyTorch runs (a note where not)."""
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
    step_fn = torch_peer.full_batch_stepper(trainer.model, x, y, device)
    ctx.add_row({"framework": f"PyTorch {torch.__version__} eager",
                 **time_steps(step_fn, torch_peer.clock(device), ctx.sizes.warmup, ctx.sizes.steps)})
    del step_fn
    if device == "cuda":
        torch.cuda.empty_cache()
