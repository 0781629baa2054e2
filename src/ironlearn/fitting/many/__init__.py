"""Fit or compress many pictures at once, on this machine or a Ray cluster: ``ironlearn fit-many``
and ``ironlearn compress-many``, one engine under both.

* :mod:`.inputs`: files, folders and globs -> the pictures, each with its run folder's name;
* :mod:`.task`: one picture's job as a worker runs it (:class:`Task` -> :class:`Outcome`);
  :mod:`.fit_job` (a fit: what a run folder needs, skip, resume or fit anew) and
  :mod:`.compress_job` (an encode into ``DIR/<name>.ilc``) are the two jobs;
* :mod:`.local`: the local engine, worker processes with their share of BLAS threads
  (:mod:`.worker` is the process itself);
* :mod:`.remote`: the Ray engine, tasks that carry their files through the object store;
* :mod:`.summary`: ``summary.csv`` and the closing table;
* :mod:`.driver`: :func:`fit_many` and :func:`compress_many`, which string them together.
"""

from .compress_job import CompressOptions
from .driver import ManyInterrupted, compress_many, fit_many
from .inputs import Source, expand
from .summary import COLUMNS
from .task import Outcome, Task

__all__ = ["COLUMNS", "CompressOptions", "ManyInterrupted", "Outcome", "Source", "Task", "compress_many", "expand",
           "fit_many"]
