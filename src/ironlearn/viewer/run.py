"""The run folder around a model: what the page shows beside it (which file holds the model is
:func:`ironlearn.drawable.locate`'s to say).

Everything is optional except the model: a model file saved by the library has
no run folder, and a run still training has a checkpoint but no ``model.npz``.
What is missing is left out of the page, with a note when the user would
otherwise wonder (the training picture moved, a time-lapse too large to embed).

A model file may come from someone else, and the page may be shared or served,
so nothing local goes into it on the model's word alone.  The model is a run's
when its file is named ``model.npz`` or ``checkpoint.npz`` (what ``ironlearn
fit`` writes); any other file is a *bare* model file, and nothing around it is
read.  The training picture its settings name is embedded only when its pixels
have the fingerprint the run saved, and for a bare model file only on request.
"""

from __future__ import annotations

import base64
import csv
import io
import json
import os
from dataclasses import dataclass, field

import numpy as np
from PIL import Image

from .. import run_files as run_folder
from ..image.fingerprint import fingerprint
from ..image.io import InputError, load_picture, scaled_size, to_uint8

MAX_ORIGINAL_SIDE = 2048  # the comparison picture is downscaled beyond this (it is drawn at the same pan/zoom anyway)
MAX_EMBEDDED_BYTES = 32 << 20  # a time-lapse or plot larger than this stays out of the page
#: The most pixels a run's training picture is enlarged to, to check it is the one fitted: past its
#: own size, a size read from the model (which anyone may edit) must not cost more than this.
MAX_ENLARGED = 1 << 22


@dataclass
class RunExtras:
    """What a run folder adds to the page; ``None`` where it has nothing."""

    original: str | None = None  # PNG data URL of the training picture
    timelapse: str | None = None  # GIF data URL
    loss_plot: str | None = None  # PNG data URL
    history: list | None = None  # [step, loss, psnr] rows, when there is no plot to show
    metrics: dict = field(default_factory=dict)
    notes: list = field(default_factory=list)


def data_url(mime: str, data: bytes) -> str:
    return f"data:{mime};base64,{base64.b64encode(data).decode('ascii')}"


def collect_extras(folder: str | None, settings: dict, max_original_side: int = MAX_ORIGINAL_SIDE, *,
                   with_picture: bool = True) -> RunExtras:
    """What the page shows beside the model.

    Parameters
    ----------
    folder : str or None
        The run folder: its time-lapse, plot, history and metrics are read.  None for a bare
        model file, whose folder is not its run's.
    settings : dict
        The model's saved settings.
    max_original_side : int
        The training picture is downscaled to at most this many pixels a side.
    with_picture : bool
        Embed the training picture ``settings["input"]``, if its fingerprint matches
        ``settings["fingerprint"]``.
    """
    extras = RunExtras(metrics=dict(settings.get("metrics", {})))
    extras.original = _original(settings, max_original_side, extras.notes, with_picture)
    if folder is None:
        return extras
    extras.timelapse = _embedded(os.path.join(folder, run_folder.TIMELAPSE), "image/gif", extras.notes)
    extras.loss_plot = _embedded(os.path.join(folder, run_folder.LOSS_PLOT), "image/png", extras.notes)
    if extras.loss_plot is None:
        extras.history = _history(os.path.join(folder, run_folder.HISTORY))
    metrics_path = os.path.join(folder, run_folder.METRICS)
    if os.path.isfile(metrics_path):
        try:
            with open(metrics_path, encoding="utf-8") as file:
                found = json.load(file)
            # The model's own metrics win: metrics.json is written after model.npz, so a fit killed
            # between the two leaves an older run's there (the page showed its step and PSNR).
            if isinstance(found, dict) and (not extras.metrics or found.get("steps") == extras.metrics.get("steps")):
                extras.metrics = {**found, **extras.metrics}
            elif isinstance(found, dict):
                extras.notes.append("metrics.json is of another step than the model (a fit stopped while writing "
                                    "its outputs; --resume writes them again): the page shows the model's own")
        except (OSError, ValueError):
            extras.notes.append("metrics.json could not be read")
    return extras


def _original(settings: dict, max_side: int, notes: list, wanted: bool) -> str | None:
    path, size = settings.get("input"), settings.get("size")
    if not path or not size:
        return None
    name = os.path.basename(path)
    if not wanted:
        notes.append(f"the training picture {name} is left out (ironlearn view --with-picture embeds it)")
        return None
    if not settings.get("fingerprint"):  # saved by the library alone, or edited
        notes.append(f"the training picture {name} is left out: the model does not record "
                     "which picture it was fitted on")
        return None
    try:
        # As the network saw it: resized to the training size and in the training mode.
        picture = load_picture(path, mode=settings.get("mode"), size=tuple(size), max_enlarged=MAX_ENLARGED)
        fitted_on = fingerprint(picture) == settings["fingerprint"]
    except (InputError, OSError, ValueError, TypeError):  # TypeError: a size that is not two numbers
        fitted_on = False
    if not fitted_on:
        # One note whether the file is missing, unreadable or another picture: a page that
        # someone shares must not tell whether a file exists at a path the model chose.
        notes.append(f"the training picture {name} is not where the run read it, or is not the picture "
                     "it was fitted on, so there is no comparison")
        return None
    image = Image.fromarray(to_uint8(picture.pixels))
    target = scaled_size(*image.size, max_side, enlarge=False)
    if target != image.size:
        image = image.resize(target, Image.LANCZOS)
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return data_url("image/png", buffer.getvalue())


def _embedded(path: str, mime: str, notes: list) -> str | None:
    if not os.path.isfile(path):
        return None
    if os.path.getsize(path) > MAX_EMBEDDED_BYTES:
        notes.append(f"{os.path.basename(path)} is over {MAX_EMBEDDED_BYTES >> 20} MB and stays out of the page")
        return None
    with open(path, "rb") as file:
        return data_url(mime, file.read())


def _history(path: str) -> list | None:
    """``[[step, loss, psnr], ...]`` from history.csv, or None when there is none to read."""
    if not os.path.isfile(path):
        return None
    try:
        with open(path, newline="", encoding="utf-8") as file:
            rows = [[float(row["step"]), float(row["loss"]), float(row["psnr"])] for row in csv.DictReader(file)]
    except (OSError, KeyError, ValueError, TypeError):
        return None
    finite = [row for row in rows if np.isfinite(row).all()]
    return finite or None
