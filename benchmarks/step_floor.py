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
from ironlearn.image.sampling import BETWEEN
from ironlearn.nn import HashGrid, Linear

CASES = {  # name: (preset, width, height, mode)
    "camera256": ("hashgrid", 256, 256, "gray"),
    "astronaut256": ("hashgrid", 256, 256, "rgb"),
    "photo512": ("hashgrid", 512, 512, "rgb"),
    "photo12": ("hashgrid", 4096, 3072, "rgb"),
    "siren256": ("siren", 256, 256, "gray"),
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
    n = plan.batch_size or round(width * height * (1 + BETWEEN[mode]))
    layers = trainer.model.layers
    flops = sum(6 * n * layer.in_features * layer.out_features for layer in layers if isinstance(layer, Linear))
    moved = sum(grid_bytes(layer, n) for layer in layers if isinstance(layer, HashGrid))
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
