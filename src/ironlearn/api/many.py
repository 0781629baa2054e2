"""``fit_many`` and ``compress_many``, composed once for Python and for ``ironlearn fit-many`` and
``ironlearn compress-many``: the fit options, given by their Python names or as one
:class:`~ironlearn.fitting.FitOptions`, or compress's, applied to every picture."""

from __future__ import annotations

from collections.abc import Callable

from ..errors import UsageError
from ..fitting import FitOptions
from ..fitting.compare import Comparison
from ..fitting.compare import compare as compare_all
from ..fitting.many import CompressOptions
from ..fitting.many import compress_many as compress_all
from ..fitting.many import fit_many as fit_all
from .arguments import checked, log_of, named_fit_options


@checked
def fit_many(pictures, out, *, workers: int | None = None, engine: str = "local", address: str | None = None,
             cpus_per_fit: float | None = None, gpus_per_fit: float = 0.0, progress: bool | Callable = False,
             options: FitOptions | None = None, **fit_options) -> list[dict]:
    """Fit every picture that ``pictures`` name (files, folders' images and pixel CSVs, globs), each
    into its own run folder ``out/<name>/``, as ``ironlearn fit-many`` does; ``out/summary.csv``
    gets a row per picture.  A rerun skips pictures done before and resumes interrupted ones
    (``force=True`` redoes them all).

    Parameters
    ----------
    workers, engine, address, cpus_per_fit, gpus_per_fit
        Where the fits run: local worker processes (``engine="local"``, ``workers`` of them, default
        one per core) or Ray tasks (``engine="ray"``, on the cluster at ``address``), as the
        command's options of the same names.
    progress : bool or callable
        Print the command's messages on stderr (True), give them to a function, or print nothing.
    **fit_options
        Any option of :func:`ironlearn.fit` by its Python name (``steps``, ``size``, ``model``,
        ``force``, ...), applied to each picture; or ``options``, a whole
        :class:`~ironlearn.fitting.FitOptions` (the command's), instead.

    Returns
    -------
    list of dict
        The rows of ``summary.csv`` of these pictures (``picture``, ``status``, ``error``, ...), in
        the order given; a picture that failed has its one-line error there, and the others go on.
    """
    if options is not None and fit_options:
        raise UsageError(f"give the fit's options by name or as options=FitOptions(...), not both "
                         f"({', '.join(sorted(fit_options))} and options)")
    if options is None:
        options = named_fit_options("fit_many", "", None, progress=progress is not False, **fit_options)
    return fit_all(pictures, out, options=options, workers=workers, engine=engine, address=address,
                   cpus_per_fit=cpus_per_fit, gpus_per_fit=gpus_per_fit, log=log_of(progress))


@checked
def compress_many(pictures, out, *, bpp: float | None = None, lmbda: float | None = None, seconds: float = 30.0,
                  mode: str | None = None, force: bool = False, workers: int | None = None, engine: str = "local",
                  address: str | None = None, cpus_per_fit: float | None = None,
                  progress: bool | Callable = False) -> list[dict]:
    """Compress every picture that ``pictures`` name (files, folders' images, globs) into
    ``out/<name>.ilc``, as ``ironlearn compress-many`` does: each as :func:`ironlearn.compress`
    would with ``bpp`` (or ``lmbda``), ``seconds`` and ``mode``, on the engines of
    :func:`fit_many` (``workers``, ``engine``, ``address``, ``cpus_per_fit``).  ``out/summary.csv``
    gets a row per picture (its file, size, rate asked and reached, PSNR, seconds, status and
    error); a rerun skips the files done before with the same request (``force=True`` redoes
    them, and replaces a file there that compress-many did not write).

    Returns
    -------
    list of dict
        The rows of ``summary.csv`` of these pictures, in the order given; a picture that failed
        has its one-line error there, and the others go on.
    """
    options = CompressOptions(bpp=bpp, lmbda=lmbda, seconds=seconds, mode=mode, force=force, quiet=progress is False)
    return compress_all(pictures, out, options=options, workers=workers, engine=engine, address=address,
                        cpus_per_fit=cpus_per_fit, force=force, log=log_of(progress))


@checked
def compare(pictures, out, *, models=("hashgrid", "siren", "fourier", "grid"), params=(10_000, 30_000, 100_000),
            time_budget: float | None = 10.0, steps: int | None = None, size: int = 256, mode: str | None = None,
            seed: int = 0, force: bool = False, workers: int | None = None, engine: str = "local",
            address: str | None = None, cpus_per_fit: float | None = None,
            progress: bool | Callable = False) -> list[dict]:
    """Compare coordinate networks as ``ironlearn compare`` does: every picture that ``pictures``
    name fitted by each of ``models`` (``hashgrid``, ``siren``, ``fourier``, ``mlp``, ``grid``: a
    plain interpolated grid) sized to each of ``params`` parameters, for ``time_budget`` seconds
    (or ``steps``) at ``size`` px on the longest side, on :func:`fit_many`'s engines.  Writes
    ``out/results.csv`` (a row a fit: parameters, steps, seconds, ms a step, PSNR, SSIM, the 2x
    redraw's PSNR beside bicubic's, seed and versions) and ``out/report.html``; returns the rows.
    A rerun skips the fits done before (``force=True`` redoes them)."""
    comparison = Comparison(models=tuple(models), params=tuple(params), time_budget=None if steps else time_budget,
                            steps=steps, size=size, mode=mode, seed=seed)
    return compare_all(pictures, out, comparison, workers=workers, engine=engine, address=address,
                       cpus_per_fit=cpus_per_fit, force=force, log=log_of(progress))
