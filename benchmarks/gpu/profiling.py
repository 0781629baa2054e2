"""The GPU check's look inside a step, and its largest render: ``profile`` (each phase of a
training step: the host's time to issue it and the GPU's time between events around it) and
``render`` (a model redrawn at 16384x16384 in bands: seconds and the pool's peak).

A phase whose GPU time is about its host time is bound by the host (Python and launches): the
GPU waited for its work.  One far above its host time is bound by the GPU.
"""

from __future__ import annotations

import statistics
import time

import numpy as np
from common import pyramid

from ironlearn.image.render import bands

from .device import camera, fit_job, photo


# -- profile -----------------------------------------------------------------------------------------
class PhaseClock:
    """Wraps callables so that each call records the host's seconds and, on a GPU, a pair of
    CUDA events around it; the step's own events bracket the whole."""

    def __init__(self, backend):
        self.backend, self.host, self.events = backend, {}, {}

    def wrap(self, label: str, function):
        cuda = self.backend.xp.cuda if self.backend.device == "cuda" else None

        def timed(*args, **kwargs):
            start = cuda.Event() if cuda else None
            if start:
                start.record()
            t0 = time.perf_counter()
            out = function(*args, **kwargs)
            self.host.setdefault(label, []).append((time.perf_counter() - t0) * 1000)
            if start:
                end = cuda.Event()
                end.record()
                self.events.setdefault(label, []).append((start, end))
            return out

        return timed

    def rows(self) -> list:
        self.backend.synchronize()
        elapsed = self.backend.xp.cuda.get_elapsed_time if self.backend.device == "cuda" else None
        rows = []
        for label, host in self.host.items():
            row = {"phase": label, "calls a step": None, "host ms": round(statistics.median(host), 4)}
            if elapsed:
                row["GPU ms"] = round(statistics.median(elapsed(a, b) for a, b in self.events[label]), 4)
            rows.append(row)
        return rows


def _instrument(trainer, clock: PhaseClock) -> None:
    """Every phase of ``trainer``'s step through ``clock``: the batch, each layer's forward and
    backward (the MLP that ends the model as one phase each way where it runs fused), the loss,
    the optimizer (instance attributes, shadowing the methods)."""
    trainer.batches = clock.wrap("batch (sampler)", trainer.batches)
    trainer.loss_fn = clock.wrap("loss", trainer.loss_fn)
    trainer.optimizer.step = clock.wrap("optimizer", trainer.optimizer.step)
    for i, layer in enumerate(trainer.model.layers):
        name = f"{i} {type(layer).__name__}"
        layer.forward = clock.wrap(f"{name} forward", layer.forward)
        layer.backward = clock.wrap(f"{name} backward", layer.backward)
    start, head = trainer.model._head()
    if head is not None:
        head.forward = clock.wrap(f"{start}- fused MLP forward", head.forward)
        head.backward = clock.wrap(f"{start}- fused MLP backward", head.backward)


def _profiled(ctx, name: str, values, mode_name: str, steps: int = 40, **settings) -> None:
    backend = ctx.backend
    with fit_job(backend, values, mode_name, steps=10 * steps, **settings) as job:
        trainer = job.trainer
        for _ in range(10):
            trainer.train_step()
        clock = PhaseClock(backend)
        _instrument(trainer, clock)
        step_clock = clock.wrap("whole step", trainer.train_step)
        for _ in range(steps):
            step_clock()
        for row in clock.rows():
            row["calls a step"] = len(clock.host[row["phase"]]) / steps
            ctx.add_row({"case": name, **row})


def profile(ctx):
    sizes, notes = ctx.sizes, []
    width, height = sizes.photo
    values = photo(ctx.backend, width, height, notes)
    _profiled(ctx, f"pyramid {width}x{height}, batch {sizes.batches[0]}", values, "rgb",
              batch_size=sizes.batches[0], **pyramid(width, height))
    _profiled(ctx, f"pixel spline {width}x{height} (fit's default)", values, "rgb", batch_size=sizes.batches[0])
    side = sizes.siren_side
    gray = ctx.backend.asarray(camera(side, notes), dtype=np.uint8)
    _profiled(ctx, f"SIREN 3x{sizes.siren_width}, {side}x{side} every pixel", gray, "gray", model="siren",
              model_options={"width": sizes.siren_width, "depth": 3}, batch_size=0, filter="centres")
    whole = {r["case"]: r for r in ctx.result["rows"] if r["phase"] == "whole step"}
    ctx.save(notes=notes, headline="; ".join(f"{case}: host {r['host ms']} ms, GPU {r.get('GPU ms', '-')} ms"
                                             for case, r in whole.items()))


# -- render ------------------------------------------------------------------------------------------
def render_part(ctx):
    backend, sizes, notes = ctx.backend, ctx.sizes, []
    width, height = sizes.photo
    side = sizes.render_side
    values = photo(backend, width, height, notes)
    with fit_job(backend, values, "rgb", steps=20) as job:
        job.trainer.run(20)
        model = job.trainer.model
        del values
        backend.synchronize()
        with backend.tracking_peak():
            t0, checksum = time.perf_counter(), 0.0
            for _, pixels in bands(model, side, side, backend):
                checksum += float(pixels[::97, ::89].sum())
            seconds = time.perf_counter() - t0
        stats = backend.memory_stats()
    ctx.save(notes=notes + [f"fit's default model of a {width}x{height} photograph after 20 steps, drawn at "
                            f"{side}x{side} in bands (ironlearn.image.render.bands), each band to the host"],
             side=side, seconds=round(seconds, 2), megapixels_per_second=round(side * side / 1e6 / seconds, 1),
             sampled_sum=round(checksum, 3), **stats,
             headline=f"{side}x{side} in {seconds:.1f} s; pool peak "
                      f"{stats.get('pool_peak_used_bytes', 0) / 2**30:.2f} GiB in arrays")
