"""Benchmark (f): how far a training step is from its floor on this machine.

    python benchmarks/step_floor.py [--steps 15] [--cases camera256 photo12 siren256]

The floor of a step is its matrix products at the BLAS rate this machine reaches (a large float32
GEMM, the first micro-benchmark) plus the bytes its gathers and scatters must move at the memory
bandwidth this machine reaches (a large streaming copy, the second). Both are lower bounds: small
products run below the large GEMM's rate, and random rows move slower than a stream.

* matrix products: each Linear layer of ``in`` x ``out`` costs ``6 * n * in * out`` flops a step
  for ``n`` samples (forward, and the two products of its backward pass);
* gathers and scatters, for a grid's level read at ``c`` vertices a sample (4 linear, 16 by
  B-spline) with ``F`` features: ``n * c * (3 * 4F + 2 * 4 + 2 * 8)`` bytes: the rows read forward,
  read and written back by the scatter of the backward pass, each weight written and read once, and
  each row index written and read once (int64).
* a level read as a lattice (a tile of pixels, :class:`ironlearn.nn.lattice.Lattice`): its banded
  products as the step ran them (forward, and both transposed in the backward pass), and the bytes
  of the rectangle of vertices read forward and of its gradient written back.

Neither counts the optimizer's update or the elementwise passes (activations, loss), which a fused
kernel would not store at all: the floor is the issue's, a lower bound.

The step is timed as ``ironlearn fit`` builds it (the preset's model, sampler and Adam), by
``Trainer.train_step`` alone, median of ``--steps`` after three to warm up.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import time

import numpy as np

from common import machine

from ironlearn.backend import Backend
from ironlearn.fitting import FitOptions, make_plan
from ironlearn.fitting.run import build
from ironlearn.image.io import Picture
from ironlearn.nn import HashGrid, Linear

CASES = {  # name: (preset, width, height, mode)
    "camera256": ("hashgrid", 256, 256, "gray"),
    "astronaut256": ("hashgrid", 256, 256, "rgb"),
    "photo512": ("hashgrid", 512, 512, "rgb"),
    "photo12": ("hashgrid", 4096, 3072, "rgb"),
    "siren256": ("siren", 256, 256, "gray"),
    "drawing200": ("hashgrid", 200, 200, "binary"),
    "photo50": ("hashgrid", 8192, 6144, "rgb"),
}


def median_seconds(run, repeats: int) -> float:
    run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def gemm_rate(side: int = 2048) -> float:
    """float32 flops a second of one large matrix product."""
    rng = np.random.default_rng(0)
    a, b = rng.random((side, side), np.float32), rng.random((side, side), np.float32)
    out = np.empty_like(a)
    return 2 * side ** 3 / median_seconds(lambda: np.matmul(a, b, out=out), 7)


def stream_bandwidth(megabytes: int = 256) -> float:
    """Bytes a second a large copy reads and writes."""
    source = np.ones(megabytes << 18, np.float32)
    target = np.empty_like(source)
    return 2 * source.nbytes / median_seconds(lambda: np.copyto(target, source), 7)


def lattice_work(grid: HashGrid) -> tuple[int, int]:
    """Flops and bytes of the last lattice read of ``grid`` (and its detail level's), forward and
    backward: ``(0, 0)`` if it last read points."""
    flops = moved = 0
    for _, along_y, along_x in grid._rectangles or ():
        columns = along_x.vertices * grid.features  # values in a row of the rectangle
        down = sum(2 * (p1 - p0) * (v1 - v0) * columns for p0, p1, v0, v1, _, _ in along_y.blocks)
        across = sum(2 * along_y.points * (v1 - v0) * (p1 - p0) * grid.features ** 2
                     for p0, p1, v0, v1, _, _ in along_x.blocks)
        flops += 2 * (down + across)
        moved += 2 * 4 * along_y.vertices * columns
    if grid.detail_grid is not None:
        more = lattice_work(grid.detail_grid)
        flops, moved = flops + more[0], moved + more[1]
    return flops, moved


def grid_bytes(grid: HashGrid, n: int) -> int:
    corners = 16 if grid.interpolation == "bspline" else 4
    per_level = corners * (3 * 4 * grid.features + 2 * 4 + 2 * 8)
    total = n * grid.levels * per_level
    if grid.detail_grid is not None:
        total += grid_bytes(grid.detail_grid, n)
    return total


def step_case(name: str, steps: int, flops_rate: float, bandwidth: float) -> dict:
    preset, width, height, mode = CASES[name]
    channels = 3 if mode == "rgb" else 1
    values = np.random.default_rng(0).random((height, width, channels), np.float32)
    picture = Picture(values=values, mode=mode, source=name)
    plan = make_plan(FitOptions(input=f"{name}.png", out="unused", model=preset, steps=1000), picture)
    job = build(plan, picture, None, Backend("cpu"))
    trainer = job.trainer
    for _ in range(3):
        trainer.train_step()
    seconds = median_seconds(trainer.train_step, steps)
    # The work of one step's batch, term by term (a picture trained whole: its pixels, then the
    # samples between them), each read through the model as the step reads it.
    batch = trainer.batches(trainer.step)
    layers = trainer.model.layers
    n = flops = moved = 0
    for x, *_ in batch if isinstance(batch, list) else [batch]:
        trainer.model.forward(x)
        n += len(x)
        flops += sum(6 * len(x) * layer.in_features * layer.out_features for layer in layers
                     if isinstance(layer, Linear))
        for grid in (layer for layer in layers if isinstance(layer, HashGrid)):
            lattice_flops, lattice_bytes = lattice_work(grid)
            flops += lattice_flops
            moved += lattice_bytes if grid._rectangles else grid_bytes(grid, len(x))
    floor = flops / flops_rate + moved / bandwidth
    return {"case": name, "model": preset, "picture": f"{width}x{height} {mode}", "samples": n,
            "step_ms": 1e3 * seconds, "matmul_floor_ms": 1e3 * flops / flops_rate,
            "memory_floor_ms": 1e3 * moved / bandwidth, "floor_ms": 1e3 * floor, "times_floor": seconds / floor}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=15)
    parser.add_argument("--cases", nargs="+", choices=list(CASES), default=["camera256", "photo12", "siren256"])
    args = parser.parse_args()
    rate, bandwidth = gemm_rate(), stream_bandwidth()
    print(f"{datetime.date.today()}, {machine()}")
    print(f"BLAS: {rate / 1e9:.1f} GFLOP/s (float32 2048x2048 product); memory: {bandwidth / 1e9:.1f} GB/s "
          "(256 MB copy, read + write)\n")
    print("| case | picture | samples a step | step ms | floor ms (products + memory) | step / floor |")
    print("| --- | --- | --- | --- | --- | --- |")
    for name in args.cases:
        row = step_case(name, args.steps, rate, bandwidth)
        print(f"| {row['case']} ({row['model']}) | {row['picture']} | {row['samples']:,} | {row['step_ms']:.1f} | "
              f"{row['floor_ms']:.2f} ({row['matmul_floor_ms']:.2f} + {row['memory_floor_ms']:.2f}) | "
              f"{row['times_floor']:.1f}x |")


if __name__ == "__main__":
    main()
