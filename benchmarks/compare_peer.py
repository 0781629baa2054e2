"""Benchmark: compare's SIREN and Fourier MLP against the same setting in PyTorch (a peer only:
ironlearn never imports it).

    python benchmarks/compare_peer.py [--params 30000] [--steps 1500] [--size 256]

Each model is sized by ``fit --params``'s solver (:mod:`ironlearn.fitting.budget`) and built by
its preset; the PyTorch twin starts from the same arrays (``torch_peer.peer_of``; the Fourier
projection copied).  Both train on every pixel centre of scikit-image's camera (gray) and
astronaut (rgb) at ``--size``, full batch, with Adam on the preset's warm-up cosine for
``--steps``, and are scored over every pixel.  Prints each PSNR and the difference.
"""

from __future__ import annotations

import argparse

import numpy as np
import torch
from common import machine, skimage_picture
from torch_peer import peer_of

from ironlearn.fitting.budget import sized
from ironlearn.fitting.presets import PRESETS
from ironlearn.image.metrics import psnr
from ironlearn.nn import mse
from ironlearn.nn.fourier import FourierFeatures
from ironlearn.optim import Adam, warmup_cosine
from ironlearn.train import Trainer


class _FourierPeer(torch.nn.Module):
    def __init__(self, layer: FourierFeatures):
        super().__init__()
        self.register_buffer("projection", torch.from_numpy(np.array(layer.buffers["projection"])))

    def forward(self, x):
        z = x @ self.projection
        return torch.cat([torch.sin(z), torch.cos(z)], dim=1)


def twin(model) -> torch.nn.Sequential:
    """``peer_of(model)``, with a Fourier feature layer's twin in front when it has one."""
    first, rest = model.layers[0], model.layers[1:]
    if isinstance(first, FourierFeatures):
        body = peer_of(type(model)(*rest))
        return torch.nn.Sequential(_FourierPeer(first), *body)
    return peer_of(model)


def coordinates(width: int, height: int) -> np.ndarray:
    """Every pixel centre in [-1, 1] (y down), row by row, as ironlearn's fits read them."""
    ys, xs = np.mgrid[0:height, 0:width]
    return np.stack([(2 * xs + 1) / width - 1, (2 * ys + 1) / height - 1], -1).reshape(-1, 2).astype(np.float32)


def both(model_name: str, picture, params: int, steps: int) -> tuple[float, float, int]:
    preset = PRESETS[model_name]
    options = preset.resolve(sized(preset, {}, params, picture.width, picture.height, picture.mode, picture.channels),
                             picture.width, picture.height, picture.mode)
    model = preset.build(picture.channels, options, np.random.default_rng(0))
    x, y = coordinates(picture.width, picture.height), picture.pixels.reshape(-1, picture.channels)
    peer = twin(model)  # before training: the same starting arrays
    schedule = warmup_cosine(preset.lr, preset.lr_min, steps)
    Trainer(model, Adam(model.named_parameters(), lr=schedule), mse, inputs=x, targets=y, check_every=0).run(steps)
    ours = psnr(model.forward(x), y)
    optimizer = torch.optim.Adam(peer.parameters(), lr=preset.lr)
    tx, ty = torch.from_numpy(x), torch.from_numpy(np.ascontiguousarray(y))
    for step in range(steps):
        for group in optimizer.param_groups:
            group["lr"] = schedule(step)
        optimizer.zero_grad(set_to_none=True)
        torch.nn.functional.mse_loss(peer(tx), ty).backward()
        optimizer.step()
    with torch.no_grad():
        theirs = psnr(peer(tx).numpy(), y)
    return ours, theirs, model.num_parameters


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--params", type=int, default=30_000)
    parser.add_argument("--steps", type=int, default=1500)
    parser.add_argument("--size", type=int, default=256)
    args = parser.parse_args()
    torch.set_num_threads(2)
    print(f"{machine()}; torch {torch.__version__}; {args.params:,} parameters asked, {args.steps} full-batch steps")
    print(f"  {'picture':10s} {'model':8s} {'parameters':>10s} {'ironlearn dB':>12s} {'PyTorch dB':>10s} {'diff':>6s}")
    for name, mode in (("camera", "gray"), ("astronaut", "rgb")):
        picture = skimage_picture(name, args.size, mode)
        for model_name in ("siren", "fourier"):
            ours, theirs, count = both(model_name, picture, args.params, args.steps)
            print(f"  {name:10s} {model_name:8s} {count:10,d} {ours:12.2f} {theirs:10.2f} {ours - theirs:+6.2f}")


if __name__ == "__main__":
    main()
