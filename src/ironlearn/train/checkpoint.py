"""Checkpoints: one ``.npz`` holding everything a run needs to continue.

Layout of the archive:

* ``model/<dotted name>``: every parameter (``model/layers.0.weight``);
* ``optim/<slot>.<dotted name>``: optimizer slots (``optim/m.layers.0.weight``);
* ``meta``: UTF-8 JSON as a byte array: format version, architecture, optimizer
  and schedule settings, step, random state (the seed: batch order is a pure
  function of seed and step) and whatever the caller adds under ``settings``.

A finished run's checkpoint holds no arrays (format 2): its model is the model file
beside it (``model_in``, written first), and its optimizer's moments are dropped, to
start again from zero at its step (``slots_since``) if the run is ever trained further.

Files are written atomically: a temporary file in the same folder, flushed and
synced, then ``os.replace``; a crash mid-write leaves the previous file intact.

Files are read as untrusted: the archive's array headers (:mod:`ironlearn.npz`), then the metadata's
fields and the architecture's would-be arrays are checked before anything is
read in full or built (:func:`_check_meta`), so a damaged or crafted file ends
in one :class:`CheckpointError`, never in another exception or a huge allocation.
"""

from __future__ import annotations

import contextlib
import json
import os
import reprlib
from dataclasses import dataclass, field

import numpy as np

from .. import npz
from ..backend import to_host
from ..errors import WordedError
from ..files import atomic_write
from ..nn.model import Sequential
from ..optim import schedules
from ..optim.optimizers import OPTIMIZERS

FORMAT = "ironlearn"
#: 2: a checkpoint may keep its model in the model file beside it, and its optimizer's moments may
#: start at a later step than 0 (what format 1 readers would misread); other files are written as 1.
FORMAT_VERSION = 2
#: What every other file is written as, so that a reader of format 1 still reads it.
PLAIN_VERSION = 1
#: A model draws a picture: it maps (x, y) to 1 channel (gray) or 3 (rgb).
IN_FEATURES, CHANNELS = 2, (1, 3)


class CheckpointError(WordedError, ValueError):
    """A checkpoint could not be written or read; the message says why and what to do (naming an
    option of the fit as :class:`~ironlearn.errors.WordedError` does)."""


def save(path, model, optimizer=None, *, step: int | None = None, seed: int | None = None,
         settings: dict | None = None, model_in: str | None = None) -> None:
    """Write ``model`` (and ``optimizer``, when given) to ``path`` atomically.

    ``step`` defaults to the optimizer's step count (0 without one).  ``model_in``, the name of a
    model file in ``path``'s folder that :func:`save` wrote with ``model`` at this step, makes a
    checkpoint of no arrays: the model is read from there, and the optimizer's moments are
    dropped (they start again from zero, should the run train on).

    Raises
    ------
    CheckpointError
        When a parameter is NaN/inf (a diverged model is never saved over a good
        one), the optimizer's schedule cannot be saved (a plain function: a
        resumed run could not continue its curve) or the file cannot be written
        (disk full, permissions).  Nothing is written then.
    """
    if optimizer is not None and not hasattr(optimizer.schedule, "config"):
        raise CheckpointError(f"refusing to save {path}: the learning-rate schedule {optimizer.schedule!r} cannot be "
                              "saved, so a resumed run could not continue it; build it with "
                              "ironlearn.optim.constant, cosine or warmup_cosine")
    arrays = {} if model_in else {f"model/{name}": to_host(value) for name, value in model.named_arrays().items()}
    bad = [name for name, value in arrays.items() if not np.isfinite(value).all()]
    if bad:
        raise CheckpointError(f"refusing to save {path}: {bad[0][6:]} holds NaN or inf values")
    meta = {"format": FORMAT, "version": PLAIN_VERSION, "architecture": model.config(),
            "parameters": model.num_parameters, "step": step or 0, "seed": seed, "settings": settings or {}}
    if optimizer is not None:
        state = optimizer.state_dict(copy=False)  # written before the next step changes it
        optimizer_step = state.pop("step")
        meta["step"] = optimizer_step if step is None else step
        meta["optimizer"] = optimizer.config()
        meta["schedule"] = optimizer.schedule.config()
        since = meta["step"] if model_in else state.pop("slots_since", 0)
        if since:
            meta["slots_since"] = since
        if not model_in:
            arrays.update({f"optim/{key}": to_host(value) for key, value in state.items()})
    if model_in:
        meta["model_in"] = model_in
    if model_in or meta.get("slots_since"):
        meta["version"] = FORMAT_VERSION
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    try:
        atomic_write(path, lambda file: np.savez(file, **arrays))
    except OSError as exc:
        raise CheckpointError(f"could not write {path}: {exc.strerror or exc}; "
                              "free some space or choose another folder (the previous file is intact)") from None


