"""``ironlearn fit-many``: many pictures, on this machine or a Ray cluster."""

from __future__ import annotations

import argparse

from ..api import fit_many
from .argtypes import non_negative_float, positive_float, positive_int
from .common import say
from .fit_options import add_fit_options, fit_options
from .status import ExitCode


def add_parser(commands) -> None:
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
    many_p.add_argument("inputs", nargs="+", metavar="INPUT", help="image, pixel CSV, folder or glob (quote globs)")
    many_p.add_argument("--out", required=True, metavar="DIR",
                        help="folder for the run folders and summary.csv (refused if DIR/summary.csv is a file "
                             "fit-many did not write)")
    many_p.add_argument("--workers", type=positive_int, metavar="N",
                        help="fits at once (default: local, one per core; ray, as many as the cluster holds)")
    many_p.add_argument("--engine", choices=["local", "ray"], default="local",
                        help="local: worker processes on this machine (default); ray: Ray tasks, on a local Ray "
                             "instance or the cluster at --address (pip install 'ironlearn[ray]')")
    many_p.add_argument("--address", metavar="ADDR",
                        help="with --engine ray: the cluster to join, 'auto' (this node's) or ray://HOST:PORT")
    many_p.add_argument("--cpus-per-fit", type=positive_float, metavar="C",
                        help="BLAS threads of each local worker (default: the cores shared among the workers); "
                             "on ray, the CPUs each task declares (default 1)")
    many_p.add_argument("--gpus-per-fit", type=non_negative_float, default=0.0, metavar="G",
                        help="with --engine ray: the GPUs each task declares (a fraction shares one; default 0: "
                             "fits run on CPUs)")
    many_p.add_argument("--force", action="store_true",
                        help="fit every picture anew, replacing its run (never files fit-many does not write: "
                             "another summary.csv, a run folder's other files)")
    add_fit_options(many_p)
    many_p.set_defaults(func=cmd_fit_many)


def cmd_fit_many(args) -> int:
    rows = fit_many(args.inputs, args.out, options=fit_options(args, input="", out=None), workers=args.workers,
                    engine=args.engine, address=args.address, cpus_per_fit=args.cpus_per_fit,
                    gpus_per_fit=args.gpus_per_fit, progress=say)
    unfinished = [row for row in rows if row["status"] != "done"]
    if not unfinished:
        return ExitCode.OK
    stopped = any(row["status"] == "interrupted" for row in unfinished)
    say(f"ironlearn fit-many: error: {len(unfinished)} of {len(rows)} pictures "
        + ("did not finish (the same command again resumes the stopped ones):" if stopped else "failed:"))
    for row in unfinished:
        say(f"  {row['picture']}: {row['error']}")
    return ExitCode.FAILED
