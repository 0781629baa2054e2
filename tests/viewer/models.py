"""Tiny models of every preset with pictures worth comparing, saved as ironlearn model files.

Freshly initialised networks draw almost flat pictures (a hash grid starts at
+-1e-4), which would let a wrong hash or a swapped axis pass a PSNR test.  So
the tables are filled with visible noise and the last layer is rescaled so the
output spans [0, 1] with little clipping: every pixel then depends on every
part of the evaluation.
"""

import numpy as np

from ironlearn.image.coords import pixel_grid
from ironlearn.nn import classic, fourier, hashgrid, mlp, siren
from ironlearn.train import save_checkpoint

# name -> (builder, output channels); sizes small enough for a software GPU and a JavaScript CPU path.
PRESETS = {
    # Levels of 4, 16 and 64 cells: the first dense (25 vertices <= 256 rows), the others hashed.
    "hashgrid": (lambda rng, c: hashgrid(2, c, levels=3, features=2, log2_table_size=8, coarsest=4, finest=64,
                                         width=16, depth=1, rng=rng), 3),
    # The same with its vertices on cell centres (4, 16 and 64 a side), as a one-channel thumbnail's.
    "hashgrid-centred": (lambda rng, c: hashgrid(2, c, levels=3, features=2, log2_table_size=8, coarsest=4,
                                                 finest=64, width=16, depth=1, centred=True, rng=rng), 1),
    # Read by B-spline (16 vertices a point), as a gray thumbnail's one dense level; hashed levels too,
    # and not square: 8x5 cells (dense) and 40x24 (hashed).
    "hashgrid-bspline": (lambda rng, c: hashgrid(2, c, levels=2, features=1, log2_table_size=8, coarsest=8,
                                                 finest=40, finest_y=24, width=16, depth=1, centred=True,
                                                 interpolation="bspline", rng=rng), 1),
    # A colour picture's past 256 px (here of 40x27 px): one dense level of three features, a vertex
    # per pixel, read by B-spline.
    "hashgrid-colour-spline": (lambda rng, c: hashgrid(2, c, levels=1, features=3, log2_table_size=11, coarsest=40,
                                                       finest=40, finest_y=27, width=16, depth=1, centred=True,
                                                       interpolation="bspline", rng=rng), 3),
    # A colour thumbnail's: a coarse pyramid on cell corners and a detail level read by B-spline.
    "hashgrid-detail": (lambda rng, c: hashgrid(2, c, levels=2, features=2, log2_table_size=8, coarsest=4,
                                                finest=12, width=16, depth=1, detail=30, rng=rng), 3),
    "siren": (lambda rng, c: siren(2, c, width=24, depth=2, w0=30.0, rng=rng), 1),
    "fourier": (lambda rng, c: fourier(2, c, frequencies=10, sigma=3.0, width=16, depth=1, rng=rng), 3),
    "mlp": (lambda rng, c: mlp(2, c, width=16, depth=2, rng=rng), 1),
    "classic": (lambda rng, c: classic(2, c, rng=rng), 1),
}


def make_model(name: str, seed: int = 0):
    build, channels = PRESETS[name]
    rng = np.random.default_rng(seed)
    model = build(rng, channels)
    for layer in model.layers:
        for name in ("table", "detail"):
            if name in layer.params:
                layer.params[name][...] = rng.uniform(-1, 1, layer.params[name].shape)
    _spread_output(model)
    return model


def _spread_output(model):
    """Rescale the last Linear layer: output mean 0.5, standard deviation 0.2 (classic: logits 0 and 1.2)."""
    squashed = type(model.layers[-1]).__name__ == "Sigmoid"
    out = pixel_grid(64, 64)
    for layer in model.layers[:-1] if squashed else model.layers:
        out = layer.forward(out)
    target_mean, target_std = (0.0, 1.2) if squashed else (0.5, 0.2)
    mean, std = out.mean(axis=0), out.std(axis=0) + 1e-6
    scale = (target_std / std).astype(np.float32)
    last = [layer for layer in model.layers if "weight" in layer.params][-1]
    last.params["weight"][...] *= scale
    last.params["bias"][...] = (last.params["bias"] - mean) * scale + target_mean


def save_model(path, name: str, size=(48, 32), seed: int = 0):
    """A model file of preset ``name`` as ``ironlearn render`` and ``ironlearn view`` read it."""
    model = make_model(name, seed)
    save_checkpoint(path, model, settings={"size": list(size), "model": name})
    return path