@dataclass
class Checkpoint:
    """What :func:`load` returns: a rebuilt model (on the CPU), optimizer arrays and metadata."""

    model: Sequential
    meta: dict
    optimizer_state: dict = field(default_factory=dict)

    @property
    def step(self) -> int:
        return int(self.meta.get("step", 0))

    @property
    def settings(self) -> dict:
        return self.meta.get("settings", {})

    @property
    def channels(self) -> int:
        """Channels the model draws: 1 (gray) or 3 (rgb), as :func:`load` checked."""
        return Sequential.out_features(self.meta["architecture"], IN_FEATURES)

    def optimizer(self, params: dict, schedule=None):
        """Rebuild the saved optimizer on ``params``, its step and slots restored.

        ``schedule`` replaces the saved learning-rate schedule (a resumed run may
        train longer); by default the saved one is rebuilt.
        """
        if "optimizer" not in self.meta:
            raise CheckpointError("this file holds a model without optimizer state; build a new optimizer")
        if schedule is None and "schedule" not in self.meta:
            raise CheckpointError("this checkpoint does not record its learning-rate schedule; "
                                  "pass one: checkpoint.optimizer(params, schedule=...)")
        try:
            if schedule is None:
                schedule = schedules.from_config(self.meta["schedule"])
            config = dict(self.meta["optimizer"])
            cls = OPTIMIZERS[config.pop("type").lower()]
            if "betas" in config:
                config["betas"] = tuple(config["betas"])
            optimizer = cls(params, lr=schedule, **config)
        except (AttributeError, KeyError, TypeError, ValueError) as exc:  # an edited file may hold any JSON here
            raise CheckpointError(f"the saved optimizer or schedule cannot be rebuilt ({exc}); the file was "
                                  "edited or damaged: use another copy, or fit again without {resume}",
                                  resume="resume=True") from None
        try:
            optimizer.load_state_dict({"step": self.step, "slots_since": self.meta.get("slots_since", 0),
                                       **self.optimizer_state})
        except ValueError as exc:
            raise CheckpointError(f"the saved optimizer state does not fit these parameters ({exc})") from None
        return optimizer


def load(path) -> Checkpoint:
    """Read a checkpoint or model file written by :func:`save`.

    Raises
    ------
    CheckpointError
        Missing, truncated, corrupt, foreign or newer-format files, metadata of the
        wrong types, an architecture that does not fit the stored arrays or does not
        draw a picture, or NaN/inf weights; the message names the file.
    """
    path = os.fspath(path)
    with _archive(path) as archive:
        meta = _read_meta(path, archive)
        _check_meta(path, meta, archive.members)
        arrays = {name: archive.read(name) for name in archive.members if name != "meta"}
    if "model_in" in meta:
        return Checkpoint(model=_model_beside(path, meta), meta=meta)
    state = {name[6:]: value for name, value in arrays.items() if name.startswith("model/")}
    bad = [name for name, value in state.items() if not np.isfinite(value).all()]
    if bad:  # save() refuses these; only an edited file holds them, and it would draw black
        raise CheckpointError(f"{path}: {bad[0]} holds NaN or inf values, so the model cannot draw; "
                              "use another copy or fit again")
    model = Sequential.from_config(meta["architecture"])  # the shapes were checked: this allocates what is stored
    model.load_state_dict(state, strict=True)
    optimizer_state = {k[6:]: v for k, v in arrays.items() if k.startswith("optim/")}
    return Checkpoint(model=model, meta=meta, optimizer_state=optimizer_state)


