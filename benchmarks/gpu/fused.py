"""The GPU check's parts for the fused kernels (src/ironlearn/fused.py, src/ironlearn/nn/fused_mlp.py):
``fused`` (each fused pass against the launched code it replaces, the MLP heads' passes among them,
and the pyramid's whole step with and without them, side by side in one process) and ``graph``
(whether the pyramid's step captures as a CUDA graph, and what a replay of it costs against the
launched step).
"""

from __future__ import annotations

import contextlib

import numpy as np
from common import backend_clock, pyramid, time_steps

from ironlearn import fused
from ironlearn.image import batch_kernel
from ironlearn.nn import fused_mlp

from .device import bench, fit_job, mode, synthetic_photo


@contextlib.contextmanager
def unfused():
    """The code before the fused kernels: the layer's lookup with the gather and scatter kernels
    (a lattice's matrix products), the sampler's array operations, Adam a parameter at a time and
    the squared error's array code, the MLP a layer at a time (no fused kernel applies)."""
    saved = fused.applies, batch_kernel.applies
    fused.applies = batch_kernel.applies = lambda *args: False
    try:
        yield
    finally:
        fused.applies, batch_kernel.applies = saved


@contextlib.contextmanager
def mlp_launched():
    """Every fused kernel but the MLP's: its layers run one by one."""
    saved = fused_mlp.applies
    fused_mlp.applies = lambda *args: False
    try:
        yield
    finally:
        fused_mlp.applies = saved


def _dense(grad):
    return grad.dense() if hasattr(grad, "dense") else grad


def _difference(backend, a, b) -> float:
    return float(backend.to_host(abs(a - b).max())) if a.size else 0.0


# -- fused -------------------------------------------------------------------------------------------
def fused_part(ctx):
    backend, sizes = ctx.backend, ctx.sizes
    width, height = sizes.photo
    values = synthetic_photo(backend.xp, width, height, 3)
    ctx.note(f"a {width}x{height} colour picture: the hash-grid pyramid (--finest {max(width, height)}) and "
             "fit's default, the pixel spline (a tile a step); 'launched' is the code the fused kernels replace, "
             "in the kernels mode")
    for model, settings in (("pyramid", pyramid(width, height)), ("pixel spline", {})):
        for batch in sizes.batches:
            _fused_against_launched(ctx, values, model, settings, batch)
    for shape in ((32, 32, 3, 2, False), (21, 16, 3, 2, False), (32, 64, 3, 2, False)):
        for batch in (1 << 13,) + sizes.batches:
            ctx.add_row(_mlp_passes(ctx, shape, batch), "mlp")
    ctx.save(headline="; ".join(f"{r['model']} {r['batch']}: step {r['step launched ms']:.3f} -> "
                                f"{r['step fused ms']:.3f} ms (MLP launched: {r['step MLP launched ms']:.3f})"
                                for r in ctx.result.get("steps", [])))


def _fused_against_launched(ctx, values, model: str, settings: dict, batch: int) -> None:
    backend, sizes = ctx.backend, ctx.sizes
    with mode("kernels"), fit_job(backend, values, "rgb", batch_size=batch,
                                  steps=sizes.warmup + 4 * sizes.steps + 20, **settings) as job:
        if model == "pyramid":
            ctx.add_row(_passes(ctx, job, batch))
        row = {"model": model, "batch": batch}
        for name, context in (("launched", unfused), ("fused", contextlib.nullcontext),
                              ("MLP launched", mlp_launched)):
            with context():
                timed = time_steps(job.trainer.train_step, backend_clock(backend), sizes.warmup, sizes.steps)
            row[f"step {name} ms"], row[f"step {name} wall ms"] = timed["warm_median_ms"], timed["wall_ms_per_step"]
        ctx.add_row(row, "steps")


