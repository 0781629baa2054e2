"""One self-contained HTML page per model (or compressed picture): the templates in ``static/``
with the model inlined.

The page needs nothing but itself: the weights travel deflated and base64'd inside a JSON
block (a compressed picture's grids as their integers: :mod:`.packing`), pictures as data
URLs, the script and the style inline.  It
opens from ``file://`` and never touches the network.
"""

from __future__ import annotations

import base64
import html
import json
import math
import os
import re
from importlib import resources

from .. import codec, drawable
from ..codec.bitstream import entropy
from ..codec.model.latents import COLOURS, CUBIC, CUBIC_BEFORE_5
from ..codec.model.network import FEATURE_GAIN
from ..files import NAMED_PAGE, PAGE_GENERATOR, write_bytes
from ..version import __version__
from .packing import pack
from .plan import ROW_TEXELS, Plan, ViewerError, build_picture_plan, build_plan, texture_shape
from .run import MAX_ORIGINAL_SIDE, collect_extras
from .shader import fragment_shader, template

#: The page's script files, inlined in this order, each in a <script> named by its ``data-file``.
SCRIPTS = ("network.js", "unpack.js", "painter.js", "viewer.js")
#: The page for any compressed file (``view --app``) also reads and draws the file itself.
APP_SCRIPTS = ("network.js", "unpack.js", "ilcfile.js", "ilcdecode.js", "picture.js", "painter.js", "viewer.js")
#: The shader templates a compressed picture's operations use (``picture.js`` fills them in).
PICTURE_TEMPLATES = ("prelude", "main", "latents", "latents_level", "linear", "activation", "mix", "mix_term")


def _static(name: str) -> str:
    return (resources.files(__package__) / "static" / name).read_text(encoding="utf-8")


def payload(source, max_original_side: int = MAX_ORIGINAL_SIDE, *, with_picture: bool | None = None) -> dict:
    """Everything the page reads about the model at ``source`` (a run folder or model file, or a
    file of ``ironlearn compress``: :func:`picture_payload`), JSON-ready.

    ``with_picture`` None embeds the training picture for a run's model and not for a bare
    model file (see :mod:`.run`); True or False decides for either.  Either way the picture
    must have the fingerprint the run saved.

    Raises
    ------
    ViewerError
        A layer the page cannot draw, or a compressed file that is damaged.
    CheckpointError
        No model there, not an ironlearn model, or a newer format.
    """
    try:
        picture = drawable.open(source)
        if isinstance(picture, drawable.CompressedFile):
            return picture_payload(picture.decoded, os.path.basename(picture.path), file_bytes=len(picture.data))
    except codec.CodecError as exc:
        raise ViewerError(str(exc)) from None
    in_a_run = picture.folder is not None
    extras = collect_extras(picture.folder, picture.settings, max_original_side,
                            with_picture=in_a_run if with_picture is None else with_picture)
    return model_payload(picture.model, picture.settings, extras, step=picture.step,
                         title=_title(picture.path, picture.settings))


def model_payload(model, settings: dict, extras, *, step: int, title: str, drawn: bool = True) -> dict:
    """What the page reads about ``model`` (a :class:`~ironlearn.nn.Sequential`, on any device)
    with its run's ``settings`` and ``extras`` (a :class:`~.run.RunExtras`), JSON-ready; ``drawn``
    False leaves the weights out (a page that gets them later, :mod:`.live`)."""
    size = settings.get("size") or [None, None]  # a model saved by the library alone: shown square
    metrics = {"params": model.num_parameters, "steps": step, **extras.metrics}
    drawing = _drawing(build_plan(model)) if drawn else {"ops": None, "output": None, "texture": None,
                                                         "weights": None, "shader": None}
    return {
        "title": title,
        "model": repr(model),
        "preset": settings.get("model"),
        "picture": {"width": size[0], "height": size[1], "mode": settings.get("mode")},
        **drawing,
        "metrics": metrics,
        "original": extras.original,
        "timelapse": extras.timelapse,
        "lossPlot": extras.loss_plot,
        "history": extras.history,
        "notes": extras.notes,
        "version": __version__,
    }


def picture_payload(decoded, name: str = "compressed picture", *, file_bytes: int | None = None) -> dict:
    """What the page reads about a compressed picture (a :class:`~ironlearn.codec.Decoded`),
    JSON-ready: the page draws it per screen pixel as it draws a model, from its latent grids
    (and its MLP); ``name`` titles it, and ``file_bytes``, when given, is the file's size."""
    pyramid = decoded.pyramid
    grids = ", ".join(f"{g.shape[2]}x{g.shape[1]}" for g in pyramid.latents)
    filtered = [str(k) for k, found in enumerate(pyramid.filters) if found is not None]
    described = (f"latent pyramid: {pyramid.levels} levels of {decoded.channels} grid(s) ({grids}), "
                 + (f"levels {', '.join(filtered)} filtered, " if filtered else "")
                 + "read by Keys' cubic convolution and summed"
                 + (f"\nplus the MLP's correction: {decoded.net!r}" if decoded.net is not None else ""))
    metrics = {"params": decoded.num_parameters}
    if file_bytes is not None:
        metrics.update(bytes=file_bytes, bpp=8 * file_bytes / (decoded.width * decoded.height))
    return {
        "title": f"{name}: ironlearn viewer",
        "model": described,
        "preset": "compressed picture",
        "picture": {"width": decoded.width, "height": decoded.height, "mode": decoded.mode},
        **_drawing(build_picture_plan(decoded)),
        "metrics": metrics,
        "original": None,
        "timelapse": None,
        "lossPlot": None,
        "history": None,
        "notes": [],
        "version": __version__,
    }