def _model_beside(path: str, meta: dict) -> Sequential:
    """The model of the finished run's checkpoint ``path``, from the model file it names (``model_in``),
    once that file is seen to hold the model this checkpoint was saved with."""
    model_path = os.path.join(os.path.dirname(path), meta["model_in"])
    if not os.path.isfile(model_path):
        raise CheckpointError(f"{path} is a finished run's and keeps its model in {model_path}, which is missing; "
                              f"put {meta['model_in']} back beside it, or fit again")
    if "model_in" in read_meta(model_path):  # before load(), which would follow it on
        raise CheckpointError(f"{path} keeps its model in {model_path}, which keeps its own elsewhere; put back "
                              f"the run's own {meta['model_in']}, or fit again")
    saved = load(model_path)
    if saved.step != meta["step"] or saved.meta["architecture"] != meta["architecture"]:
        raise CheckpointError(f"{path} keeps its model in {model_path}, which holds another model (step "
                              f"{saved.step:,}, not {meta['step']:,}); put back the run's own {meta['model_in']}, "
                              "or fit again")
    return saved.model


def read_meta(path) -> dict:
    """The metadata of a checkpoint or model file (step, settings, ...) without reading its arrays.

    The metadata is checked as :func:`load` checks it, against the arrays' headers.

    Raises
    ------
    CheckpointError
        Missing, unreadable or foreign files, or metadata that :func:`load` refuses; the message names the file.
    """
    path = os.fspath(path)
    with _archive(path) as archive:
        meta = _read_meta(path, archive)
        _check_meta(path, meta, archive.members)
    return meta


def _unreadable(path: str, why: str = "truncated or corrupt") -> CheckpointError:
    # Never NumPy's or zipfile's own text: for a file that is not an archive NumPy suggests loading
    # it "unsafely" with allow_pickle, which ironlearn must never advise.
    error = CheckpointError(f"{path}: not a readable ironlearn model or checkpoint ({why}); give the model.npz "
                            "or checkpoint.npz of a run of 'ironlearn fit', or a file of 'ironlearn compress'")
    error.why = why  # for a caller with better advice (a resume)
    return error


@contextlib.contextmanager
def _archive(path: str):
    """The archive at ``path``, open, its arrays' headers checked (:func:`ironlearn.npz.open_npz`:
    stored plain, so nothing read is larger than the file); damage becomes a CheckpointError."""
    if not os.path.isfile(path):
        raise CheckpointError(f"{path}: no such file")
    try:
        with npz.open_npz(path, deflated=False) as archive:
            yield archive
    except npz.ArchiveError as exc:
        raise _unreadable(path, exc.why) from None
    except OSError as exc:
        raise CheckpointError(f"{path}: cannot read it: {exc.strerror or exc}") from None


def _read_meta(path: str, archive):
    """The decoded JSON of the ``meta`` array (any JSON value: :func:`_check_meta` judges it)."""
    if "meta" not in archive.members:
        raise CheckpointError(f"{path}: not an ironlearn checkpoint (it holds no metadata)")
    array = archive.read("meta")
    if array.dtype != np.uint8 or array.ndim != 1:
        raise _unreadable(path)
    try:
        return json.loads(array.tobytes().decode())
    except (ValueError, RecursionError):  # not UTF-8, not JSON, or nested past Python's stack
        raise _unreadable(path, "its metadata is not JSON") from None


#: Settings that ironlearn's commands read besides ``size``, with their types.
_SETTINGS = {"input": (str, "a path"), "fingerprint": (str, "text"), "mode": (str, "text"), "model": (str, "text"),
             "model_options": (dict, "a mapping"), "metrics": (dict, "a mapping"),
             "train_seconds": ((int, float), "a number")}
#: Those of them a fit may leave null (a picture given as an array has no path).
_NULLABLE = ("input", "fingerprint")


