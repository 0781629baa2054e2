"""PyTorch peers of ironlearn's models, for the GPU benchmarks (benchmarks only: ironlearn never
imports PyTorch).

* :class:`HashGridPeer`: the model an ironlearn ``hashgrid`` network is, built from it (the same
  levels, table, resolutions, features, vertex layout and MLP) with its initial arrays copied in.
  It gathers all levels' vertices with one ``index_select``, whose backward is ``index_add_``,
  an atomic scatter on CUDA (``table[idx]`` would backpropagate through ``index_put_`` with
  ``accumulate=True``, which sorts the indices first).  Bilinear and B-spline reads, levels of
  their own size across and down, no detail level: what the default preset gives any picture
  larger than 256 px a side.
* :func:`siren_peer`: a SIREN with ironlearn's SIREN's arrays.
* :func:`hashgrid_stepper` trains the peer on random whole pixels of a picture kept on the device,
  with Adam on ironlearn's warm-up cosine schedule, eager or under ``torch.compile``;
  :func:`clock` times each step with CUDA events (``perf_counter`` on the CPU) for
  ``common.time_steps``.

    python benchmarks/torch_peer.py [--device cuda] [--size 4096x3072] [--batch 65536] [--compile]
"""

from __future__ import annotations

import argparse
import json
import tempfile

import numpy as np
import torch
from common import Clock, job_for, pyramid, time_steps, wall_clock

from ironlearn.backend import to_host
from ironlearn.nn import HashGrid, Linear, ReLU, Sigmoid, Sine
from ironlearn.optim import warmup_cosine

_HASH_PRIME = 2654435761  # ironlearn's second hash prime (the first is 1)


def _bspline(t):
    """The cubic B-spline's weights at offsets -1, 0, 1, 2 (as ironlearn's ``_bspline_weights``)."""
    s = 1 - t
    return s * s * s / 6, (3 * t ** 3 - 6 * t * t + 4) / 6, (-3 * t ** 3 + 3 * t * t + 3 * t + 1) / 6, t ** 3 / 6


_READS = {"linear": ((0, 1), lambda t: (1 - t, t)), "bspline": ((-1, 0, 1, 2), _bspline)}


class HashGridPeer(torch.nn.Module):
    """``grid``'s encoding in PyTorch: one table of every level's rows, read bilinearly or by a
    cubic B-spline, each level with its own cells across and down."""

    def __init__(self, grid: HashGrid):
        super().__init__()
        if grid.detail:
            raise NotImplementedError("the PyTorch peer reads hash-grid levels without a detail level only")
        self.table = torch.nn.Parameter(torch.from_numpy(np.array(to_host(grid.params["table"]), np.float32)))
        self.features, self.levels = grid.features, grid.levels
        self.offsets_along, self.weights_along = _READS[grid.interpolation]
        self.shift = 0.5 if grid.centred else 0.0
        cells = [[x, y] for x, y in zip(grid.resolutions, grid.resolutions_y)]
        lasts = [[x - 1, y - 1] for x, y in zip(grid.sides, grid.sides_y)]
        for name, values, dtype in (("resolutions", cells, torch.float32), ("last", lasts, torch.float32),
                                    ("last_index", lasts, torch.int64), ("sides", grid.sides, torch.int64),
                                    ("sizes", grid.sizes, torch.int64), ("offsets", list(grid.offsets), torch.int64),
                                    ("hashed", grid.hashed, torch.bool)):
            self.register_buffer(name, torch.tensor(values, dtype=dtype), persistent=False)

    def forward(self, x):
        n = x.shape[0]
        unit = (x + 1) * 0.5  # (n, 2)
        position = unit[:, None, :] * self.resolutions[None] - self.shift  # (n, L, 2)
        last = self.last[None]
        position = torch.minimum(position.clamp(min=0), last)
        corner = torch.minimum(position.floor(), (last - 1).clamp(min=0))
        fraction = position - corner
        corner = corner.long()
        along_x = self.weights_along(fraction[..., 0])
        along_y = self.weights_along(fraction[..., 1])
        indices, weights = [], []
        for j, dy in enumerate(self.offsets_along):  # x varies fastest, as in ironlearn
            iy = (corner[..., 1] + dy).clamp(min=0)
            iy = torch.minimum(iy, self.last_index[:, 1])
            for i, dx in enumerate(self.offsets_along):
                ix = torch.minimum((corner[..., 0] + dx).clamp(min=0), self.last_index[:, 0])
                hashed = (ix ^ (iy * _HASH_PRIME)) & (self.sizes - 1)
                indices.append(torch.where(self.hashed, hashed, iy * self.sides + ix) + self.offsets)
                weights.append(along_x[i] * along_y[j])
        taps = len(indices)
        index = torch.stack(indices)  # (taps, n, L)
        vertices = self.table.index_select(0, index.reshape(-1)).view(taps, n, self.levels, self.features)
        return (vertices * torch.stack(weights)[..., None]).sum(0).reshape(n, -1)


def _linear(layer: Linear) -> torch.nn.Linear:
    weight, bias = (np.array(to_host(layer.params[k]), np.float32) for k in ("weight", "bias"))
    peer = torch.nn.Linear(*weight.shape)
    with torch.no_grad():
        peer.weight.copy_(torch.from_numpy(weight.T.copy()))
        peer.bias.copy_(torch.from_numpy(bias))
    return peer