def _passes(ctx, job, batch: int) -> dict:
    """The sampler, the grid's read and the read's backward: fused against launched, ms and the
    largest difference."""
    backend, reps = ctx.backend, ctx.sizes.kernel_reps
    trainer = job.trainer
    sampler, grid = trainer.batches, trainer.model.layers[0]
    row = {"batch": batch, "sampler": type(sampler).__name__, "levels": grid.levels,
           "hashed levels": sum(grid.hashed), "table rows": int(grid.params["table"].shape[0])}
    if not hasattr(sampler, "kind"):
        row["note"] = "this job's batches come from no PictureSampler"
        return row
    x, y = sampler(3)
    with unfused():
        x_launched, y_launched = sampler(3)
        row["sampler launched ms"] = bench(lambda: sampler(3), backend, reps)
    row["sampler fused ms"] = bench(lambda: sampler(3), backend, reps)
    row["sampler max diff (coords, targets)"] = [_difference(backend, x, x_launched), _difference(backend, y, y_launched)]
    g = backend.asarray(np.random.default_rng(0).uniform(-1, 1, (batch, grid.out_features)).astype(np.float32))

    def launched_read():
        grid._lookups = []  # the lookup's cache would skip the work a new batch does
        return grid.forward(x)

    def layer(read):
        read()
        grid.backward(g, need_grad_in=False)
        return grid.grads["table"]

    with unfused():
        out_launched = launched_read()
        row["read launched ms"] = bench(launched_read, backend, reps)
        grad_launched = _dense(layer(launched_read)).copy()
        row["read and backward launched ms"] = bench(lambda: layer(launched_read), backend, reps)
    out = grid.forward(x)
    row["read fused ms"] = bench(lambda: grid.forward(x), backend, reps)
    got = layer(lambda: grid.forward(x))
    row["read and backward fused ms"] = bench(lambda: layer(lambda: grid.forward(x)), backend, reps)
    row["gradient"] = type(got).__name__
    row["read max diff"] = _difference(backend, out, out_launched)
    row["gradient max diff"] = _difference(backend, _dense(got), grad_launched)
    return row


def _mlp_passes(ctx, shape, batch: int) -> dict:
    """A small MLP (``(inputs, width, outputs, hidden layers, sigmoid)``) forward and backward:
    fused against its layers one by one, ms and the largest differences."""
    from ironlearn.nn import mlp

    backend, reps = ctx.backend, ctx.sizes.kernel_reps
    inputs, width, outputs, hidden, sigmoid = shape
    rng = np.random.default_rng(0)
    sizes = [inputs] + [width] * hidden + [outputs]
    net = mlp(inputs, outputs, width=width, depth=hidden, final_activation="sigmoid" if sigmoid else None,
              rng=rng).to(backend)
    x = backend.asarray(rng.uniform(-1, 1, (batch, inputs)))
    g = backend.asarray(rng.normal(0, 1, (batch, outputs)))

    def both_ways():
        out = net.forward(x)
        net.backward(g)
        return out

    row = {"shape": "x".join(map(str, sizes)) + (" sigmoid" if sigmoid else ""), "batch": batch}
    with mlp_launched():
        out_launched = both_ways().copy()
        grads_launched = {name: grad.copy() for name, grad in net.named_gradients().items()}
        row["launched ms"] = bench(both_ways, backend, reps)
    out = both_ways()
    row["fused"] = bool(net._fused)
    row["fused ms"] = bench(both_ways, backend, reps)
    row["output max diff"] = _difference(backend, out, out_launched)
    row["gradient max diff"] = max(_difference(backend, grad, grads_launched[name])
                                   for name, grad in net.named_gradients().items())
    return row


# -- graph -------------------------------------------------------------------------------------------
def graph_part(ctx):
    """The pyramid's fused step captured on a stream and replayed, against the same step launched
    on that stream.  A replay repeats the captured step's batch and scalars: a timing, not training."""
    backend, sizes = ctx.backend, ctx.sizes
    xp = backend.xp
    width, height = sizes.photo
    values = synthetic_photo(xp, width, height, 3)
    if ctx.device != "cuda":
        ctx.note("the CPU has no CUDA graph: the launched step only")
    for batch in sizes.batches:
        row = {"batch": batch}
        with mode("kernels"), fit_job(backend, values, "rgb", batch_size=batch, steps=sizes.warmup + 3 * sizes.steps + 20,
                                      **pyramid(width, height)) as job:
            step = job.trainer.train_step
            if ctx.device != "cuda":
                row["launched ms"] = time_steps(step, backend_clock(backend), sizes.warmup, sizes.steps)["warm_median_ms"]
                ctx.add_row(row)
                continue
            stream = xp.cuda.Stream(non_blocking=True)
            with stream:
                row["launched ms"] = time_steps(step, backend_clock(backend), sizes.warmup, sizes.steps)["warm_median_ms"]
                try:
                    stream.begin_capture()
                    try:
                        step()
                    finally:
                        graph = stream.end_capture()
                    row["captured"] = True
                    timed = time_steps(lambda: graph.launch(stream), backend_clock(backend), sizes.warmup, sizes.steps)
                    row["graph replay ms"] = timed["warm_median_ms"]
                    row["graph replay wall ms"] = timed["wall_ms_per_step"]
                except Exception as exc:  # what refused the capture, as it said it
                    row["captured"] = False
                    row["error"] = f"{type(exc).__name__}: {exc}"[:500]
            stream.synchronize()
        ctx.add_row(row)
    ctx.save(headline="; ".join(f"batch {r['batch']}: launched {r['launched ms']:.3f} ms, "
                                + (f"graph {r['graph replay ms']:.3f} ms" if r.get("captured") else "not captured")
                                for r in ctx.result.get("rows", [])))
