"""The types of ``ironlearn``'s arguments, each turning bad text into argparse's one-line error,
and :class:`Parser`, argparse with such one-line errors."""

from __future__ import annotations

import argparse

from ..image.coords import parse_view
from ..image.io import MAX_PIXELS, parse_size
from ..limits import MAX_RENDER_PIXELS
from .status import ExitCode


def _number(kind, low, inclusive=True, what="a number"):
    def convert(text):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
        if value != value or value in (float("inf"), float("-inf")):
            raise argparse.ArgumentTypeError(f"{text!r} is not a finite number")
        if value < low if inclusive else value <= low:
            raise argparse.ArgumentTypeError(f"{text!r} must be {'at least' if inclusive else 'above'} {low}")
        return value
    convert.__name__ = what
    return convert


positive_int = _number(int, 1, what="a whole number")
count = _number(int, 0, what="a whole number")
positive_float = _number(float, 0, inclusive=False)
non_negative_float = _number(float, 0)


def size_arg(text):
    try:
        return parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def counts_arg(text):
    """``1e4,1e5,3e5`` -> (10000, 100000, 300000): whole numbers from 1, written plainly or as 1e4."""
    try:
        values = tuple(float(part) for part in text.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not numbers separated by commas (1e4,1e5)") from None
    if not all(value >= 1 and value == int(value) and value < 1e12 for value in values):
        raise argparse.ArgumentTypeError(f"{text!r}: each must be a whole number from 1 (1e4 is 10000)")
    return tuple(int(value) for value in values)


def names_arg(text):
    """``hashgrid,siren`` -> ("hashgrid", "siren")."""
    return tuple(part.strip() for part in text.split(",") if part.strip())


def port_arg(text):
    port = count(text)
    if port > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port (0-65535)")
    return port


def add_max_pixels(parser, *, draws: bool = False) -> None:
    """``--max-pixels``, for a command that reads a picture (its limit message names the flag), or
    with ``draws`` one that draws one (``render``)."""
    if draws:
        text = (f"refuse renders larger than this (default {MAX_RENDER_PIXELS:,}: past it a size is likelier "
                "a typo, such as --scale 100 for 10)")
    else:
        text = (f"refuse pictures larger than this (default {MAX_PIXELS:,}: a guard against decompression "
                "bombs); given, a picture up to it is read even where its file is far smaller than such a "
                "picture's")
    parser.add_argument("--max-pixels", type=positive_int, metavar="N", help=text)


def view_arg(text):
    try:
        return parse_view(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit 2) instead of a usage block, and no abbreviated options:
    ``--step 100`` was taken as ``--steps``, and a slip should be an error, not a guess."""

    def __init__(self, *args, **kwargs):
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message):
        if message.endswith("expected one argument"):  # argparse takes "-0.5,..." for an option
            message += "; a value that starts with '-' goes after '=' (--view=-0.5,-0.5,0.5,0.5)"
        self.exit(ExitCode.USAGE, f"{self.prog}: error: {message} (see {self.prog} --help)\n")