class _Sine(torch.nn.Module):
    def __init__(self, w0: float):
        super().__init__()
        self.w0 = w0

    def forward(self, z):
        return torch.sin(self.w0 * z)


def peer_of(model) -> torch.nn.Sequential:
    """The PyTorch twin of an ironlearn Sequential of HashGrid, Linear, ReLU, Sine and Sigmoid layers,
    starting from the same arrays."""
    layers = []
    for layer in model.layers:
        if isinstance(layer, HashGrid):
            layers.append(HashGridPeer(layer))
        elif isinstance(layer, Linear):
            layers.append(_linear(layer))
        elif isinstance(layer, ReLU):
            layers.append(torch.nn.ReLU())
        elif isinstance(layer, Sine):
            layers.append(_Sine(layer.w0))
        elif isinstance(layer, Sigmoid):
            layers.append(torch.nn.Sigmoid())
        else:
            raise NotImplementedError(f"no PyTorch peer for {type(layer).__name__}")
    return torch.nn.Sequential(*layers)


siren_peer = peer_of


# -- timing ----------------------------------------------------------------------------------------
def clock(device: str) -> Clock:
    """CUDA events on a GPU (no sync until read), the wall clock on the CPU: for common.time_steps."""
    if device != "cuda":
        return wall_clock()

    def mark():
        event = torch.cuda.Event(enable_timing=True)
        event.record()
        return event

    return Clock(torch.cuda.synchronize, mark, lambda a, b: a.elapsed_time(b))


def hashgrid_stepper(model, pixels, width: int, height: int, batch: int, total_steps: int, device: str,
                     compile: bool = False, lr: float = 2e-2, lr_min: float = 2e-4, seed: int = 0):
    """A ``step()`` that trains ``peer_of(model)`` on ``batch`` random whole pixels of ``pixels``
    (a ``(height * width, channels)`` uint8 tensor on ``device``), Adam on the warm-up cosine
    schedule of ``total_steps`` that ``ironlearn fit`` uses."""
    peer = peer_of(model).to(device)
    forward = torch.compile(peer) if compile else peer
    optimizer = torch.optim.Adam(peer.parameters(), lr=lr, fused=device == "cuda")
    schedule = warmup_cosine(lr, lr_min, total_steps)
    generator = torch.Generator(device=device).manual_seed(seed)
    count = [0]

    def step():
        index = torch.randint(0, width * height, (batch,), generator=generator, device=device)
        rows, cols = index // width, index % width
        x = torch.stack([(2 * cols + 1) / width - 1, (2 * rows + 1) / height - 1], dim=1).float()
        y = pixels.index_select(0, index).float() / 255
        loss = torch.nn.functional.mse_loss(forward(x), y)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        for group in optimizer.param_groups:
            group["lr"] = schedule(min(count[0], total_steps - 1))
        optimizer.step()
        count[0] += 1

    return step


def full_batch_stepper(model, x, y, device: str, lr: float = 1e-4, compile: bool = False):
    """A ``step()`` that trains ``peer_of(model)`` on the whole of ``x``, ``y`` (NumPy arrays),
    Adam at a constant rate: the SIREN benchmark."""
    peer = peer_of(model).to(device)
    forward = torch.compile(peer) if compile else peer
    optimizer = torch.optim.Adam(peer.parameters(), lr=lr)
    tx, ty = torch.from_numpy(x).to(device), torch.from_numpy(y).to(device)

    def step():
        optimizer.zero_grad(set_to_none=True)
        torch.nn.functional.mse_loss(forward(tx), ty).backward()
        optimizer.step()

    return step


def versions() -> dict:
    info = {"torch": torch.__version__, "torch_cuda": torch.version.cuda, "cuda_available": torch.cuda.is_available()}
    if torch.cuda.is_available():
        info["gpu"] = torch.cuda.get_device_name(0)
    return info


def main():
    from ironlearn.backend import Backend
    from ironlearn.image.io import Picture

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--size", default="4096x3072")
    parser.add_argument("--batch", type=int, default=1 << 16)
    parser.add_argument("--warmup", type=int, default=50)
    parser.add_argument("--steps", type=int, default=500)
    parser.add_argument("--compile", action="store_true")
    args = parser.parse_args()
    width, height = (int(v) for v in args.size.split("x"))
    blank = Picture(np.zeros((height, width, 3), np.uint8), "rgb", "peer")
    with tempfile.TemporaryDirectory(prefix="ironlearn-peer-") as folder:  # the pyramid fit builds, on the host
        job = job_for(blank, Backend("cpu"), folder, batch_size=args.batch, steps=args.warmup + args.steps + 1,
                      **pyramid(width, height))
    pixels = torch.randint(0, 256, (width * height, 3), dtype=torch.uint8, device=args.device)
    step = hashgrid_stepper(job.trainer.model, pixels, width, height, args.batch, job.plan.steps, args.device,
                            args.compile)
    print(json.dumps({**versions(), "model_options": job.plan.model_options,
                      **time_steps(step, clock(args.device), args.warmup, args.steps)}))


if __name__ == "__main__":
    main()
