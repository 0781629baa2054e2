"""How ``ironlearn`` ends: :class:`ExitCode`, and :func:`run`, the one place that maps exceptions to exit
codes (each with one line on stderr), SIGTERM among them as :class:`~ironlearn.signals.Terminated`."""

from __future__ import annotations

import argparse
import enum
import signal

from ..backend import BackendError
from ..codec import CodecError
from ..errors import WordedError
from ..fitting import Interrupted, UsageError
from ..fitting.many import ManyInterrupted
from ..fitting.options import flag
from ..image.io import InputError
from ..signals import Terminated, terminate_cleanly
from ..train import CheckpointError, DivergenceError
from ..viewer import ViewerError
from .common import say


class ExitCode(enum.IntEnum):
    """What ``ironlearn`` exits with."""

    OK = 0
    FAILED = 1  # the work itself failed (training diverged); the last good checkpoint is kept
    USAGE = 2  # bad input: options, files, devices; nothing the user had was changed
    INTERRUPTED = 130  # Ctrl-C; a fit saved its checkpoint and printed how to resume
    TERMINATED = 143  # SIGTERM (preemption by Ray, Slurm, Kubernetes, timeout): as Ctrl-C, checkpoint saved


#: What to try when a command runs out of memory.
MEMORY_ADVICE = {
    "fit": "fit a smaller picture (--size), train on smaller batches (--batch-size) or a smaller model, "
           "or free memory",
    "render": "render a smaller --size, or free memory",
    "view": "free memory, or view a smaller model",
    "compress": "compress a smaller picture, or free memory",
    "decompress": "decompress to a smaller --size, or free memory",
    "info": "free memory",
}
MEMORY_ADVICE["fit-many"] = MEMORY_ADVICE["fit"] + "; or run fewer at once (--workers)"
MEMORY_ADVICE["compress-many"] = "run fewer at once (--workers), compress smaller pictures, or free memory"

#: The commands that write checkpoints (the others write one file each, atomically).
CHECKPOINTING = ("fit", "fit-many", "demo")


def run(args: argparse.Namespace) -> int:
    """Run the command ``args.func`` with SIGTERM raising :class:`Terminated`; what it raises becomes one
    line on stderr and the :class:`ExitCode` that says what kind of failure it was."""
    try:
        with terminate_cleanly():
            return args.func(args)
    except (InputError, UsageError, CheckpointError, BackendError, ViewerError, CodecError) as exc:
        # The library names an option by its Python name; the command names it by its flag.
        message = exc.worded(flag) if isinstance(exc, WordedError) else exc
        say(f"ironlearn {args.command}: error: {message}")
        return ExitCode.USAGE
    except (Interrupted, ManyInterrupted) as exc:
        say(exc.worded(flag) if isinstance(exc, WordedError) else str(exc))  # a resume's command line
        return ExitCode.TERMINATED if getattr(exc, "signal", None) == signal.SIGTERM else ExitCode.INTERRUPTED
    except DivergenceError as exc:
        say(f"ironlearn {args.command}: error: training diverged at step {exc.step}: loss {exc.loss:.4g} at "
            f"learning rate {exc.lr:.3g}; try a lower one, e.g. --lr {exc.lr / 10:.2g}; "
            "the last good checkpoint is kept")
        return ExitCode.FAILED
    except MemoryError:  # NumPy's says how much it wanted; the user needs to know what to change
        say(f"ironlearn {args.command}: error: out of memory; {MEMORY_ADVICE.get(args.command, MEMORY_ADVICE['fit'])} "
            "(files written before are intact)")
        return ExitCode.USAGE
    except OSError as exc:  # disk full, permissions, a folder vanished: no traceback, nothing half-written
        where = f"{exc.filename}: " if exc.filename else ""  # read or written: the error does not say which
        say(f"ironlearn {args.command}: error: {where}{exc.strerror or exc} (files written before are intact)")
        return ExitCode.USAGE
    except KeyboardInterrupt as exc:
        what = "stopped by SIGTERM" if isinstance(exc, Terminated) else "interrupted"
        # Training's own interrupt is Interrupted, above: this one came before its first step (a new
        # fit has written no checkpoint yet) or while the outputs were written.
        kept = "any checkpoint written before is kept" if args.command in CHECKPOINTING else \
            "a file it had not finished was not written (nothing half-written is left)"
        say(f"{what}; {kept}")
        return ExitCode.TERMINATED if isinstance(exc, Terminated) else ExitCode.INTERRUPTED
