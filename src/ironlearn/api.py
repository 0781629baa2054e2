"""The short way in from Python: fit a picture, load what a fit saved, redraw it at any size.

These functions do what ``ironlearn fit``, the model files, ``ironlearn render`` and
``ironlearn compress`` do, and print nothing unless asked (``progress=True``)::

    run = ironlearn.fit("photo.png", out="runs/photo", steps=300)
    big = ironlearn.render(run, scale=2)          # (2H, 2W, C) float32 in [0, 1]
    again = ironlearn.load("runs/photo")           # a run folder, model.npz or checkpoint.npz
    small = ironlearn.load("photo.ilc")            # or a compressed picture: a codec.Decoded
    corner = ironlearn.render(small, size=512, view=(0, 0, 1, 1))

The layers, optimizers and trainer underneath are the library proper (``ironlearn.nn``,
``ironlearn.optim``, ``ironlearn.train``).
"""

from __future__ import annotations

import dataclasses
import os

import numpy as np

from . import codec, drawable
from .backend import get_backend
from .checks import is_finite, is_whole
from .files import check_output, write_bytes
from .fitting import OPTIONS, FitOptions, Interrupted, UsageError
from .fitting import fit as fit_job
from .fitting.run import check_start
from .image.render import render as render_bands
from .image.render import render_size
from .drawable import Run
from .nn.model import Sequential
from .image.coords import check_view
from .image.io import load_picture
from .viewer.live import LiveServer
from .viewer.serve import announce, check_port

#: The names fit() takes: the command's options (FitOptions) and the model's (``width``, ...).
FIT_NAMES = ({f.name for f in dataclasses.fields(FitOptions)} - {"input", "out", "model_options", "quiet"}) | set(OPTIONS)
#: fit()'s on/off options: the command's flags (``resume``, ``force``, ``quiet``).
FIT_FLAGS = {f.name for f in dataclasses.fields(FitOptions) if f.type == "bool"}


def _check_flags(**flags) -> None:
    """TypeError for an on/off argument that is not a bool: ``force='False'`` is a true string, and
    replaced a run."""
    for name, value in flags.items():
        if not isinstance(value, (bool, np.bool_)):
            raise TypeError(f"{name} must be True or False (got {value!r})")


def _check_port(port, live: bool) -> None:
    """A port as ``--port`` is checked, and only for the live page, as the command takes it."""
    check_port(port)
    if port is not None and not live:
        raise UsageError("port is for the live page; add live=True, or drop port")


def fit(picture, out: str | None = None, *, progress: bool = False, live: bool = False, port: int | None = None,
        open_browser: bool = True, **options) -> Run:
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
    _check_flags(progress=progress, live=live, open_browser=open_browser, **{name: options[name] for name in FIT_FLAGS & set(options)})
    _check_port(port, live)
    model_options = {name: options.pop(name) for name in list(options) if name in OPTIONS}
    if isinstance(options.get("size"), list):
        options["size"] = tuple(options["size"])  # (W, H), as the command's WxH gives it
    quiet = options.pop("quiet", not progress)
    unknown = sorted(set(options) - FIT_NAMES)
    if unknown:
        hint = " (--table-log2 is log2_table_size)" if "table_log2" in unknown else ""
        raise UsageError(f"fit() takes no option {unknown[0]!r}{hint}; it takes the command's options by their "
                         f"Python names: {', '.join(sorted(FIT_NAMES))}")
    fit_options = FitOptions(input=os.fspath(picture), out=None if out is None else os.fspath(out),
                             model_options=model_options, quiet=quiet, live=live, **options)
    log = print if progress else (lambda message: None)
    if not live:
        fit_job(fit_options, log=log)
        return load(fit_options.run_folder)
    check_start(fit_options)  # a folder that holds a run, say, is refused before the page is served
    with LiveServer(port) as server:
        announce(server.url, open_browser, log, "the live page")
        try:
            fit_job(fit_options, log=log, live=server)
        except Interrupted as exc:
            server.stop(f"training stopped at step {exc.step:,}; its checkpoint is saved (resume=True goes on)")
            raise
        server.finish(fit_options.run_folder)
        server.hand_over()
    return load(fit_options.run_folder)


