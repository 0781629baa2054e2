"""ironlearn: a neural-network library from scratch on NumPy (and CuPy) whose
flagship job is learning an image as a function ``(x, y) -> pixel``.

The short way in (docs/api.md)::

    run = ironlearn.fit("photo.png", out="runs/photo", steps=300)   # as `ironlearn fit` does
    big = ironlearn.render(run, scale=2)                              # (2H, 2W, C) float32 in [0, 1]
    again = ironlearn.load("runs/photo")                              # a run folder, model or .ilc file
    result = ironlearn.compress("photo.png", "photo.ilc", bpp=0.5)    # a small file, redrawn at any size

The library underneath (docs/tutorial.md): networks (``mlp``, ``siren``, ``hashgrid``, ...), the
optimizers ``SGD`` and ``Adam`` with their schedules, ``Trainer``, checkpoints, and ``Backend``,
the one seam between NumPy and CuPy.
"""

from .api import Run, compress, decompress, fit, load, render
from .backend import Backend, BackendError, get_backend
from .nn import FourierFeatures, HashGrid, Sequential, classic, fourier, hashgrid, mlp, siren
from .optim import SGD, Adam, constant, cosine, warmup_cosine
from .train import Trainer, load_checkpoint, save_checkpoint
from .version import __version__

__all__ = ["Adam", "Run", "compress", "decompress", "fit", "load", "render", "Backend", "BackendError", "FourierFeatures", "HashGrid", "SGD", "Sequential", "Trainer",
           "classic", "constant", "cosine", "fourier", "get_backend", "hashgrid", "load_checkpoint", "mlp",
           "save_checkpoint", "siren", "warmup_cosine", "__version__"]
