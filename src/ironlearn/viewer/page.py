"""One self-contained HTML page per model, or per compressed picture: the templates in ``static/``
with the model, or the file, inlined.

The page needs nothing but itself: a model's weights travel deflated and base64'd inside a JSON
block (:mod:`.packing`), a compressed picture as its file's own bytes, which the page decodes with
its decoder (``static/ilcfile.js``, ``static/ilcdecode.js``, and the format's numbers generated
from the codec: :mod:`.format_data`), as the page for any file (``view --app``) decodes a file
dropped on it.  Pictures travel as data URLs, the script and the style inline.  It opens from
``file://`` and never touches the network.
"""

from __future__ import annotations

import base64
import functools
import html
import json
import os
import re
from importlib import resources

from .. import codec, drawable
from ..errors import OptionError
from ..files import NAMED_PAGE, PAGE_GENERATOR, write_bytes
from ..version import __version__
from .format_data import FORMAT_SCRIPT, format_script
from .packing import pack
from .plan import MAX_TEXTURE_ROWS, ROW_TEXELS, DrawingPlan, ViewerError, build_plan, check_texture, texture_shape
from .run import MAX_ORIGINAL_SIDE, collect_extras
from .shader import fragment_shader, template

#: The page's script files, inlined in this order, each in a <script> named by its ``data-file``.
SCRIPTS = ("network.js", "unpack.js", "painter.js", "viewer.js")
#: What reads a file: the page starts a worker from its own copies of these (``viewer.js``'s
#: ``IL.readIlcOffThread`` finds them by ``data-worker``), so that decoding never freezes it;
#: ``format.js`` is generated (:func:`.format_data.format_script`).
DECODER_SCRIPTS = ("network.js", "unpack.js", FORMAT_SCRIPT, "ilcfile.js", "ilcdecode.js")
#: The page of a compressed picture, and the page for any (``view --app``), also read and draw the file.
PICTURE_SCRIPTS = (*DECODER_SCRIPTS, "picture.js", "painter.js", "viewer.js")
#: The shader templates a compressed picture's operations use (``picture.js`` fills them in).
PICTURE_TEMPLATES = ("prelude", "main", "latents", "latents_level", "linear", "activation", "mix", "mix_term")
#: What a page that draws no model yet holds in the fields a model's page fills.
_NO_MODEL = {"model": None, "preset": None, "picture": {"width": None, "height": None, "mode": None},
             "ops": None, "output": None, "texture": None, "weights": None, "shader": None, "metrics": {},
             "original": None, "timelapse": None, "lossPlot": None, "history": None, "notes": []}


#: A lone surrogate: how Python holds each byte of a file name that is not UTF-8 (``os.fsdecode``).
_SURROGATE = re.compile("[\ud800-\udfff]")


def readable(text: str) -> str:
    """``text`` as a page can hold it: each lone surrogate (a byte of a file name that is not
    UTF-8, ``caf\\xe9.ilc``) becomes U+FFFD, which UTF-8 can write and a browser shows."""
    return _SURROGATE.sub("\ufffd", text)


def _static(name: str) -> str:
    return (resources.files(__package__) / "static" / name).read_text(encoding="utf-8")


def payload(source, max_original_side: int = MAX_ORIGINAL_SIDE, *, with_picture: bool | None = None) -> dict:
    """Everything the page reads about the picture at ``source`` (a run folder or model file, a
    file of ``ironlearn compress``, or what :func:`ironlearn.drawable.load` returned), JSON-ready:
    :func:`run_payload` or :func:`file_payload`, by the picture's kind.

    ``with_picture`` None embeds the training picture for a run's model and not for a bare
    model file (see :mod:`.run`); True or False decides for either.  Either way the picture
    must have the fingerprint the run saved.

    Raises
    ------
    ViewerError
        A layer the page cannot draw, or a compressed file that is damaged.
    CheckpointError
        No model there, not an ironlearn model, or a newer format.
    OptionError
        ``with_picture`` True for a compressed file, which holds no training picture.
    """
    try:
        return picture_payload(drawable.picture(source), max_original_side, with_picture)
    except codec.CodecError as exc:
        raise ViewerError(str(exc)) from None


@functools.singledispatch
def picture_payload(picture, max_original_side: int, with_picture: bool | None) -> dict:
    """What the page reads about ``picture``, by its kind (a page for each kind of
    :class:`~ironlearn.drawable.Picture`, registered below)."""
    raise TypeError(f"no page for a {type(picture).__name__}")


@picture_payload.register
def run_payload(picture: drawable.Run, max_original_side: int = MAX_ORIGINAL_SIDE,
                with_picture: bool | None = None) -> dict:
    """The page of a fitted run's model: the network, its run's metrics and extras."""
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