def load(path) -> Run | codec.Decoded:
    """What ``path`` holds: a fitted model or a compressed picture.

    Parameters
    ----------
    path : str or path
        A run folder (its model.npz, else its checkpoint), a model.npz or a checkpoint.npz; or a
        file of ``ironlearn compress`` (told apart by its first bytes, whatever its name).

    Returns
    -------
    Run or codec.Decoded
        A model as a :class:`Run`; a compressed picture as the :class:`ironlearn.codec.Decoded`
        it decodes to (its ``size``, ``mode``, latent ``pyramid`` and ``net``), which
        :func:`render` draws at any size like a run.

    Raises
    ------
    CheckpointError
        Not a readable ironlearn model.
    CodecError
        A compressed file that is damaged or of another format version (a ``ValueError``).
    """
    if isinstance(path, (bytes, bytearray, memoryview)):  # a compressed file's bytes, as decompress() takes
        return codec.read(bytes(path))
    picture = drawable.open(path)
    return picture.decoded if isinstance(picture, drawable.CompressedFile) else picture


def render(model, size=None, *, scale: float | None = None, view=None, device: str = "cpu") -> np.ndarray:
    """Redraw ``model`` (a :class:`Run`, a :class:`~ironlearn.nn.Sequential`, a compressed
    picture's :class:`~ironlearn.codec.Decoded`, or a path that :func:`load` reads) as an array.

    Parameters
    ----------
    model : Run, Sequential, codec.Decoded, str or path
    size : int or (int, int), optional
        N for the longest side (the training aspect kept), or ``(width, height)``.
    scale : float, optional
        Instead of ``size``: this many times the training size (a :class:`Run` or a compressed
        picture, whose size it has; for either, neither means its own size).  A bare
        :class:`~ironlearn.nn.Sequential` knows no size: give one.
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
    if isinstance(model, (str, os.PathLike)):
        model = load(model)
    size = _checked_size(size, scale, view)
    if isinstance(model, codec.Decoded):
        return model.redraw(size, scale, view)
    if not isinstance(model, (Run, Sequential)):
        raise TypeError(f"render() draws a Run, a Sequential, a codec.Decoded or a path, not {type(model).__name__}")
    trained = model.size if isinstance(model, Run) else None
    network = model.model if isinstance(model, Run) else model
    if size is None and scale is None and trained is not None:
        scale = 1.0  # the training size (or, with a view, its pixel pitch), as for a compressed picture
    width, height = render_size(trained, size, scale, view)
    backend = get_backend(device)
    return render_bands(network.to(backend), width, height, backend, view=view)


def compress(picture, out=None, *, bpp: float | None = None, lmbda: float | None = None, seconds: float = 30.0,
             mode: str | None = None, force: bool = False):
    """Compress a picture (a path, or an array as :func:`ironlearn.codec.compress_array` takes)
    into a small file that decodes at any size, as ``ironlearn compress`` does; writes it to
    ``out`` (atomically) when given: a new file, or with ``force`` one that exists, never the
    picture itself.  Returns :class:`ironlearn.codec.Compressed`: the bytes, their bits per
    pixel, the PSNR and the time.

        result = ironlearn.compress("photo.png", "photo.ilc", bpp=0.5)
        pixels = ironlearn.decompress("photo.ilc", scale=2)    # (2H, 2W, C) float32 in [0, 1]

    An array is ``(H, W)`` or ``(H, W, C)``, ``C`` 1 or 3: uint8 (255 white), uint16 (65535
    white) or floats in [0, 1]; ``mode`` ("gray" or "rgb") converts it as it converts a file.

    Raises UsageError for an ``out`` that exists (without ``force``), is the picture, or lies in
    a missing or unwritable folder, and ValueError for an array that is empty, not finite or of
    another type: before any work.
    """
    _check_flags(force=force)
    is_path = isinstance(picture, (str, os.PathLike))
    if out is not None:
        check_output(os.fspath(out), force, reads=[os.fspath(picture)] if is_path else [])
    values = load_picture(picture, mode=mode, max_pixels=codec.MAX_PIXELS, option=None).values if is_path \
        else _picture_array(picture, mode)
    result = codec.compress_array(values, bpp=bpp, lmbda=lmbda, seconds=seconds)
    if out is not None:
        write_bytes(out, result.data)
    return result


def _picture_array(values, mode: str | None) -> np.ndarray:
    """An array given to :func:`compress`, checked and as a picture file would be read:
    ``(H, W, C)``, uint8 or float32 in [0, 1], converted to ``mode``.  ValueError for an array the
    codec would fail on deep inside (empty, NaN) or draw wrong (a 16-bit one came out white)."""
    from .image.io import MODES, to_mode

    values = np.asarray(values)
    if values.ndim == 2:
        values = values[:, :, None]
    if values.ndim != 3 or values.shape[2] not in (1, 3):
        raise ValueError(f"need a picture (H, W), (H, W, 1) or (H, W, 3) (got shape {values.shape})")
    if values.size == 0:
        raise ValueError(f"the picture is empty (shape {values.shape}); give one of at least 1x1 pixels")
    if values.dtype == np.uint16:  # as a 16-bit file is read: 65535 is white
        values = values.astype(np.float32) / np.float32(65535)
    elif values.dtype.kind == "f":
        if not np.isfinite(values).all():
            raise ValueError("the picture holds NaN or infinite values; give finite ones in [0, 1]")
        values = values.astype(np.float32, copy=False)
    elif values.dtype != np.uint8:
        raise ValueError(f"pixels of type {values.dtype} have no known white; give uint8 (0-255), uint16 "
                         "(0-65535) or floats in [0, 1]")
    if mode is not None and mode not in MODES:
        raise ValueError(f"unknown mode {mode!r}: use one of {', '.join(MODES)}")
    return values if mode is None else to_mode(values, mode)


def _checked_size(size, scale, view):
    """``size`` as the renderers take it (N, or a tuple ``(W, H)``); ValueError for a size, scale or
    view the command line would have refused."""
    sides = list(size) if isinstance(size, (tuple, list)) else [] if size is None else [size]
    whole = all(is_whole(n) and n >= 1 for n in sides)
    if size is not None and not (whole and len(sides) == (2 if isinstance(size, (tuple, list)) else 1)):
        raise ValueError(f"size must be N (the longest side) or (width, height), whole numbers from 1 (got {size!r})")
    if scale is not None and not (is_finite(scale) and scale > 0):
        raise ValueError(f"scale must be a finite number above 0 (got {scale!r})")
    if view is not None:
        if not isinstance(view, (tuple, list)) or len(view) != 4:
            raise ValueError(f"view must be (x0, y0, x1, y1), four numbers (got {view!r})")
        check_view(tuple(view))
    return tuple(size) if isinstance(size, list) else size


def decompress(source, size=None, *, scale: float | None = None, view=None) -> np.ndarray:
    """A compressed file (a path, or its bytes) redrawn at its own size, at ``size`` (N for the
    longest side, or ``(W, H)``) or at ``scale`` times it: ``(H, W, C)`` float32 in [0, 1].
    ``view`` ``(x0, y0, x1, y1)`` draws only that region of the [-1, 1] square the picture
    spans (y down), as :func:`render` does."""
    size = _checked_size(size, scale, view)
    data = bytes(source) if isinstance(source, (bytes, bytearray, memoryview)) else codec.read_file(source)
    return codec.read(data).redraw(size, scale, view)
