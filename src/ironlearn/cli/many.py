"""``ironlearn fit-many``, ``compress-many`` and ``compare``: many pictures, on this machine or a Ray cluster."""

from __future__ import annotations

import argparse

from ..api import compare, compress_many, fit_many
from .argtypes import count, counts_arg, names_arg, non_negative_float, positive_float, positive_int
from .common import say
from .fit_options import add_fit_options, fit_options
from .status import ExitCode


def add_parser(commands) -> None:
    _add_fit_many(commands)
    _add_compress_many(commands)
    _add_compare(commands)


def _add_fit_many(commands) -> None:
    many_p = commands.add_parser(
        "fit-many", help="fit many pictures, on this machine or a Ray cluster",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Fit every picture named by INPUT (files, folders' images and .csv pixel files, globs), each into "
                    "its own run folder DIR/<name>/ exactly as 'ironlearn fit' writes it, with every fit option "
                    "applied to each. DIR/summary.csv gets one row per picture as each finishes, with its file's "
                    "path (relative to DIR); a rerun gives each file the name it had, a new picture a name of its "
                    "own, and keeps the rows of pictures it does not name.",
        epilog="Running the same command again skips pictures done before and resumes interrupted ones from their "
               "checkpoints (--force redoes them all). A picture that fails is listed with its error and the others "
               "go on; the exit code is then 1. Ctrl-C stops cleanly: finished runs are kept and running ones save "
               "a checkpoint (exit code 130); SIGTERM (Slurm, Kubernetes, timeout, kill) does the same with exit code "
               "143. A SIGTERM to one local worker process stops its picture alone, saved and listed as interrupted; "
               "on Ray, a task stopped so (its node preempted) goes on once more from the checkpoint it saved.\n\n"
               "  ironlearn fit-many photos/ --out runs/photos --steps 2000\n"
               "  ironlearn fit-many 'kodak/*.png' --out runs/kodak --workers 2 --time-budget 30\n"
               "  ironlearn fit-many data/ --out runs/data --engine ray --address auto --gpus-per-fit 0.25")
    _add_engine_options(many_p, "fit-many", "the run folders and summary.csv", "fits")
    many_p.add_argument("--gpus-per-fit", type=non_negative_float, default=0.0, metavar="G",
                        help="with --engine ray: the GPUs each task declares (a fraction shares one; default 0: "
                             "fits run on CPUs)")
    many_p.add_argument("--force", action="store_true",
                        help="fit every picture anew, replacing its run (never files fit-many does not write: "
                             "another summary.csv, a run folder's other files)")
    add_fit_options(many_p)
    many_p.set_defaults(func=cmd_fit_many)


def _add_compress_many(commands) -> None:
    compress_p = commands.add_parser(
        "compress-many", help="compress many pictures, on this machine or a Ray cluster",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Compress every picture named by INPUT (files, folders' images, globs) into DIR/<name>.ilc, "
                    "each as 'ironlearn compress' would with the same options. DIR/summary.csv gets one row per "
                    "picture as each finishes: its file, size, the rate asked and reached, PSNR, seconds, status "
                    "and error.",
        epilog="Running the same command again skips the files done before with the same --bpp (or --lmbda) and "
               "--seconds, and redoes the others (--force redoes them all, and replaces a file at DIR/<name>.ilc "
               "that compress-many did not write). A picture that fails is listed with its error and the others "
               "go on; the exit code is then 1. Ctrl-C or SIGTERM stops cleanly: finished files are kept, an "
               "encode cut short writes nothing and starts again on the next run.\n\n"
               "  ironlearn compress-many photos/ --out small/ --bpp 0.25\n"
               "  ironlearn compress-many 'kodak/*.png' --out kodak-ilc --seconds 60 --workers 2\n"
               "  ironlearn compress-many data/ --out data-ilc --engine ray --address auto")
    _add_engine_options(compress_p, "compress-many", "the .ilc files and summary.csv", "encodes")
    rate = compress_p.add_mutually_exclusive_group()
    rate.add_argument("--bpp", type=positive_float, metavar="B", help="target bits per pixel of each file (default 0.5)")
    rate.add_argument("--lmbda", type=positive_float, metavar="L", help="rate-distortion weight instead of a target")
    compress_p.add_argument("--seconds", type=positive_float, default=30.0, metavar="S",
                            help="time for each picture's whole encode (default 30)")
    compress_p.add_argument("--mode", choices=("gray", "rgb"), help="gray or rgb (default: as each picture)")
    compress_p.add_argument("--force", action="store_true", help="compress every picture anew")
    compress_p.set_defaults(func=cmd_compress_many)


def _add_compare(commands) -> None:
    compare_p = commands.add_parser(
        "compare", help="compare coordinate networks over pictures at equal parameter budgets",
        formatter_class=argparse.RawDescriptionHelpFormatter,
        description="Fit every picture named by INPUT with each model (--models) sized to each parameter budget "
                    "(--params), for the same time or steps, at --size px on the longest side, as 'ironlearn "
                    "fit --params' sizes one; score each fit (PSNR, SSIM, and where the file holds twice the size, "
                    "its 2x redraw's PSNR beside bicubic upscaling's). Writes DIR/results.csv, a row a fit with "
                    "its seed and versions, and DIR/report.html: quality against parameters and against time, "
                    "and the redraws side by side. The fits themselves are in DIR/runs/<model>-<params>/.",
        epilog="Running the same command again skips the fits done before (--force redoes them) and writes the "
               "results and report again.\n\n"
               "  ironlearn compare photos/ --out cmp --models hashgrid,siren,grid --params 1e4,1e5\n"
               "  ironlearn compare 'kodak/*.png' --out cmp --steps 2000 --size 384 --engine ray")
    _add_engine_options(compare_p, "compare", "results.csv, report.html and the runs", "fits")
    compare_p.add_argument("--models", type=names_arg, default=("hashgrid", "siren", "fourier", "grid"),
                           metavar="A,B", help="the models, from hashgrid, siren, fourier, mlp and grid (a plain "
                                               "grid read by a B-spline; default hashgrid,siren,fourier,grid)")
    compare_p.add_argument("--params", type=counts_arg, default=(10_000, 30_000, 100_000), metavar="N,M",
                           help="the parameter budgets (default 1e4,3e4,1e5)")
    length = compare_p.add_mutually_exclusive_group()
    length.add_argument("--time-budget", type=positive_float, default=10.0, metavar="SECONDS",
                        help="training time of each fit (default 10)")
    length.add_argument("--steps", type=positive_int, metavar="N", help="steps of each fit, instead")
    compare_p.add_argument("--size", type=positive_int, default=256, metavar="N",
                           help="the longest side each picture is fitted at (default 256)")
    compare_p.add_argument("--mode", choices=("gray", "rgb"), help="gray or rgb (default: as each picture)")
    compare_p.add_argument("--seed", type=count, default=0, help="random seed of every fit (default 0)")
    compare_p.add_argument("--force", action="store_true", help="fit everything anew")
    compare_p.set_defaults(func=cmd_compare)


def _add_engine_options(parser, command: str, outputs: str, works: str) -> None:
    """The inputs, the output folder and where the work runs: what the many-picture commands share."""
    parser.add_argument("inputs", nargs="+", metavar="INPUT", help="image, pixel CSV, folder or glob (quote globs)")
    parser.add_argument("--out", required=True, metavar="DIR",
                        help=f"folder for {outputs} (refused if a file there of the same name is not one {command} "
                             "wrote)")
    parser.add_argument("--workers", type=positive_int, metavar="N",
                        help=f"{works} at once (default: local, one per core; ray, as many as the cluster holds)")
    parser.add_argument("--engine", choices=["local", "ray"], default="local",
                        help="local: worker processes on this machine (default); ray: Ray tasks, on a local Ray "
                             "instance or the cluster at --address (pip install 'ironlearn[ray]')")
    parser.add_argument("--address", metavar="ADDR",
                        help="with --engine ray: the cluster to join, 'auto' (this node's) or ray://HOST:PORT")
    parser.add_argument("--cpus-per-fit", type=positive_float, metavar="C",
                        help="BLAS threads of each local worker (default: the cores shared among the workers); "
                             "on ray, the CPUs each task declares (default 1)")


def cmd_fit_many(args) -> int:
    rows = fit_many(args.inputs, args.out, options=fit_options(args, input="", out=None), workers=args.workers,
                    engine=args.engine, address=args.address, cpus_per_fit=args.cpus_per_fit,
                    gpus_per_fit=args.gpus_per_fit, progress=say)
    return _status("fit-many", rows, "resumes the stopped ones")


def cmd_compress_many(args) -> int:
    rows = compress_many(args.inputs, args.out, bpp=args.bpp, lmbda=args.lmbda, seconds=args.seconds, mode=args.mode,
                         force=args.force, workers=args.workers, engine=args.engine, address=args.address,
                         cpus_per_fit=args.cpus_per_fit, progress=say)
    return _status("compress-many", rows, "compresses the stopped ones")


def cmd_compare(args) -> int:
    rows = compare(args.inputs, args.out, models=args.models, params=args.params, time_budget=args.time_budget,
                   steps=args.steps, size=args.size, mode=args.mode, seed=args.seed, force=args.force,
                   workers=args.workers, engine=args.engine, address=args.address, cpus_per_fit=args.cpus_per_fit,
                   progress=say)
    for row in rows:
        row["picture"] = f"{row['picture']} ({row['model']}, {row['params_asked']:,})"
    return _status("compare", rows, "goes on with the stopped ones")


def _status(command: str, rows: list[dict], again: str) -> int:
    """The exit code of a many-picture command, and its lines on the pictures that did not finish."""
    unfinished = [row for row in rows if row["status"] != "done"]
    if not unfinished:
        return ExitCode.OK
    stopped = any(row["status"] == "interrupted" for row in unfinished)
    say(f"ironlearn {command}: error: {len(unfinished)} of {len(rows)} pictures "
        + (f"did not finish (the same command again {again}):" if stopped else "failed:"))
    for row in unfinished:
        say(f"  {row['picture']}: {row['error']}")
    return ExitCode.FAILED