@picture_payload.register
def file_payload(picture: drawable.CompressedFile, max_original_side: int = MAX_ORIGINAL_SIDE,
                 with_picture: bool | None = None) -> dict:
    """What the page of a compressed file reads, JSON-ready: the file's own bytes (``file``: its
    ``name`` and base64 ``data``) and the decoder (:func:`_decoder`).  The page decodes the file
    and draws it as ``view --app`` draws a file dropped on it (``static/picture.js``).  The file
    is decoded here first, so that a damaged one is refused before any page is written
    (:class:`~ironlearn.codec.CodecError`); it holds no training picture to embed."""
    if with_picture:
        raise OptionError("a compressed file holds no training picture to embed; leave out {with_picture}",
                          with_picture="with_picture=True")
    header, name = picture.header, readable(os.path.basename(picture.path or "picture.ilc"))
    coded = [any(grid[3] for grid in header.grids[k * header.channels:(k + 1) * header.channels])
             for k in range(header.levels)]
    # A cell a texel for each level that codes anything, one for an empty one (picture.js's picturePlan).
    check_texture(sum(h * w if any_coded else 1 for (h, w), any_coded in zip(header.grid_shapes, coded)),
                  f"{name}: its latents")
    picture.decoded  # decoded for its checks alone: a page is written only for a file that Python reads
    return {"title": f"{name}: ironlearn viewer", **_NO_MODEL, "version": __version__, "codec": _decoder(),
            "file": {"name": name, "data": base64.b64encode(picture.data).decode("ascii")}}


def app_payload() -> dict:
    """What the page for any compressed file reads (``ironlearn view --app``), JSON-ready: no
    picture, but the decoder (:func:`_decoder`) that decodes a file dropped on it and draws it
    as the file's own page does (:func:`file_payload`)."""
    return {"title": "ironlearn viewer: open a compressed picture", "app": True, **_NO_MODEL, "version": __version__,
            "codec": _decoder()}


def _decoder() -> dict:
    """What a page needs to decode and draw a file beyond its scripts (the format's numbers are
    ``format.js``'s): the range decoder compiled to WebAssembly (``static/rangedecoder.wasm``),
    the weight texture's row and most rows, and the shader templates."""
    wasm = (resources.files(__package__) / "static" / "rangedecoder.wasm").read_bytes()
    return {"rangeDecoder": base64.b64encode(wasm).decode("ascii"), "rowTexels": ROW_TEXELS,
            "maxTextureRows": MAX_TEXTURE_ROWS,
            "templates": {name: template(name).template for name in PICTURE_TEMPLATES}, "version": __version__}


def _drawing(plan: DrawingPlan) -> dict:
    """The payload's part that draws: the plan's operations, packed numbers and shader."""
    check_texture(plan.texels, "the model's weights")
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


def _script(name: str) -> str:
    return format_script() if name == FORMAT_SCRIPT else _static(name)


def render_page(data: dict, scripts=None) -> str:
    """The HTML of the page for a :func:`payload`, with ``scripts`` (those of ``static/``, or the
    generated ``format.js``) inlined in order: by default :data:`SCRIPTS` for a model's page, and
    :data:`PICTURE_SCRIPTS` for a page that decodes a file, whose :data:`DECODER_SCRIPTS` are
    marked ``data-worker``."""
    if scripts is None:
        scripts = PICTURE_SCRIPTS if "codec" in data else SCRIPTS
    decodes = set(DECODER_SCRIPTS) <= set(scripts)
    tags = [f'<script data-file="{name}"{" data-worker" if decodes and name in DECODER_SCRIPTS else ""}>\n'
            f'{_script(name)}</script>' for name in scripts]
    # "<" escaped inside the JSON so no string in it can close the <script> block.
    blob = json.dumps(data, separators=(",", ":")).replace("<", "\\u003c")
    values = {"@title": html.escape(readable(data["title"])), "/*@style*/": _static("viewer.css"), "/*@data*/": blob,
              "/*@script*/": "\n".join(tags)}
    page = _static("viewer.html")
    for marker in values:
        if page.count(marker) != 1:
            raise RuntimeError(f"viewer.html must hold {marker} exactly once")
    # One pass: what goes in (a title, the data) is never scanned for markers again.
    return re.sub("|".join(map(re.escape, values)), lambda match: values[match[0]], page)


def write_app(out_html, *, named: bool = False) -> str:
    """Write the page for any compressed file (:func:`app_payload`) to ``out_html``, atomically;
    ``named`` as for :func:`write_viewer`.  Returns ``out_html``."""
    page = render_page(app_payload())
    if named:
        page = page.replace(PAGE_GENERATOR, f"{PAGE_GENERATOR}\n{NAMED_PAGE}", 1)
    write_bytes(out_html, page.encode("utf-8"))
    return os.fspath(out_html)


def write_viewer(source, out_html, *, max_original_side: int = MAX_ORIGINAL_SIDE,
                 with_picture: bool | None = None, named: bool = False, log=None) -> str:
    """Write the viewer page for ``source`` (a run folder or a model .npz) to ``out_html``, atomically.

    Parameters
    ----------
    source : str, path or Picture
        A run folder of ``ironlearn fit`` (its model.npz, else its checkpoint.npz), a model file,
        or a file of ``ironlearn compress`` (whose page carries the file and decodes it); or
        what :func:`ironlearn.drawable.load` read from one.
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
