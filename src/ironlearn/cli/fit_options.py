"""The options of one fit (picture, network, training, device), which ``fit`` and ``fit-many``
both take: :func:`add_fit_options` adds them to a parser, :func:`fit_options` turns them back
into :class:`~ironlearn.fitting.FitOptions`."""

from __future__ import annotations

import argparse
import dataclasses
import textwrap

from ..backend import DEVICES
from ..fitting import DEFAULT_PRESET, OPTIONS, PRESETS, FitOptions
from ..fitting.options import PROGRESS, SCHEDULES, STARTS, flag
from ..fitting.presets import option_help
from ..fitting.regimes import REGIMES
from ..image.io import MODES
from ..image.sampling import FILTERS
from .argtypes import add_max_pixels, count, non_negative_float, positive_float, positive_int, size_arg

#: --filter's help: which filter each kind of picture gets by default, and why.
FILTER_HELP = ("how training reads the picture between pixel centres: lanczos (default), bicubic, "
               "bilinear, spline (a B-spline halfway between passing through the pixels and "
               "smoothing them: the default for a binary drawing up to 256 px, which redraws it "
               "larger above bicubic), "
               "or centres (pixel centres only: the sharpest fit, the roughest renders larger; the "
               "default for a photograph's level of a vertex per pixel and a colour thumbnail's "
               "detail level, which the pixels pin)")
#: --start's help.
START_HELP = ("how a new fit's network begins: picture (default) sets the hash grid's level of a "
              "vertex per pixel (pictures past 256 px, and binary drawings) to the picture's "
              "B-spline, so the fit starts where training would end; random (the default for a "
              "binary drawing up to 256 px) starts every layer random, to watch the network learn "
              "in the time-lapse (it needs many steps there)")


def default_models() -> str:
    """--help's account of what the default model is for each kind of picture (fitting.regimes)."""
    lines = ["The default model (hashgrid) is sized to the picture:"]
    for regime in REGIMES:
        lines += textwrap.wrap(f"{regime.when}: {regime.layout}", 96, initial_indent="  - ", subsequent_indent="    ")
    lines += textwrap.wrap("To watch a network learn from nothing, give --start random (or another --model); for a "
                           "small file of the picture, use `ironlearn compress`.", 96)
    return "\n".join(lines)


def add_fit_options(parser: argparse.ArgumentParser) -> None:
    """The options of one fit (picture, network, training, device), shared by ``fit`` and ``fit-many``;
    :func:`fit_options` turns them back into :class:`FitOptions`."""
    models = "; ".join(f"{name}: {p.summary}" + (" (default)" if name == DEFAULT_PRESET else "")
                       for name, p in PRESETS.items())
    parser.add_argument("--mode", choices=MODES, help="binary (threshold at 128), gray or rgb "
                                                      "(default: rgb for colour images, else gray)")
    parser.add_argument("--size", type=size_arg, metavar="N|WxH",
                        help="resize first: N for the longest side (aspect kept) or WxH")
    add_max_pixels(parser)
    parser.add_argument("--model", choices=list(PRESETS), metavar="NAME", help=f"network preset: {models}")
    for option in OPTIONS.values():
        if option.type is str:
            parser.add_argument(option.flag, choices=option.choices, dest=option.name, help=option_help(option.name, flag))
            continue
        convert = (count if option.zero else positive_int) if option.type is int else positive_float
        parser.add_argument(option.flag, type=convert, dest=option.name, metavar=option.metavar,
                            help=option_help(option.name, flag))
    parser.add_argument("--params", type=positive_int, metavar="N",
                        help="size the model to about N parameters (its width, or the hash grid's finest level; "
                             "the other options as given or by default): a compact network, or networks compared "
                             "at equal size")
    parser.add_argument("--steps", type=positive_int, metavar="N",
                        help="total steps of the run (with --resume: continue to step N)")
    parser.add_argument("--time-budget", type=positive_float, metavar="SECONDS",
                        help="stop after this much training time, its checkpoints and time-lapse frames included "
                             "(default, without --steps: 40 s; writing the outputs afterwards is not counted); "
                             "alone, it sizes the learning-rate schedule to the steps that fit, revised as the run "
                             "goes; a total across resumes, like --steps (with --resume: train to this much "
                             "in all, the rest planned afresh)")
    parser.add_argument("--lr", type=positive_float, help="peak learning rate (default: the preset's)")
    parser.add_argument("--lr-min", type=non_negative_float,
                        help="final learning rate of the cosine schedule, at most the peak (default: a hundredth "
                             "of the peak, --lr or the preset's)")
    parser.add_argument("--schedule", choices=SCHEDULES, help="learning-rate schedule (default cosine)")
    parser.add_argument("--batch-size", type=count, metavar="N",
                        help="points per step; 0 = the whole picture every step (default: the preset's; a "
                             "picture no larger trains whole)")
    parser.add_argument("--filter", choices=FILTERS,
                        help=FILTER_HELP)
    parser.add_argument("--start", choices=STARTS,
                        help=START_HELP)
    parser.add_argument("--seed", type=count, help="random seed (default 0)")
    parser.add_argument("--device", choices=DEVICES,
                        help="where to train (default: the GPU when CuPy sees one, else the CPU; naming auto "
                             "also says which it chose)")
    parser.add_argument("--checkpoint-every", type=positive_int, metavar="N",
                        help="steps between checkpoints (default: a twentieth of the run, at least 50, put off "
                             "while saving would take over a tenth of the training time; a checkpoint is also "
                             "written after each 60 s of training)")
    parser.add_argument("--snapshot-every", type=positive_int, metavar="N",
                        help="steps between time-lapse frames (default: 100 frames spaced geometrically, most of "
                             "them early, where the learning shows)")
    parser.add_argument("--quiet", action="store_true",
                        help="print only errors and the result: no progress, notices or notes")
    parser.add_argument("--progress", choices=PROGRESS,
                        help="how training shows its progress (default: a bar on a terminal, plain lines "
                             "elsewhere, none with --quiet)")


def fit_options(args: argparse.Namespace, **fields) -> FitOptions:
    """:class:`FitOptions` from the parsed options of :func:`add_fit_options` (and any other
    :class:`FitOptions` field the parser has), with ``fields`` given explicitly."""
    names = {f.name for f in dataclasses.fields(FitOptions)} - {"model_options"}
    given = {name: getattr(args, name) for name in names if hasattr(args, name)}
    model_options = {name: getattr(args, name) for name in OPTIONS if getattr(args, name, None) is not None}
    return FitOptions(**{**given, **fields}, model_options=model_options)
