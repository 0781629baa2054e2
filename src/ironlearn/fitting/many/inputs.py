"""Which pictures ``fit-many`` fits, and the run folder each one gets.

An input is a file (taken as it is), a folder (its images and ``.csv`` pixel files,
not its subfolders) or a glob (the pictures it matches).  Each picture's run folder
is named after the file; when two share a name, the later ones get ``-2``, ``-3``, ...
in the order the inputs were given.  ``summary.csv`` records the name each file got, and
a rerun gives it the same one, whatever pictures were added or removed meanwhile; a new
picture gets a name no recorded one has.
"""

from __future__ import annotations

import glob
import os
from dataclasses import dataclass

from PIL import Image

from .. import folder
from ..options import UsageError

GLOB_CHARACTERS = "*?["
SUMMARY = "summary.csv"
BESIDE = frozenset({SUMMARY, folder.LOCK})  # what the output folder holds besides the run folders


@dataclass(frozen=True)
class Source:
    """One picture to fit: ``path`` as given (or as found), ``name`` its run folder under the output."""

    name: str
    path: str


def picture_suffixes() -> frozenset[str]:
    """Suffixes a folder or glob is searched for: every image format Pillow reads, and ``.csv``.
    (An explicit ``.txt`` file is read as a pixel CSV, but a folder's ``.txt`` files are more often notes.)"""
    Image.init()
    return frozenset({ext for ext, kind in Image.registered_extensions().items() if kind in Image.OPEN} | {".csv"})


def _is_picture(path: str, suffixes) -> bool:
    name = os.path.basename(path)
    return not name.startswith(".") and os.path.splitext(name)[1].lower() in suffixes and os.path.isfile(path)


def _listing(folder: str, suffixes) -> list[str]:
    return [os.path.join(folder, name) for name in sorted(os.listdir(folder))
            if _is_picture(os.path.join(folder, name), suffixes)]


def _expand(text: str, suffixes) -> list[str]:
    if os.path.isdir(text):
        found = _listing(text, suffixes)
        if not found:
            raise UsageError(f"{text}: no pictures in this folder (images or .csv pixel files)")
        return found
    if os.path.exists(text):
        return [text]  # a file: one that does not read is its fit's failure, beside the others
    if not any(c in text for c in GLOB_CHARACTERS):
        raise UsageError(f"{text}: no such file or folder (a typo? nothing has started)")
    found = []
    for match in sorted(_glob(text)):
        if os.path.isdir(match):
            found += _listing(match, suffixes)
        elif _is_picture(match, suffixes):
            found.append(match)
    if not found:
        raise UsageError(f"{text} matches no pictures (images or .csv pixel files)")
    return found


def _glob(pattern: str) -> list[str]:
    """What ``pattern`` matches, as ``glob.glob(pattern, recursive=True)`` gives it, except that
    ``**`` never enters a link to a folder: two links to ``.`` made its walk endless (each path
    through them a new one), where ``**`` here walks each folder once."""
    if os.altsep:
        pattern = pattern.replace(os.altsep, os.sep)
    parts = pattern.split(os.sep)
    if "**" not in parts:
        return glob.glob(pattern)
    first = parts.index("**")
    head, tail = os.sep.join(parts[:first]) or (os.sep if first else ""), os.sep.join(parts[first + 1:])
    found = []
    for base in glob.glob(head) if head else [""]:
        for folder in _folders(base):
            found += [folder] if not tail else _glob(os.path.join(glob.escape(folder), tail))
    return found


def _folders(base: str):
    """``base`` and every folder under it but hidden ones (as ``**`` skips them), entering no link
    to a folder: what ``**`` matches there."""
    root = base or os.curdir
    for top, subfolders, _ in os.walk(root):  # os.walk follows no link below its top unless told to
        subfolders[:] = sorted(name for name in subfolders if not name.startswith("."))
        below = os.path.relpath(top, root)
        yield base if below == os.curdir else os.path.join(base, below)


def unique_names(paths: list[str], recorded: dict | None = None) -> list[str]:
    """A run-folder name per path: the one ``recorded`` gives its file (``{real path: name}``, from
    earlier runs), else the file name without its suffix, made unique with ``-2``, ``-3``, ...
    among the names given, every recorded one and the files kept beside the run folders."""
    recorded = recorded or {}
    names, used = [], set(recorded.values()) | BESIDE
    for path in paths:
        name = recorded.get(os.path.realpath(path))
        if name is None:
            stem = os.path.splitext(os.path.basename(os.path.normpath(path)))[0] or "picture"
            name, n = stem, 2
            while name in used:
                name, n = f"{stem}-{n}", n + 1
        used.add(name)
        names.append(name)
    return names


def expand(inputs, recorded: dict | None = None, skip=()) -> list[Source]:
    """The pictures that ``inputs`` (files, folders and globs) name, each once, in the order given,
    named as :func:`unique_names` does with ``recorded``; never the files ``skip`` names (the
    summary of the run itself, when its folder is among the inputs).

    Raises UsageError for a name that is no file or folder, a folder or glob with no pictures, and
    when there are none at all.
    """
    suffixes, paths = picture_suffixes(), []
    seen = {os.path.realpath(path) for path in map(os.fspath, skip)}
    for text in map(os.fspath, inputs):
        for path in _expand(text, suffixes):
            key = os.path.realpath(path)
            if key not in seen:
                seen.add(key)
                paths.append(path)
    if not paths:
        raise UsageError("no pictures given: name image files, pixel CSVs, folders or globs")
    return [Source(name, path) for name, path in zip(unique_names(paths, recorded), paths)]
