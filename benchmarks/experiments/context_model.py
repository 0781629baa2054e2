"""Experiment: what a learned context model (Cool-chic's ARM) would save on today's files.

    python benchmarks/experiments/context_model.py [--rates 0.25 0.5 1] [--variants mlp8-12 mlp8-above] [--seconds 10]
                                       [--out runs/context] [--cache /tmp/context-files]
    python benchmarks/experiments/context_model.py --built 1 2 4 [--sample 30000] [--learning-rate 0.03]
                                       [--weight-bits 6 8 10] [--rates 0.25 0.5]

``--built SECONDS...``: the codec's own context model instead (:mod:`ironlearn.codec.search.context`,
what ``compress`` fits), fitted to each file's pyramid for each of those seconds on one BLAS
thread (as ``compress`` runs it), and counted exactly: the file written with it against the same
pyramid written without, in bytes, as a share of the file ``compress`` made.

For each of sporco's four photographs (768x512, read from its wheel) and each rate, a file made
by ``compress_array`` (``--seconds`` an encode; kept in ``--cache``) is read back, and its frozen,
rounded latents are coded again in thought by a small network fitted to them with NumPy: for each
latent it reads decoded causal neighbours in the same grid, the coarser level's values around the
same place and today's log-scale for it (:mod:`ironlearn.codec.bitstream.entropy`'s, from the
header), and outputs the mean and log-scale of a Laplace; its loss is the bits of the integer
symbol, ``-log2(CDF(x + 1/2) - CDF(x - 1/2))``, capped at the range coder's 24.  One network a
file, shared by every grid, trained by Adam on a sample of the coded latents and counted on all.

Today's latent bits are the file's latents section (8 bits a byte); the learned bits are the sum
of the symbols' bits under the network, its weights rounded to :data:`WEIGHT_BITS` bits, plus
those weights at that many bits each and a byte for each tensor's and each input's power of two.  The latents are the
same, so is the distortion: the saving is pure rate.  Printed per picture and rate, with min,
median and max over the set, and written to ``--out``/results.json.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys
import tempfile
import time

import numpy as np

#: benchmarks/, for common.py; src/, for an ironlearn not installed.
BENCHMARKS = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path[0:0] = [BENCHMARKS, os.path.join(os.path.dirname(BENCHMARKS), "src")]

from common import add_set_arguments, machine, spread, sporco_photos, write_results  # noqa: E402

from ironlearn.backend import blas_threads  # noqa: E402
from ironlearn.codec import compress_array, read  # noqa: E402
from ironlearn.codec.bitstream import entropy  # noqa: E402
from ironlearn.codec.bitstream.sections import grids, read_header, write  # noqa: E402
from ironlearn.codec.search import context as built  # noqa: E402
from ironlearn.codec.search.context import symbol_bits  # noqa: E402

#: Each weight of the learned model rounded to this many bits, sign included (fixed-length, a
#: scale of two a tensor), and counted so; the bits of the latents are counted with the rounded weights.
WEIGHT_BITS = 10
#: Causal neighbours in the same grid, nearest first: (rows up, columns right).
ABOVE = ((-1, 0), (-1, -1), (-1, 1), (-2, 0), (-1, -2), (-1, 2), (-2, -1), (-2, 1), (-2, -2), (-2, 2))
LEFT = ((0, -1), (0, -2))
#: The coarser level's cells around a latent's parent.
PARENT = ((0, 0), (-1, 0), (1, 0), (0, -1), (0, 1))
#: name: (neighbours in the grid, parent cells, hidden width (0: linear)).
VARIANTS = {
    "linear4": (ABOVE[:3] + LEFT[:1], PARENT, 0),
    "mlp8-4": ((ABOVE[:3] + LEFT[:1]), PARENT, 8),
    "mlp8-8": (ABOVE[:6] + LEFT, PARENT, 8),
    "mlp8-12": (ABOVE + LEFT, PARENT, 8),
    "mlp8-8-noparent": (ABOVE[:6] + LEFT, (), 8),
    "mlp8-above": (ABOVE[:8], PARENT, 8),
    "mlp16-8": (ABOVE[:6] + LEFT, PARENT, 16),
}
SAMPLE, STEPS, RATE = 60000, 2000, 0.01



# The float network as the codec trained it when this study was made (it trains by a Trainer now).
def forward(layers, x):
    """The network's outputs for ``x`` in floats, as training takes them (the file's exact
    arithmetic is :func:`..bitstream.context.forward`), and each layer's input."""
    inputs = []
    for i, (w, b) in enumerate(layers):
        inputs.append(x)
        x = x @ w + b
        if i < len(layers) - 1:
            x = np.maximum(x, 0)
    return x, inputs


def backward(layers, inputs, grad):
    """Every weight's gradient ``[[dW, db]]`` from the outputs' ``grad`` and :func:`forward`'s inputs."""
    grads = []
    for i in reversed(range(len(layers))):
        grads.append([inputs[i].T @ grad, grad.sum(0)])
        grad = grad @ layers[i][0].T
        if i > 0:
            grad = grad * (inputs[i] > 0)
    return grads[::-1]


