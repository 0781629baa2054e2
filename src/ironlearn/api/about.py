"""What a model, checkpoint or compressed file holds (``ironlearn info``), as data or as lines to
read; a compressed file's from its header alone, so the work stays in proportion to its size."""

from __future__ import annotations

import os

from .. import drawable
from .arguments import checked


@checked
def info(source) -> dict:
    """The metadata of the run folder, model file or compressed file at ``source``: everything a
    model's file records, or a compressed file's format, size, rate and sections (what ``ironlearn
    info --json`` prints)."""
    return drawable.load(source).meta


@checked
def describe(source) -> str:
    """What ``source`` holds, in the lines ``ironlearn info`` prints: a model's layers,
    parameters, steps, training time, picture and PSNR, or a compressed file's picture, size and
    rate."""
    return drawable.load(source).describe(os.fspath(source))
