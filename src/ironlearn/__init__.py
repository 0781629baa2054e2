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

import importlib

from .version import __version__

#: Where each public name is defined.  They are imported on first use (PEP 562): ``import
#: ironlearn`` costs milliseconds, not the half second NumPy and the codec take, so the command
#: handles SIGTERM from its first moments.
_HOMES = {
    **dict.fromkeys(["CompressedFile", "Picture", "Run", "compress", "decompress", "fit", "load", "render"], "api"),
    **dict.fromkeys(["Backend", "BackendError", "get_backend"], "backend"),
    **dict.fromkeys(["FourierFeatures", "HashGrid", "Sequential", "classic", "fourier", "hashgrid", "mlp", "siren"],
                    "nn"),
    **dict.fromkeys(["SGD", "Adam", "constant", "cosine", "warmup_cosine"], "optim"),
    **dict.fromkeys(["Trainer", "load_checkpoint", "save_checkpoint"], "train"),
}

__all__ = [*_HOMES, "__version__"]


def __getattr__(name: str):
    """A public name, or a subpackage (``ironlearn.codec``), imported when first asked for."""
    if name in _HOMES:
        value = getattr(importlib.import_module(f".{_HOMES[name]}", __name__), name)
        globals()[name] = value
        return value
    try:
        return importlib.import_module(f".{name}", __name__)
    except ModuleNotFoundError as exc:
        if exc.name != f"{__name__}.{name}":
            raise  # a module that one of ours imports is missing: that is the error to see
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