def file_for(rgb, name: str, bpp: float, seconds: float, cache: str) -> bytes:
    """The file ``compress_array`` makes of ``rgb`` at ``bpp``, made once and kept in ``cache``."""
    path = os.path.join(cache, f"{name}_{bpp}.bin")
    if not os.path.exists(path):
        os.makedirs(cache, exist_ok=True)
        with open(path + ".part", "wb") as file:
            file.write(compress_array(rgb, bpp=bpp, seconds=seconds).data)
        os.replace(path + ".part", path)
    with open(path, "rb") as file:
        return file.read()


def shifted(grid, di: int, dj: int) -> np.ndarray:
    """``grid`` read at ``(i + di, j + dj)`` for every cell, zeros outside."""
    h, w = grid.shape
    padded = np.pad(grid, 2)
    return padded[2 + di:2 + di + h, 2 + dj:2 + dj + w]


def grid_features(q, parent, model, offsets, parent_cells) -> np.ndarray:
    """Each latent's inputs ``(h * w, d)``: its neighbours' values and magnitudes, its parent's
    cells' values and magnitudes, and today's log-scale for it."""
    h, w = q.shape
    q = q.astype(np.float64)
    columns = [shifted(q, di, dj) for di, dj in offsets]
    if parent_cells:
        p = np.zeros((h // 2 + 1, w // 2 + 1)) if parent is None else parent.astype(np.float64)
        rows, cols = np.arange(h) // 2, np.arange(w) // 2
        columns += [shifted(p, di, dj)[rows][:, cols] for di, dj in parent_cells]
    values = np.stack(columns, -1).reshape(h * w, -1)
    today = model.log_scales()[entropy.classes(entropy.activity(q.astype(np.int64), parent))]
    return np.concatenate([values, np.abs(values), today.reshape(-1, 1)], 1)


def file_data(decoded, header, offsets, parent_cells):
    """Every coded latent of the file ``(n,)``, its inputs ``(n, d)`` and today's bits for it."""
    xs, ys = [], []
    for (_, _, q, parent), (_, a, slope, magnitude) in zip(grids(decoded.pyramid), coarse_first(header)):
        if magnitude:
            model = entropy.Model(a, slope)
            xs.append(grid_features(q, parent, model, offsets, parent_cells))
            ys.append(q.reshape(-1).astype(np.float64))
    x, y = np.concatenate(xs), np.concatenate(ys)
    return x, y, entropy.laplace_bits(y, x[:, -1])


def coarse_first(header) -> list:
    """The header's ``(step, a, slope, magnitude)`` of each grid (level-major) in the order
    :func:`~ironlearn.codec.bitstream.sections.grids` walks them, coarsest level first."""
    levels, channels = header.levels, header.channels
    return [header.grids[k * channels + c] for k in reversed(range(levels)) for c in range(channels)]


def init_net(d: int, hidden: int, rng) -> list:
    """A network's weights: ``[(W, b)]`` a layer, its output starting at mean 0, today's scale."""
    sizes = [d] + ([hidden, hidden] if hidden else []) + [2]
    layers = [[rng.normal(0, 1 / math.sqrt(m), (m, n)), np.zeros(n)] for m, n in zip(sizes, sizes[1:])]
    layers[-1][0][:] = 0
    return layers


def bits_of(layers, x, y, scale):
    """Bits of ``y`` under the network, inputs ``x`` (its last column today's log-scale)."""
    out, inputs = forward(layers, x / scale)
    bits, dm, ds = symbol_bits(y, out[:, 0], x[:, -1] + out[:, 1])
    return bits, out, inputs, np.stack([dm, ds], 1)


def importance_sample(today, rng) -> tuple[np.ndarray, np.ndarray]:
    """About :data:`SAMPLE` latents, each drawn with a chance that grows with today's bits for it
    (every costly one kept; a uniform sample held too few of them, and its fits came out worse
    on the whole file the longer they trained), and each one's weight, 1 / its chance."""
    chance = np.minimum(1.0, (today + 0.005) * SAMPLE / float((today + 0.005).sum()))
    pick = np.flatnonzero(rng.random(len(today)) < chance)
    return pick, 1 / chance[pick]


def train(x, y, today, hidden: int, rng) -> tuple[list, np.ndarray]:
    """The network fitted by Adam to an importance sample of ``(x, y)``, and its inputs' scale."""
    pick, weight = importance_sample(today, rng)
    xs, ys, weight = x[pick], y[pick], weight / len(y)
    scale = 2.0 ** np.ceil(np.log2(np.maximum(np.abs(xs).max(0), 1.0)))  # a byte each in the file
    layers = init_net(x.shape[1], hidden, rng)
    moments = [[(np.zeros_like(p), np.zeros_like(p)) for p in layer] for layer in layers]
    for step in range(1, STEPS + 1):
        rate = RATE * (1 + math.cos(math.pi * step / STEPS)) / 2  # a cosine to 0: the last steps settle
        bits, _, inputs, grad = bits_of(layers, xs, ys, scale)
        for layer, moment, g in zip(layers, moments, backward(layers, inputs, grad * weight[:, None])):
            for j in range(2):
                m, v = moment[j]
                m, v = 0.9 * m + 0.1 * g[j], 0.999 * v + 0.001 * g[j] ** 2
                moment[j] = (m, v)
                layer[j] -= rate * (m / (1 - 0.9 ** step)) / (np.sqrt(v / (1 - 0.999 ** step)) + 1e-8)
    return layers, scale


def rounded(layers) -> list:
    """``layers`` as a file would hold them: each tensor on a grid of ``2**e``, ``e`` its own,
    so that its largest weight takes :data:`WEIGHT_BITS` bits with its sign."""
    def on_grid(t):
        e = math.ceil(math.log2(max(float(np.abs(t).max()), 1e-12))) - (WEIGHT_BITS - 1)
        return np.round(t / 2.0 ** e) * 2.0 ** e
    return [[on_grid(w), on_grid(b)] for w, b in layers]


def measure(name: str, data: bytes, bpp: float, variant: str, seed: int = 0) -> dict:
    """One file's bits today and under ``variant``'s learned model."""
    header, decoded = read_header(data), read(data)
    offsets, parent_cells, hidden = VARIANTS[variant]
    x, y, today = file_data(decoded, header, offsets, parent_cells)
    layers, scale = train(x, y, today, hidden, np.random.default_rng(seed))
    layers = rounded(layers)
    learned = float(sum(bits_of(layers, x[i:i + 200000], y[i:i + 200000], scale)[0].sum()
                        for i in range(0, len(y), 200000)))
    weights = sum(w.size + b.size for w, b in layers)
    model_bits = weights * WEIGHT_BITS + 8 * (2 * len(layers) + len(scale))  # and a byte an exponent
    section, whole = 8 * len(header.sections[0]), 8 * len(data)
    saved = section - learned - model_bits
    return {"picture": name, "bpp_target": bpp, "variant": variant, "file_bits": whole,
            "latent_bits": section, "estimate_bits": round(float(today.sum())), "learned_bits": round(learned),
            "model_bits": model_bits, "weights": weights, "latents": len(y),
            "saved_of_latents": round(100 * saved / section, 2), "saved_of_file": round(100 * saved / whole, 2)}


def measure_built(name: str, data: bytes, bpp: float, seconds: float) -> dict:
    """One file's bytes saved by the codec's context model fitted for ``seconds``."""
    pyramid = read(data).pyramid
    started = time.perf_counter()
    with blas_threads(1):
        fitted = built.fit(pyramid, seconds)
    took = time.perf_counter() - started
    without = len(write(pyramid, None))
    learned = without if fitted is None else len(write(pyramid, None, fitted.context))
    return {"picture": name, "bpp_target": bpp, "variant": f"built {seconds:g} s", "fit_seconds": round(took, 2),
            "kept": fitted is not None, "grids": 0 if fitted is None else sum(fitted.context.learned),
            "estimated_saving_of_latents": 0.0 if fitted is None else round(100 * fitted.saving, 2),
            "saved_of_file": round(100 * (without - learned) / len(data), 2)}


def arguments():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    add_set_arguments(parser, "context", [0.25, 0.5, 1.0])
    parser.add_argument("--variants", nargs="+", default=["mlp8-12", "mlp8-above"], choices=sorted(VARIANTS))
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--cache", default=os.path.join(tempfile.gettempdir(), "context-files"))
    parser.add_argument("--built", nargs="+", type=float, metavar="SECONDS",
                        help="measure the codec's own context model, fitted for each of these seconds")
    parser.add_argument("--sample", type=int, default=built.SAMPLE)
    parser.add_argument("--learning-rate", type=float, default=built.LEARNING_RATE)
    parser.add_argument("--weight-bits", nargs="+", type=int, default=list(built.WEIGHT_BITS))
    return parser.parse_args()


def main() -> None:
    args = arguments()
    built.SAMPLE, built.LEARNING_RATE, built.WEIGHT_BITS = args.sample, args.learning_rate, tuple(args.weight_bits)
    variants = [f"built {seconds:g} s" for seconds in args.built] if args.built else args.variants
    rows = []
    print(f"# a learned context model on today's latents: {machine()}")
    for name, rgb in sporco_photos(args.wheels):
        for bpp in args.rates:
            data = file_for(rgb, name, bpp, args.seconds, args.cache)
            for variant, seconds in zip(variants, args.built or [None] * len(variants)):
                rows.append(measure(name, data, bpp, variant) if seconds is None
                            else measure_built(name, data, bpp, seconds))
                print(json.dumps(rows[-1]), flush=True)
    keys = ("estimated_saving_of_latents", "saved_of_file") if args.built else ("saved_of_latents", "saved_of_file")
    for bpp in args.rates:
        for variant in variants:
            found = [row for row in rows if row["bpp_target"] == bpp and row["variant"] == variant]
            for key in keys:
                print(f"{bpp} bpp, {variant}, {key}: {spread([row[key] for row in found], '%')}")
    write_results(args.out, rows)


if __name__ == "__main__":
    main()
