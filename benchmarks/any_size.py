"""Benchmark (d): pictures of any size. PSNR after a time budget and peak memory, ironlearn against
the same hash-grid model written in PyTorch (CPU), trained on random batches for the same time.

    python benchmarks/any_size.py [--seconds 60] [--sizes 1024x1024 2048x2048 4096x3072 8192x6144]

Each fit runs in its own process under ``/usr/bin/time -v`` (peak memory = its maximum resident
set size). ironlearn runs as a user would: ``ironlearn fit PHOTO --time-budget S``, and its PSNR is
the exact whole-picture figure from metrics.json. The PyTorch peer builds the model ironlearn's
default preset chose (same levels, table size, resolutions, features, MLP), samples random whole
pixels each step (its batch as large as ironlearn's), trains with Adam on the same warm-up cosine
schedule, and is scored over the whole picture in bands. The photographs come from make_photo.py.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def timed(command: list[str]) -> tuple[str, float]:
    """Run ``command`` under ``/usr/bin/time -v``; returns its stdout and peak memory in GB."""
    done = subprocess.run(["/usr/bin/time", "-v", *command], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} failed:\n{done.stderr[-3000:]}")
    peak_kb = int(re.search(r"Maximum resident set size \(kbytes\): (\d+)", done.stderr).group(1))
    return done.stdout, peak_kb / 2**20


def run_ironlearn(photo: str, seconds: float, out: str) -> dict:
    _, peak = timed([sys.executable, "-m", "ironlearn", "fit", photo, "--out", out, "--time-budget", str(seconds),
                     "--quiet", "--device", "cpu", "--force"])
    with open(os.path.join(out, "metrics.json")) as file:
        metrics = json.load(file)
    return {**metrics, "peak_gb": peak}


def run_torch(photo: str, seconds: float, out: str) -> dict:
    stdout, peak = timed([sys.executable, os.path.abspath(__file__), "--peer", photo, "--seconds", str(seconds),
                          "--model-of", out])
    return {**json.loads(stdout.strip().splitlines()[-1]), "peak_gb": peak}


# -- the PyTorch peer, run in its own process ------------------------------------------------------
def torch_peer(photo: str, seconds: float, run_folder: str) -> dict:
    import time

    import numpy as np
    import torch
    from PIL import Image

    from ironlearn.nn import HashGrid
    from ironlearn.optim import warmup_cosine

    torch.set_num_threads(os.cpu_count())
    with open(os.path.join(run_folder, "metrics.json")) as file:
        chosen = json.load(file)
    options, batch = chosen["model_options"], chosen["batch_size"] or chosen["pixels"]
    Image.MAX_IMAGE_PIXELS = None
    pixels = torch.from_numpy(np.asarray(Image.open(photo).convert("RGB")))  # uint8, kept compact
    height, width, channels = pixels.shape
    flat = pixels.reshape(-1, channels)
    resolutions, sizes = HashGrid.level_shapes(options["levels"], options["log2_table_size"], options["coarsest"],
                                               options["finest"])

    class Grid(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.tables = torch.nn.ParameterList(
                torch.nn.Parameter(torch.empty(size, options["features"]).uniform_(-1e-4, 1e-4)) for size in sizes)

        def forward(self, x):
            unit = (x + 1) * 0.5
            out = []
            for res, size, table in zip(resolutions, sizes, self.tables):
                pos = (unit * res).clamp(0, res)
                corner = torch.minimum(pos.floor(), torch.tensor(float(res - 1)))
                frac = pos - corner
                c = corner.long()
                mixed = 0
                for dx, dy in ((0, 0), (1, 0), (0, 1), (1, 1)):
                    ix, iy = c[:, 0] + dx, c[:, 1] + dy
                    if (res + 1) ** 2 > size:
                        index = (ix ^ (iy * 2654435761)) & (size - 1)
                    else:
                        index = iy * (res + 1) + ix
                    wx = frac[:, 0] if dx else 1 - frac[:, 0]
                    wy = frac[:, 1] if dy else 1 - frac[:, 1]
                    mixed = mixed + table[index] * (wx * wy)[:, None]
                out.append(mixed)
            return torch.cat(out, dim=1)

    layers, fan_in = [Grid()], options["levels"] * options["features"]
    for _ in range(options["depth"]):
        layers += [torch.nn.Linear(fan_in, options["width"]), torch.nn.ReLU()]
        fan_in = options["width"]
    model = torch.nn.Sequential(*layers, torch.nn.Linear(fan_in, channels))
    optimizer = torch.optim.Adam(model.parameters(), lr=1.0)
    # The same schedule as ironlearn's, kept to the peer's own pace the way `ironlearn fit` keeps a
    # time budget (fitting.run.Replan): first sized by ironlearn's step count, then re-sized to
    # what the rest of the budget allows at the pace measured each twentieth of it.
    plan = {"steps": max(chosen["steps"], 10)}
    plan["schedule"] = warmup_cosine(2e-2, 2e-4, plan["steps"])
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: plan["schedule"](min(s, plan["steps"] - 1)))
    generator = torch.Generator().manual_seed(0)
    trained, step, since = 0.0, 0, (0, 0.0)
    while trained < seconds:
        if trained - since[1] >= seconds / 20 and step > since[0]:
            pace = (trained - since[1]) / (step - since[0])
            plan["steps"] = max(10, step + 1, step + int((seconds - trained) / pace))
            plan["schedule"] = warmup_cosine(2e-2, 2e-4, plan["steps"])
            since = (step, trained)
        t0 = time.perf_counter()
        index = torch.randint(0, height * width, (batch,), generator=generator)
        rows, cols = index // width, index % width
        x = torch.stack([(2 * cols + 1) / width - 1, (2 * rows + 1) / height - 1], dim=1).float()
        y = flat[index].float() / 255
        loss = torch.mean((model(x) - y) ** 2)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        scheduler.step()
        trained += time.perf_counter() - t0
        step += 1
    squared = 0.0
    with torch.no_grad():
        for start in range(0, height, max(1, 65536 // width)):
            stop = min(height, start + max(1, 65536 // width))
            ys, xs = torch.meshgrid(torch.arange(start, stop), torch.arange(width), indexing="ij")
            x = torch.stack([(2 * xs.reshape(-1) + 1) / width - 1, (2 * ys.reshape(-1) + 1) / height - 1], 1).float()
            pred = model(x).clamp(0, 1).double()
            squared += float(((pred - flat[start * width:stop * width].double() / 255) ** 2).sum())
    mse = squared / (height * width * channels)
    return {"psnr_db": -10 * math.log10(mse), "steps": step, "seconds": trained}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60)
    parser.add_argument("--sizes", nargs="+", default=["1024x1024", "2048x2048", "4096x3072", "8192x6144"])
    parser.add_argument("--peer", help=argparse.SUPPRESS)
    parser.add_argument("--model-of", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.peer:
        print(json.dumps(torch_peer(args.peer, args.seconds, args.model_of)))
        return
    sys.path.insert(0, HERE)
    from common import machine
    from make_photo import tiled
    from PIL import Image

    print(f"# {datetime.date.today()}, {machine()}, {args.seconds:g} s each")
    print("| picture | MP | ironlearn PSNR | steps | peak GB | PyTorch PSNR | steps | peak GB | params |")
    print("| --- " * 9 + "|")
    with tempfile.TemporaryDirectory() as folder:
        for size in args.sizes:
            width, height = (int(v) for v in size.split("x"))
            photo = os.path.join(folder, f"photo-{size}.png")
            Image.fromarray(tiled(width, height)).save(photo, compress_level=1)
            ours = run_ironlearn(photo, args.seconds, os.path.join(folder, f"run-{size}"))
            peer = run_torch(photo, args.seconds, os.path.join(folder, f"run-{size}"))
            print(f"| tiled photographs {size} | {width * height / 1e6:.1f} | {ours['psnr_db']:.2f} | "
                  f"{ours['steps']:,} | {ours['peak_gb']:.2f} | {peer['psnr_db']:.2f} | {peer['steps']:,} | "
                  f"{peer['peak_gb']:.2f} | {ours['params']:,} |", flush=True)


if __name__ == "__main__":
    main()
