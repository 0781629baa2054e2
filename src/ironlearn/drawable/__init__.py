"""One face over a picture that redraws: what ironlearn reads back, a fitted run or a file of
``ironlearn compress``.

:func:`open` is the one place that tells the two apart (a compressed file by its first bytes,
whatever its name) and finds a run's model file (its model.npz, else its checkpoint.npz).  It
returns a :class:`Run` or a :class:`CompressedFile` and refuses anything else in one line.  Both
tell their ``size`` (the picture's ``(width, height)``) and ``channels``.  A run carries its
network and what its run recorded; a compressed file carries its bytes and header, and decodes
only when asked (:attr:`CompressedFile.decoded`), so ``info`` reads a header alone.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field

from .. import codec
from .. import run_files as folder
from ..nn import Sequential
from ..train import CheckpointError, load_checkpoint
from ..train.checkpoint import IN_FEATURES

#: A run's model files, the final model first: a run still training has only its checkpoint.
MODEL_NAMES = (folder.MODEL, folder.CHECKPOINT)


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


def is_compressed(path) -> bool:
    """Whether the file :func:`locate` found is a compressed picture rather than a model."""
    return codec.is_compressed(path)


def is_run_model(path) -> bool:
    """Whether the model file ``path`` is a run folder's (named model.npz or checkpoint.npz)
    rather than a bare model file, whose folder is not its run's."""
    return os.path.basename(os.fspath(path)) in MODEL_NAMES


def open(source) -> Run | CompressedFile:  # noqa: A001 (the seam's one verb, as io.open)
    """The picture at ``source``: a :class:`CompressedFile` for a file of ``ironlearn compress``,
    else the :class:`Run` of a run folder or model file.

    Raises
    ------
    CheckpointError
        Nothing there, a folder without a model, or not a readable ironlearn model.
    codec.CodecError
        A compressed file that is damaged or of another format version (a ``ValueError``).
    """
    path = locate(source)
    if is_compressed(path):
        return CompressedFile.read(path)
    saved = load_checkpoint(path)
    in_a_run = is_run_model(path)
    return Run(model=saved.model, metrics=dict(saved.settings.get("metrics", {})), settings=dict(saved.settings),
               folder=os.path.dirname(os.path.abspath(path)) if in_a_run else None, path=path, step=saved.step,
               meta=saved.meta)


@dataclass(frozen=True)
class Run:
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

    def __repr__(self) -> str:  # the dicts in full took 1.5 kB, the metrics twice over
        shown = {"folder": self.folder, "size": self.size, "psnr_db": self.metrics.get("psnr_db"),
                 "steps": self.metrics.get("steps"), "parameters": self.model.num_parameters}
        return "Run(" + ", ".join(f"{k}={v!r}" for k, v in shown.items() if v is not None) + ")"

    @property
    def size(self) -> tuple[int, int] | None:
        """The training picture's ``(width, height)``, when recorded."""
        return tuple(self.settings["size"]) if "size" in self.settings else None

    @property
    def channels(self) -> int:
        """Channels the network draws: 1 (gray) or 3 (rgb)."""
        return Sequential.out_features(self.model.config(), IN_FEATURES)

    @property
    def paths(self) -> dict:
        """``{file name: path}`` of the run folder's outputs that exist."""
        if self.folder is None:
            return {}
        found = {name: os.path.join(self.folder, name) for name in (*folder.FILES, folder.VIEWER)}
        return {name: path for name, path in found.items() if os.path.isfile(path)}


@dataclass(frozen=True, eq=False)
class CompressedFile:
    """A file of ``ironlearn compress``: its ``path``, ``data`` (the bytes) and ``header``, read
    and checked; :attr:`decoded` decodes it, once, when first asked."""

    path: str
    data: bytes = field(repr=False)
    header: codec.Header = field(repr=False)

    @classmethod
    def read(cls, path) -> CompressedFile:
        data, header = codec.read_header_path(path)
        return cls(os.fspath(path), data, header)

    @property
    def size(self) -> tuple[int, int]:
        return self.header.width, self.header.height

    @property
    def channels(self) -> int:
        return self.header.channels

    @functools.cached_property
    def decoded(self) -> codec.Decoded:
        """The picture the file holds (its latent pyramid and MLP), drawn at any size."""
        try:
            return codec.read(self.data)
        except codec.CodecError as exc:
            raise codec.CodecError(f"{self.path}: {exc}") from None
