"""ironlearn: a neural-network library from scratch on NumPy (and CuPy) whose
flagship job is learning an image as a function ``(x, y) -> pixel``."""

from .backend import Backend, BackendError, get_backend
from .nn import Sequential, classic, mlp, siren
from .optim import SGD, Adam, constant, cosine
from .train import Trainer, load_checkpoint, save_checkpoint

__version__ = "0.1.0"

__all__ = ["Adam", "Backend", "BackendError", "SGD", "Sequential", "Trainer", "classic", "constant",
           "cosine", "get_backend", "load_checkpoint", "mlp", "save_checkpoint", "siren", "__version__"]
