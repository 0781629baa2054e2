"""Benchmark (d): pictures of any size. PSNR after a time budget and peak memory, ironlearn against
the same hash-grid model written in PyTorch (CPU), trained on random batches for the same time.

    python benchmarks/any_size.py [--seconds 60] [--sizes 1024x1024 2048x2048 4096x3072 8192x6144]

Each fit runs in its own process under ``/usr/bin/time -v`` (peak memory = its maximum resident
set size). ironlearn runs as a user would: ``ironlearn fit PHOTO --time-budget S``, and its PSNR is
the exact whole-picture figure from metrics.json. The PyTorch peer is ironlearn's untrained model
for the photograph written in PyTorch (``torch_peer.peer_of``: the same grid, head and starting
arrays, a spline level started at the picture included), samples random whole
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

    from ironlearn.fitting import FitOptions, make_plan
    from ironlearn.fitting.run import new_model
    from ironlearn.image import load_picture
    from ironlearn.optim import warmup_cosine

    sys.path.insert(0, HERE)
    from torch_peer import peer_of

    torch.set_num_threads(os.cpu_count())
    with open(os.path.join(run_folder, "metrics.json")) as file:
        chosen = json.load(file)
    batch = chosen["batch_size"] or chosen["pixels"]
    # ironlearn's untrained model for the photograph, started as `ironlearn fit` starts it (a spline
    # level of a vertex per pixel at the picture's B-spline), its arrays copied into the peer.
    picture = load_picture(photo)
    model = peer_of(new_model(make_plan(FitOptions(photo, batch_size=batch, steps=10), picture), picture))
    del picture
    Image.MAX_IMAGE_PIXELS = None
    pixels = torch.from_numpy(np.asarray(Image.open(photo).convert("RGB")))  # uint8, kept compact
    height, width, channels = pixels.shape
    flat = pixels.reshape(-1, channels)
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
    return {"psnr_db": _peer_psnr(model, flat, width, height), "steps": step, "seconds": trained}


def _peer_psnr(model, flat, width: int, height: int) -> float:
    """The PSNR of the peer ``model`` at every pixel centre against ``flat`` (``(h * w, c)`` uint8),
    in bands of 65,536 pixels."""
    import torch

    squared, rows = 0.0, max(1, 65536 // width)
    with torch.no_grad():
        for start in range(0, height, rows):
            stop = min(height, start + rows)
            ys, xs = torch.meshgrid(torch.arange(start, stop), torch.arange(width), indexing="ij")
            x = torch.stack([(2 * xs.reshape(-1) + 1) / width - 1, (2 * ys.reshape(-1) + 1) / height - 1], 1).float()
            pred = model(x).clamp(0, 1).double()
            squared += float(((pred - flat[start * width:stop * width].double() / 255) ** 2).sum())
    return -10 * math.log10(squared / flat.numel())


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
