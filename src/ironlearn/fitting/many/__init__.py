"""Fit many pictures at once, on this machine or a Ray cluster: ``ironlearn fit-many``.

* :mod:`.inputs`: files, folders and globs -> the pictures, each with its run folder's name;
* :mod:`.task`: one picture's fit as a worker runs it (:class:`Task` -> :class:`Outcome`), and
  what a run folder needs (skip, resume or fit anew);
* :mod:`.local`: the local engine, worker processes with their share of BLAS threads
  (:mod:`.worker` is the process itself);
* :mod:`.remote`: the Ray engine, tasks that carry their files through the object store;
* :mod:`.summary`: ``summary.csv`` and the closing table;
* :mod:`.driver`: :func:`fit_many`, which strings them together.
"""

from .driver import ManyInterrupted, fit_many
from .inputs import Source, expand
from .summary import COLUMNS
from .task import Outcome, Task

__all__ = ["COLUMNS", "ManyInterrupted", "Outcome", "Source", "Task", "expand", "fit_many"]
