"""The short way in from Python: fit a picture, load what a fit saved, redraw it at any size.

These functions do what ``ironlearn fit``, the model files, ``ironlearn render`` and
``ironlearn compress`` do, and print nothing unless asked (``progress=True``)::

    run = ironlearn.fit("photo.png", out="runs/photo", steps=300)
    big = ironlearn.render(run, scale=2)          # (2H, 2W, C) float32 in [0, 1]
    again = ironlearn.load("runs/photo")           # a run folder, model.npz or checkpoint.npz
    small = ironlearn.load("photo.ilc")            # or a compressed picture: the same questions
    corner = ironlearn.render(small, size=512, view=(0, 0, 1, 1))

The layers, optimizers and trainer underneath are the library proper (``ironlearn.nn``,
``ironlearn.optim``, ``ironlearn.train``).
"""

from __future__ import annotations

import os

import numpy as np

from .. import drawable
from ..backend import DEVICES
from ..codec.search.encoder import DEFAULT_BPP
from ..drawable import CompressedFile, Picture, Run
from ..viewer.serve import check_port
from .about import describe, info
from .arguments import checked, checked_size, log_of, named_fit_options
from .compressing import compress
from .demo import DEMO_SECONDS, Demo, demo
from .drawing import decompress_file, render_file
from .live import fit_run
from .many import compare, compress_many, fit_many
from .pages import APP_PAGE, view, view_app
from .pixels import MODES, csv_to_picture, picture_to_csv

#: The public functions and what they take and give; each function checks its arguments at its entry
#: (:func:`~ironlearn.api.arguments.checked`), and tests/test_api.py tries each of them.
__all__ = ["APP_PAGE", "DEFAULT_BPP", "DEMO_SECONDS", "DEVICES", "MODES", "CompressedFile", "Demo", "Picture", "Run",
           "compare", "compress", "compress_many", "csv_to_picture", "decompress", "decompress_file", "describe", "demo", "fit",
           "fit_many", "fit_run", "info", "load", "picture_to_csv", "render", "render_file", "view", "view_app"]


@checked(port=check_port)
def fit(picture, out: str | os.PathLike | None = None, *, progress: bool = False, live: bool = False,
        port: int | None = None, open_browser: bool = True, **options) -> Run:
    """Fit a network to ``picture`` (an image file or pixel CSV), as ``ironlearn fit`` does.

    Parameters
    ----------
    picture : str or path
    out : str, optional
        The run folder (default ``runs/<picture name>``); the same rules as the command's apply
        (an empty folder or a run of its own, ``force=True`` to start over, ``resume=True``).
    progress : bool
        Print the command's progress and messages on stderr (default: print nothing).
    live : bool
        Show the fit learning on a page served on 127.0.0.1 at ``port`` (0 to 65535, 0 for any free
        one; default 8000, or a free one when taken), as ``ironlearn fit --live`` does: its URL is printed,
        and opened in a browser unless ``open_browser`` is False.  When the fit ends the page turns into
        the final model's (waiting until an open page has loaded it, at most 5 s); then the server stops.
    **options
        Any option of ``ironlearn fit`` by its Python name: ``steps``, ``time_budget``,
        ``model``, ``mode``, ``size``, ``lr``, ``seed``, ``device``, ``resume``, ``force``, ...,
        and the model's own (``width``, ``levels``, ``finest``, ...).

    Returns
    -------
    Run
        The fitted model, its metrics and its folder.

    Raises
    ------
    UsageError, InputError, CheckpointError, BackendError
        Bad options or files, with the command's one-line messages.
    """
    fit_options = named_fit_options("fit", picture, out, progress=progress, live=live, **options)
    fit_run(fit_options, log=log_of(progress), port=port, open_browser=open_browser)
    return load(fit_options.run_folder)


@checked
def load(path) -> Picture:
    """What ``path`` holds: a fitted model or a compressed picture, as a picture that redraws.

    Parameters
    ----------
    path : str, path or bytes
        A run folder (its model.npz, else its checkpoint), a model.npz or a checkpoint.npz; or a
        file of ``ironlearn compress`` (told apart by its first bytes, whatever its name), or
        its bytes.

    Returns
    -------
    Run or CompressedFile
        A model as a :class:`Run`; a compressed picture as a
        :class:`~ironlearn.drawable.CompressedFile` (its header read, its latents and MLP in
        ``.decoded`` when asked).  Either has its ``size``, ``channels``, ``meta`` and
        ``redraw(size, scale=..., view=...)``, and :func:`render` draws either.

    Raises
    ------
    CheckpointError
        Not a readable ironlearn model.
    CodecError
        A compressed file that is damaged or of another format version (a ``ValueError``).
    """
    return drawable.load(path)


@checked
def render(model, size=None, *, scale: float | None = None, view=None, device: str = "cpu") -> np.ndarray:
    """Redraw ``model`` (what :func:`load` returns, a bare :class:`~ironlearn.nn.Sequential`,
    or a path or compressed file's bytes that :func:`load` reads) as an array.

    Parameters
    ----------
    model : Run, CompressedFile, Sequential, str, path or bytes
    size : int or (int, int), optional
        N for the longest side (the training aspect kept), or ``(width, height)``.
    scale : float, optional
        Instead of ``size``: this many times the picture's size.  Neither means its own size; a
        bare :class:`~ironlearn.nn.Sequential` knows no size: give one.
    view : (x0, y0, x1, y1), optional
        Only this region of the [-1, 1] square (y grows downward), sized as the region's share of
        the training size; a compressed picture fills the square, so its view stays inside.
    device : {"cpu", "cuda", "auto"}
        Where a network runs; a compressed picture is drawn with NumPy on the CPU.

    Returns
    -------
    ndarray
        ``(height, width, channels)`` float32 in [0, 1] (1 = white), on the host.

    Raises
    ------
    ValueError
        No size (for a bare network), a size, scale or view the command would refuse, a size
        beyond the largest render, or a view that leaves a compressed picture.
    TypeError
        ``model`` is none of the above.
    """
    size = checked_size(size, scale, view)
    return drawable.picture(model).redraw(size, scale, view, device=device)


@checked
def decompress(source, size=None, *, scale: float | None = None, view=None) -> np.ndarray:
    """A compressed file (a path, or its bytes) redrawn at its own size, at ``size`` (N for the
    longest side, or ``(W, H)``) or at ``scale`` times it: ``(H, W, C)`` float32 in [0, 1].
    ``view`` ``(x0, y0, x1, y1)`` draws only that region of the [-1, 1] square the picture
    spans (y down), as :func:`render` does."""
    size = checked_size(size, scale, view)
    return drawable.load_compressed(source).redraw(size, scale, view)