def app_payload() -> dict:
    """What the page for any compressed file reads (``ironlearn view --app``), JSON-ready: no
    picture, but what the page needs to decode and draw a file dropped on it (``codec``): the
    range decoder compiled to WebAssembly (``static/rangedecoder.wasm``), the constants of the
    entropy model and the synthesis that the header reader (``static/ilcfile.js``, which holds
    the header's bounds) does not, and the shader templates.  The page draws a file as
    :func:`picture_payload` would (``static/picture.js``)."""
    wasm = (resources.files(__package__) / "static" / "rangedecoder.wasm").read_bytes()
    return {
        "title": "ironlearn viewer: open a compressed picture",
        "app": True,
        "model": None, "preset": None, "picture": {"width": None, "height": None, "mode": None},
        "ops": None, "output": None, "texture": None, "weights": None, "shader": None,
        "metrics": {}, "original": None, "timelapse": None, "lossPlot": None, "history": None, "notes": [],
        "version": __version__,
        "codec": {
            "rangeDecoder": base64.b64encode(wasm).decode("ascii"),
            # Format 5's class logarithms, the C library's (the page computes format 6's itself).
            "classLogActivity": [float(x) for x in entropy.class_log_activity(math.log)],
            "slopeSteps": entropy.SLOPE_STEPS,
            "colours": {channels: matrix.tolist() for channels, matrix in COLOURS.items()},
            "featureGain": FEATURE_GAIN, "cubic": CUBIC, "cubicBefore5": CUBIC_BEFORE_5, "rowTexels": ROW_TEXELS,
            "templates": {name: template(name).template for name in PICTURE_TEMPLATES},
            "version": __version__,
        },
    }


def _drawing(plan: Plan) -> dict:
    """The payload's part that draws: the plan's operations, packed numbers and shader."""
    return {
        "ops": plan.ops,
        "output": plan.output,
        "texture": list(texture_shape(plan)),
        "weights": pack(plan),
        "shader": fragment_shader(plan),
    }


def _title(model_path, settings: dict) -> str:
    picture = os.path.basename(settings["input"]) if settings.get("input") else os.path.basename(model_path)
    return f"{picture}: ironlearn viewer"


def render_page(data: dict, scripts=SCRIPTS) -> str:
    """The HTML of the page for a :func:`payload`, with the ``scripts`` of ``static/`` inlined in order."""
    # "<" escaped inside the JSON so no string in it can close the <script> block.
    blob = json.dumps(data, separators=(",", ":")).replace("<", "\\u003c")
    values = {"@title": html.escape(data["title"]), "/*@style*/": _static("viewer.css"), "/*@data*/": blob,
              "/*@script*/": "\n".join(f'<script data-file="{name}">\n{_static(name)}</script>' for name in scripts)}
    page = _static("viewer.html")
    for marker in values:
        if page.count(marker) != 1:
            raise RuntimeError(f"viewer.html must hold {marker} exactly once")
    # One pass: what goes in (a title, the data) is never scanned for markers again.
    return re.sub("|".join(map(re.escape, values)), lambda match: values[match[0]], page)


def write_app(out_html, *, named: bool = False) -> str:
    """Write the page for any compressed file (:func:`app_payload`) to ``out_html``, atomically;
    ``named`` as for :func:`write_viewer`.  Returns ``out_html``."""
    page = render_page(app_payload(), APP_SCRIPTS)
    if named:
        page = page.replace(PAGE_GENERATOR, f"{PAGE_GENERATOR}\n{NAMED_PAGE}", 1)
    write_bytes(out_html, page.encode("utf-8"))
    return os.fspath(out_html)


def write_viewer(source, out_html, *, max_original_side: int = MAX_ORIGINAL_SIDE,
                 with_picture: bool | None = None, named: bool = False, log=None) -> str:
    """Write the viewer page for ``source`` (a run folder or a model .npz) to ``out_html``, atomically.

    Parameters
    ----------
    source : str or path
        A run folder of ``ironlearn fit`` (its model.npz, else its checkpoint.npz), a model file,
        or a file of ``ironlearn compress``.
    out_html : str or path
        The page to write (replaced if it exists).
    max_original_side : int
        The training picture is embedded downscaled to at most this many pixels a side.
    with_picture : bool or None
        Embed the training picture: None for a run's model only (see :func:`payload`).
    named : bool
        ``out_html`` is a path the user named: the page is marked as theirs
        (:data:`~ironlearn.files.NAMED_PAGE`), so no later command rewrites it unasked.
    log : callable or None
        Called with each note about what the page leaves out (the training picture not found, a
        time-lapse too large), which the page shows too.

    Returns
    -------
    str
        ``out_html``.
    """
    data = payload(source, max_original_side, with_picture=with_picture)
    page = render_page(data)
    if named:
        page = page.replace(PAGE_GENERATOR, f"{PAGE_GENERATOR}\n{NAMED_PAGE}", 1)
    write_bytes(out_html, page.encode("utf-8"))
    for note in data["notes"] if log is not None else []:
        log(note)
    return os.fspath(out_html)
