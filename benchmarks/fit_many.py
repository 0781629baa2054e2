"""Throughput of ``fit-many``: pictures per minute by engine and worker count, and Ray's overhead per task.

    python benchmarks/fit_many.py [--pictures 24] [--size 256] [--time-budget 10 | --steps N]
                                  [--workers 1 2] [--engines local ray] [--out DIR]

The pictures are made here (seeded discs, gradients and stripes, half of them in colour), so
the benchmark needs no data set.  Every combination fits them all from scratch (``force``) with
the default preset; Ray runs on a local instance started once with the machine's cores, after
the local runs (its start-up is not timed).  Ray's overhead per task is (Ray's wall time - the local engine's) /
pictures, with the same worker count.
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np
from PIL import Image

from ironlearn.fitting import FitOptions
from ironlearn.fitting.many import fit_many, summary


def make_pictures(folder: str, count: int, size: int) -> list[str]:
    """``count`` seeded pictures, ``size`` x ``size``: a gradient, discs with soft and hard edges
    and a stripe texture, with a little noise; every second one in colour."""
    ys, xs = np.mgrid[0:size, 0:size] / size
    paths = []
    for i in range(count):
        rng = np.random.default_rng(i)
        channels = []
        for _ in range(3 if i % 2 else 1):
            value = rng.uniform(0.2, 0.5) + rng.uniform(-0.3, 0.3) * (xs * rng.uniform(-1, 1) + ys * rng.uniform(-1, 1))
            for _ in range(4):
                cx, cy, r = rng.uniform(0.1, 0.9, 2).tolist() + [rng.uniform(0.05, 0.25)]
                inside = (xs - cx) ** 2 + (ys - cy) ** 2 < r * r
                value = np.where(inside, rng.uniform(0, 1), value)
            angle, frequency = rng.uniform(0, np.pi), rng.uniform(10, 40)
            value += 0.1 * np.sin(frequency * (xs * np.cos(angle) + ys * np.sin(angle)) * 2 * np.pi)
            channels.append(np.clip(value + rng.normal(0, 0.01, value.shape), 0, 1))
        array = (np.stack(channels, -1) * 255).astype(np.uint8)
        path = os.path.join(folder, f"p{i:03d}.png")
        Image.fromarray(array[..., 0] if array.shape[2] == 1 else array).save(path)
        paths.append(path)
    return paths


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--pictures", type=int, default=24)
    parser.add_argument("--size", type=int, default=256)
    parser.add_argument("--time-budget", type=float, default=None)
    parser.add_argument("--steps", type=int, default=None)
    parser.add_argument("--workers", type=int, nargs="+", default=[1, 2])
    parser.add_argument("--engines", nargs="+", default=["local", "ray"], choices=["local", "ray"])
    parser.add_argument("--out", default=None, help="where the pictures and runs go (default: a temporary folder)")
    args = parser.parse_args()
    if args.steps is None and args.time_budget is None:
        args.time_budget = 10.0
    base = args.out or tempfile.mkdtemp(prefix="ironlearn-fit-many-")
    os.makedirs(os.path.join(base, "pictures"), exist_ok=True)
    pictures = make_pictures(os.path.join(base, "pictures"), args.pictures, args.size)
    options = FitOptions(input="", steps=args.steps, time_budget=args.time_budget, device="cpu", quiet=True)
    work = f"--steps {args.steps}" if args.steps else f"--time-budget {args.time_budget:g}"
    print(f"{args.pictures} pictures of {args.size}x{args.size}, {work}, {os.cpu_count()} cores\n")
    print("| engine | workers | wall (s) | pictures/min | mean PSNR (dB) | training s/picture | overhead/task (s) |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    walls = {}
    for engine in args.engines:
        if engine == "ray":  # after the local runs, so that Ray's idle processes do not slow them
            import ray

            ray.init(include_dashboard=False, log_to_driver=False)
        for workers in args.workers:
            out = os.path.join(base, f"{engine}-{workers}")
            started = time.perf_counter()
            rows = fit_many(pictures, out, options=options, workers=workers, engine=engine, force=True,
                            log=lambda message: None, progress=False)
            wall = walls[engine, workers] = time.perf_counter() - started
            done = [r for r in rows if r["status"] == "done"]
            training = sum(r["seconds"] for r in done) / max(1, len(done))
            overhead = (f"{(wall - walls['local', workers]) / len(pictures):+.2f}"
                        if engine == "ray" and ("local", workers) in walls else "")
            print(f"| {engine} | {workers} | {wall:.1f} | {60 * len(done) / wall:.2f} | {summary.mean_psnr(rows):.2f} "
                  f"| {training:.1f} | {overhead} |", flush=True)


if __name__ == "__main__":
    main()