def _is_count(value, low: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= low


def _check_meta(path: str, meta, members: dict) -> None:
    """Refuse metadata that does not describe a picture model rebuildable from the stored arrays.

    Every field the loader and the commands read is checked by type (a newer format is told to
    upgrade first: its fields may differ), and the architecture's would-be arrays are compared, by
    shape, with the stored ones before anything is built: a crafted architecture cannot make
    ironlearn allocate more than the file holds.

    Raises
    ------
    CheckpointError
        Naming the first field that is wrong.
    """
    if not isinstance(meta, dict) or meta.get("format") != FORMAT:
        raise CheckpointError(f"{path}: not an ironlearn checkpoint")
    version = meta.get("version")
    if _is_count(version, 1) and version > FORMAT_VERSION:
        raise CheckpointError(f"{path}: written in checkpoint format {version}, newer than this ironlearn "
                              f"reads ({FORMAT_VERSION}); upgrade ironlearn")
    settings = meta.get("settings", {})
    size = settings.get("size") if isinstance(settings, dict) else None
    fields = [  # (name, value, whether it is right, what it should be)
        ("version", version, _is_count(version, 1), "a whole number >= 1"),
        ("step", meta.get("step"), _is_count(meta.get("step", 0), 0), "a whole number >= 0"),
        ("seed", meta.get("seed"), meta.get("seed") is None or _is_count(meta["seed"], 0), "a whole number >= 0"),
        ("settings", settings, isinstance(settings, dict), "a mapping"),
        ("settings.size", size, size is None or (isinstance(size, list) and len(size) == 2
                                                 and all(_is_count(n, 1) for n in size)),
         "two whole numbers >= 1 (width, height)"),
        ("optimizer", meta.get("optimizer"), isinstance(meta.get("optimizer", {}), dict), "a mapping"),
        ("slots_since", meta.get("slots_since"), _is_count(meta.get("slots_since", 0), 0)
         and (not _is_count(meta.get("step", 0), 0) or meta.get("slots_since", 0) <= meta.get("step", 0)),
         "a whole number from 0 to the step"),
        ("model_in", meta.get("model_in"), "model_in" not in meta or _is_file_name(meta["model_in"], path),
         "the name of a model file beside it"),
        ("schedule", meta.get("schedule"), isinstance(meta.get("schedule", {}), dict), "a mapping"),
    ]
    if isinstance(settings, dict):
        fields += [(f"settings.{key}", settings[key], isinstance(settings[key], kind), wanted)
                   for key, (kind, wanted) in _SETTINGS.items()
                   if key in settings and not (settings[key] is None and key in _NULLABLE)]
    for name, value, right, wanted in fields:
        if not right:
            raise _edited(path, f"its {name} is {reprlib.repr(value)}, not {wanted}")
    architecture = meta.get("architecture")
    try:
        expected = Sequential.shapes(architecture)
    except ValueError as exc:
        raise _edited(path, f"its architecture cannot be built ({exc})") from None
    stored = {name[6:]: member.shape for name, member in members.items() if name.startswith("model/")}
    # Before the widths, to name an edited layer by its array; a finished run's are its model file's.
    if stored != expected and not ("model_in" in meta and not stored):
        raise _edited(path, f"arrays do not fit the saved architecture ({_difference(expected, stored)})")
    try:
        channels = Sequential.out_features(architecture, IN_FEATURES)
    except ValueError as exc:
        raise _edited(path, f"its architecture cannot be built ({exc})") from None
    if channels not in CHANNELS:
        raise CheckpointError(f"{path}: its model maps {IN_FEATURES} inputs to {channels} outputs, not to a "
                              "picture's 1 (gray) or 3 (rgb) channels; ironlearn cannot draw it")


def _is_file_name(name, path: str) -> bool:
    """Whether ``name`` names another ``.npz`` file in the folder of ``path`` (no folder in it)."""
    return (isinstance(name, str) and name.endswith(".npz") and os.path.basename(name) == name
            and name not in (".npz", os.path.basename(path)))


def _edited(path: str, what: str) -> CheckpointError:
    return CheckpointError(f"{path}: {what}; the file was edited or damaged: use another copy or fit again")


def _difference(expected: dict, stored: dict) -> str:
    """The first way ``stored`` array shapes differ from ``expected`` ones, in words."""
    for name in expected:
        if name not in stored:
            return f"{name} is missing"
        if stored[name] != expected[name]:
            return f"{name} is stored as {stored[name]}, the architecture needs {expected[name]}"
    return f"{reprlib.repr(sorted(set(stored) - set(expected)))} are not in the architecture"
