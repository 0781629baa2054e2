"""One face over a picture that redraws: what ironlearn reads back, a fitted run or a file of
``ironlearn compress``.

:func:`load` is the one place that tells the two apart (a compressed file by its first bytes,
whatever its name) and finds a run's model file (its model.npz, else its checkpoint.npz).  It
returns a :class:`Run` or a :class:`CompressedFile` and refuses anything else in one line.  Both
are a :class:`Picture`, so that who draws one never asks which it is (a test over the syntax tree
keeps every ``isinstance`` on the kinds in here and in the codec):

- ``size`` (the picture's ``(width, height)``), ``channels``, ``mode`` and ``path`` (the file read);
- ``draw_size(size, scale, view)``: the ``(width, height)`` a render at those arguments has
  (neither size nor scale: the picture's own size);
- ``bands(height, width, view, device)``: the picture drawn a band of rows at a time, as
  ``(first_row, pixels)`` (what :func:`~ironlearn.image.render.save_bands` writes), and
  ``redraw(...)``, the same gathered into one array;
- ``meta`` (what ``ironlearn info --json`` prints) and ``describe(name)`` (``ironlearn info``'s
  lines); ``page`` (where its page goes when no one names one).

A run carries its network and what its run recorded; a compressed file carries its bytes and
header, and decodes only when asked (:attr:`CompressedFile.decoded`), so ``info`` reads a header
alone.  What a page shows of each lives in the viewer, a floor above (:mod:`ironlearn.viewer.page`).
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field
from typing import Protocol

import numpy as np

from .. import codec
from .. import run_files as folder
from ..backend import get_backend
from ..image.render import bands as model_bands
from ..image.render import render_size
from ..nn import Sequential
from ..train import CheckpointError, load_checkpoint
from ..train.checkpoint import IN_FEATURES

#: A run's model files, the final model first: a run still training has only its checkpoint.
MODEL_NAMES = (folder.MODEL, folder.CHECKPOINT)
#: The page of a run's model when no one names one, in its folder.
RUN_PAGE = "viewer.html"


class Picture(Protocol):
    """What ironlearn draws, whichever kind it is (:class:`Run`, :class:`CompressedFile`)."""

    size: tuple[int, int] | None
    channels: int
    mode: str | None
    path: str | None
    meta: dict

    def draw_size(self, size=None, scale: float | None = None, view=None) -> tuple[int, int]:
        """The ``(width, height)`` of a render at ``size`` or ``scale`` of the region ``view``
        (:func:`~ironlearn.image.render.render_size`: neither is the picture's own size)."""

    def bands(self, height: int, width: int, view=None, device: str = "cpu", notify=None):
        """The picture (or ``view``) at ``height x width``, a band of rows at a time."""

    def describe(self, name: str) -> str:
        """``ironlearn info``'s lines."""

    @property
    def page(self) -> str:
        """Where the picture's page goes when no one names one."""

    def redraw(self, size=None, scale: float | None = None, view=None, device: str = "cpu") -> np.ndarray:
        """The picture at ``size``, ``scale`` or its own size (of ``view``), as one ``(H, W, C)``
        float32 array in [0, 1] on the host, gathered from :meth:`bands`."""
        width, height = self.draw_size(size, scale, view)
        out = np.empty((height, width, self.channels), np.float32)
        for top, pixels in self.bands(height, width, view, device=device):
            out[top:top + len(pixels)] = pixels
        return out


def locate(source) -> str:
    """The file ``source`` names: a run folder's model (its model.npz, else checkpoint.npz), or
    ``source`` itself when it is a regular file.  :class:`CheckpointError` otherwise."""
    source = os.fspath(source)
    if os.path.isdir(source):
        for name in MODEL_NAMES:
            path = os.path.join(source, name)
            if os.path.isfile(path):
                return path
        raise CheckpointError(f"{source} holds no model.npz or checkpoint.npz; give a run folder of "
                              "'ironlearn fit' or a model file")
    if not os.path.exists(source):
        raise CheckpointError(f"{source}: no such file or folder")
    if not os.path.isfile(source):  # a device or a pipe: reading it would never end, or hang
        raise CheckpointError(f"{source} is not a regular file (a device or pipe); give a run folder of "
                              "'ironlearn fit', a model file or a file 'ironlearn compress' wrote")
    return source


def load(source) -> Run | CompressedFile:
    """The picture at ``source``: a :class:`CompressedFile` for a file of ``ironlearn compress``
    (or its bytes), else the :class:`Run` of a run folder or model file.

    Raises
    ------
    CheckpointError
        Nothing there, a folder without a model, or not a readable ironlearn model.
    codec.CodecError
        A compressed file that is damaged or of another format version (a ``ValueError``).
    """
    if isinstance(source, (bytes, bytearray, memoryview)):
        return CompressedFile.of_bytes(bytes(source))
    path = locate(source)
    if codec.is_compressed(path):
        return CompressedFile.read(path)
    saved = load_checkpoint(path)
    in_a_run = os.path.basename(path) in MODEL_NAMES  # else a bare model file, whose folder is not its run's
    return Run(model=saved.model, metrics=dict(saved.settings.get("metrics", {})), settings=dict(saved.settings),
               folder=os.path.dirname(os.path.abspath(path)) if in_a_run else None, path=path, step=saved.step,
               meta=saved.meta)


def load_compressed(source) -> CompressedFile:
    """The file of ``ironlearn compress`` at ``source`` (a path, or its bytes); one
    :class:`codec.CodecError` for anything else."""
    if isinstance(source, (bytes, bytearray, memoryview)):
        return CompressedFile.of_bytes(bytes(source))
    return CompressedFile.read(source)


def picture(source) -> Picture:
    """``source`` as a :class:`Picture`: itself when it is one; a bare
    :class:`~ironlearn.nn.Sequential` as a :class:`Run` that knows no size; else :func:`load`'s.
    ``TypeError`` for anything else."""
    if isinstance(source, (Run, CompressedFile)):
        return source
    if isinstance(source, Sequential):
        return Run(model=source)
    if isinstance(source, (str, os.PathLike, bytes, bytearray, memoryview)):
        return load(source)
    raise TypeError(f"ironlearn draws a Run, a compressed file, a Sequential, a path or a compressed file's bytes, "
                    f"not {type(source).__name__}")


@dataclass(frozen=True)
class Run(Picture):
    """A fitted model with what its run recorded.

    Attributes
    ----------
    model : Sequential
        The network, on the CPU.
    metrics : dict
        What ``metrics.json`` holds (``psnr_db``, ``steps``, ``seconds``, ...); empty for a
        checkpoint saved mid-run.
    settings : dict
        The run's settings (picture, size, mode, model options, ...).
    folder : str or None
        The run folder, when the model came from one.
    path : str or None
        The model file it was read from.
    step : int
        The steps it was trained.
    meta : dict
        Everything its file records (what ``ironlearn info --json`` prints).
    """

    model: Sequential
    metrics: dict = field(default_factory=dict, repr=False)
    settings: dict = field(default_factory=dict, repr=False)
    folder: str | None = None
    path: str | None = field(default=None, repr=False)
    step: int = field(default=0, repr=False)
    meta: dict = field(default_factory=dict, repr=False)

    def __repr__(self) -> str:  # the dicts in full ran to screenfuls, the metrics twice over
        shown = {"folder": self.folder, "size": self.size, "psnr_db": self.metrics.get("psnr_db"),
                 "steps": self.metrics.get("steps"), "parameters": self.model.num_parameters}
        return "Run(" + ", ".join(f"{k}={v!r}" for k, v in shown.items() if v is not None) + ")"

    @property
    def size(self) -> tuple[int, int] | None:
        """The training picture's ``(width, height)``, when recorded."""
        return tuple(self.settings["size"]) if "size" in self.settings else None

    @property
    def mode(self) -> str | None:
        """The training picture's mode (``gray``, ``rgb``, ``binary``), when recorded."""
        return self.settings.get("mode")

    @property
    def channels(self) -> int:
        """Channels the network draws: 1 (gray) or 3 (rgb)."""
        return Sequential.out_features(self.model.config(), IN_FEATURES)

    def draw_size(self, size=None, scale: float | None = None, view=None) -> tuple[int, int]:
        """The ``(width, height)`` of a render at ``size`` or ``scale`` (neither: the training
        size) of the region ``view`` (:func:`~ironlearn.image.render.render_size`)."""
        return render_size(self.size, size, scale, view)

    def bands(self, height: int, width: int, view=None, device: str = "cpu", notify=None):
        """The network's picture (or ``view``) at ``height x width`` on ``device`` (``"auto"``:
        the GPU when CuPy sees one, said on ``notify``), a band of rows at a time."""
        backend = get_backend(device, notify=notify)
        return model_bands(self.model.to(backend), width, height, backend, view=view)

    def describe(self, name: str) -> str:
        """``ironlearn info``'s lines: the layers, parameters, steps, training time, picture and PSNR."""
        settings = self.settings
        # Only numbers are formatted as such: the loader checks the metrics are a mapping, not what they hold.
        found = {k: v for k, v in settings.get("metrics", {}).items() if isinstance(v, (int, float))}
        lines = [name, repr(self.model), f"parameters: {self.model.num_parameters:,}", f"steps: {self.step:,}"]
        if "train_seconds" in settings:
            lines.append(f"training time: {settings['train_seconds']:.1f} s")
        if settings.get("model"):
            lines.append(f"preset: {settings['model']} {settings.get('model_options', {})}")
        if settings.get("size"):
            lines.append(f"trained on: {settings.get('input')} ({settings['size'][0]}x{settings['size'][1]} "
                         f"{settings.get('mode')}) on {settings.get('device')}")
        if "psnr_db" in found:
            lines.append(f"PSNR: {found['psnr_db']:.2f} dB" +
                         (f", accuracy {found['accuracy']:.2%}" if "accuracy" in found else ""))
        memory = {k: v for k, v in found.items() if k.startswith("pool_")}
        if memory:
            lines.append("GPU memory pool: " + ", ".join(f"{k} {v / 2**20:.1f} MiB" for k, v in memory.items()))
        return "\n".join(lines)

    @property
    def page(self) -> str:
        """viewer.html beside the model (in its run folder, for a run's)."""
        return os.path.join(os.path.dirname(os.path.abspath(self.path or ".")), RUN_PAGE)

    @property
    def paths(self) -> dict:
        """``{file name: path}`` of the run folder's outputs that exist."""
        if self.folder is None:
            return {}
        found = {name: os.path.join(self.folder, name) for name in (*folder.FILES, folder.VIEWER)}
        return {name: path for name, path in found.items() if os.path.isfile(path)}


@dataclass(frozen=True, eq=False)
class CompressedFile(Picture):
    """A file of ``ironlearn compress``: its ``path`` (None for bytes read from elsewhere),
    ``data`` (the bytes) and ``header``, read and checked; :attr:`decoded` decodes it, once, when
    first asked."""

    path: str | None
    data: bytes = field(repr=False)
    header: codec.Header = field(repr=False)

    @classmethod
    def read(cls, path) -> CompressedFile:
        data, header = codec.read_header_path(path)
        return cls(os.fspath(path), data, header)

    @classmethod
    def of_bytes(cls, data: bytes) -> CompressedFile:
        return cls(None, data, codec.read_header(data))

    @property
    def size(self) -> tuple[int, int]:
        return self.header.width, self.header.height

    @property
    def channels(self) -> int:
        return self.header.channels

    @property
    def mode(self) -> str:
        return self.header.mode

    @functools.cached_property
    def decoded(self) -> codec.Decoded:
        """The picture the file holds (its latent pyramid and MLP), drawn at any size."""
        try:
            return codec.read(self.data)
        except codec.CodecError as exc:
            raise codec.CodecError(f"{self.path}: {exc}" if self.path else str(exc)) from None

    def draw_size(self, size=None, scale: float | None = None, view=None) -> tuple[int, int]:
        """As :meth:`Run.draw_size` (neither size nor scale: the file's own size); a ``view``
        that leaves the picture is refused first."""
        self.decoded.region(view)  # one line, worded with the caller's name for it
        return render_size(self.size, size, scale, view)

    def bands(self, height: int, width: int, view=None, device: str = "cpu", notify=None):
        """As :meth:`Run.bands`, on the CPU whatever ``device`` (the codec's decoder is NumPy's)."""
        return self.decoded.bands(height, width, view)

    @property
    def page(self) -> str:
        """NAME.html beside NAME.ilc, so that two pictures in one folder get two pages."""
        stem, suffix = os.path.splitext(os.path.abspath(self.path or "picture.ilc"))
        return stem + (".html" if suffix.lower() not in (".html", ".htm") else ".viewer.html")

    @property
    def meta(self) -> dict:
        """The format, size, rate and sections, from the header alone."""
        data, header = self.data, self.header
        latents_bytes, weights_bytes = (len(section) for section in header.sections)
        return {"format": "ironlearn compressed picture", "version": header.version,
                "size": [header.width, header.height], "mode": header.mode, "bytes": len(data),
                "bpp": 8 * len(data) / (header.width * header.height),
                "latent_levels": [list(shape) for shape in header.grid_shapes],
                "filtered_levels": header.filtered_levels, "mlp": bool(header.depth),
                "context_model": {"width": header.context,
                                  "grids": sum(flag for flag, in header.context_grids)} if header.context else None,
                "parameters": header.num_parameters,
                "section_bytes": {"latents": latents_bytes, "weights": weights_bytes}}

    def describe(self, name: str) -> str:
        """``ironlearn info``'s lines: the picture, size and rate, the levels and the sections."""
        header, meta = self.header, self.meta
        shapes, filtered = header.grid_shapes, header.filtered_levels
        sections = meta["section_bytes"]
        return "\n".join([name, f"compressed picture: {header.width}x{header.height} {header.mode}, "
                                f"{meta['bytes']:,} bytes ({meta['bpp']:.4f} bpp)",
                          f"latent levels: {len(shapes)} of {header.channels} grid(s) each, "
                          f"{', '.join(f'{h}x{w}' for h, w in shapes)}",
                          "synthesis: the levels" + (f" (filtered: {', '.join(map(str, filtered))})" if filtered else "")
                          + " summed" + (f" and an MLP's correction ({header.depth} layers of {header.hidden})"
                                         if header.depth else ""),
                          "latents coded under " + (f"a learned context model (width {header.context}) in "
                                                    f"{meta['context_model']['grids']} of {len(header.grids)} grids, "
                                                    "their two-number model in the others" if header.context
                                                    else "each grid's two-number model"),
                          f"parameters: {meta['parameters']:,}, coded in {sections['latents']:,} bytes of latents and "
                          f"{sections['weights']:,} of weights"
                          + (", filters and the context model" if header.context else " and filters")])
