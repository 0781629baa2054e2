"""The training loop, its callbacks and checkpoints."""

from .callbacks import Callback, Checkpointer, Every, History, Progress, Rollback
from .checkpoint import Checkpoint, CheckpointError
from .checkpoint import load as load_checkpoint
from .checkpoint import save as save_checkpoint
from .threads import ThreadPolicy
from .trainer import DivergenceError, Trainer

__all__ = ["Callback", "Checkpoint", "CheckpointError", "Checkpointer", "DivergenceError", "Every", "History",
           "Progress", "Rollback", "ThreadPolicy", "Trainer", "load_checkpoint", "save_checkpoint"]
