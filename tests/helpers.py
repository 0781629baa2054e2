"""Small pictures and a way to run the command in-process."""

import json

import numpy as np
from PIL import Image

from ironlearn.cli import main


def make_picture(path, size=32, colour=False):
    """A disc on a gradient: smooth and sharp parts, deterministic."""
    ys, xs = np.mgrid[0:size, 0:size] / (size - 1)
    disc = ((xs - 0.5) ** 2 + (ys - 0.55) ** 2) < 0.09
    gray = np.where(disc, 0.1, 0.3 + 0.6 * xs)
    if colour:
        array = np.stack([gray, np.where(disc, 0.8, ys), 1 - gray], axis=-1)
    else:
        array = gray
    Image.fromarray((array * 255).astype(np.uint8)).save(path)
    return path


def run_cli(capsys, *args):
    """``ironlearn ARGS`` in this process; returns (exit code, stdout, stderr)."""
    try:
        code = main([str(a) for a in args])
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def rewrite_meta(path, change):
    """Edit a saved checkpoint's metadata in place: ``change(meta, arrays)``."""
    with np.load(path) as archive:
        arrays = {k: archive[k] for k in archive.files}
    meta = json.loads(arrays["meta"].tobytes())
    change(meta, arrays)
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), np.uint8)
    with open(path, "wb") as file:
        np.savez(file, **arrays)
