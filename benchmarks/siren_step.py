"""Benchmark (a): time per training step of the same SIREN in ironlearn and in PyTorch (CPU).

Full batch of 65,536 points (a 256x256 grid), Adam, MSE; widths 128 and 256, three sine layers.
Both frameworks run in this one process, alternating, so the ratio is measured side by side.
Two ironlearn rows a width: a Trainer as the tutorial makes one (its BLAS threads measured again
and again), and the step of ``ironlearn fit --model siren --batch-size 0 --steps N``, the fit
job as the command builds it (its thread count measured once and kept, for a bit-exact resume).

    python benchmarks/siren_step.py [--repeats 7] [--steps 5]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time

import numpy as np

import ironlearn as il
from common import job_for
from ironlearn.backend import Backend
from ironlearn.image.coords import pixel_grid
from ironlearn.image.io import Picture
from ironlearn.nn import mse


def ironlearn_stepper(width, x, y):
    model = il.siren(2, 1, width=width, depth=3, rng=np.random.default_rng(0))
    trainer = il.Trainer(model, il.Adam(model.named_parameters(), lr=1e-4), mse, x, y, check_every=0)
    return trainer.train_step


def fit_stepper(width, y, folder):
    """The step of the fit command's own job, run as the command runs it: on the thread count
    its plan chose (``Trainer.run``, which sets it), a step a call."""
    picture = Picture((y.reshape(256, 256, 1) * 255).astype(np.uint8), "gray", "noise")
    job = job_for(picture, Backend("cpu"), folder, model="siren", steps=10**9, batch_size=0,
                  model_options={"width": width, "depth": 3})
    trainer = job.trainer
    trainer.callbacks = []  # the steps alone, as the other rows time them
    return lambda: trainer.run(trainer.step + 1), job.plan.blas_threads


def torch_stepper(width, x, y):
    import torch

    class Sine(torch.nn.Module):
        def forward(self, z):
            return torch.sin(30.0 * z)

    layers, fan_in = [], 2
    for _ in range(3):
        layers += [torch.nn.Linear(fan_in, width), Sine()]
        fan_in = width
    model = torch.nn.Sequential(*layers, torch.nn.Linear(width, 1))
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    tx, ty = torch.from_numpy(x), torch.from_numpy(y)

    def step():
        optimizer.zero_grad(set_to_none=True)
        loss = torch.nn.functional.mse_loss(model(tx), ty)
        loss.backward()
        optimizer.step()

    return step


def seconds_per_step(step, steps):
    step()  # warm-up
    t0 = time.perf_counter()
    for _ in range(steps):
        step()
    return (time.perf_counter() - t0) / steps


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=7)
    parser.add_argument("--steps", type=int, default=5)
    args = parser.parse_args()
    x = pixel_grid(256, 256)
    y = np.random.default_rng(0).uniform(0, 1, (len(x), 1)).astype(np.float32)
    try:
        import torch

        torch.manual_seed(0)
        peer = f"PyTorch {torch.__version__}, {torch.get_num_threads()} threads"
    except ImportError:
        torch = None
        peer = "PyTorch not installed: ironlearn only"
    print(f"# {platform.processor() or platform.machine()}, {os.cpu_count()} cores, NumPy {np.__version__}; {peer}")
    print("| model | ironlearn Trainer (ms/step) | ironlearn fit --steps (ms/step, threads) | PyTorch (ms/step) "
          "| ratios to PyTorch |")
    print("| --- | --- | --- | --- | --- |")
    for width in (128, 256):
        with tempfile.TemporaryDirectory() as folder:
            steppers = {"trainer": ironlearn_stepper(width, x, y)}
            steppers["fit"], threads = fit_stepper(width, y, folder)
            if torch:
                steppers["torch"] = torch_stepper(width, x, y)
            times = {name: [] for name in steppers}
            for _ in range(args.repeats):  # alternate, so drifts in machine load hit all
                for name, step in steppers.items():
                    times[name].append(seconds_per_step(step, args.steps))
        ms = {name: statistics.median(t) * 1000 for name, t in times.items()}
        peer = ms.get("torch")
        ratios = f"{ms['trainer'] / peer:.2f}x, {ms['fit'] / peer:.2f}x" if peer else "-"
        print(f"| SIREN 3x{width} | {ms['trainer']:.1f} | {ms['fit']:.1f} ({threads}) | "
              f"{f'{peer:.1f}' if peer else '-'} | {ratios} |")

if __name__ == "__main__":
    main()
