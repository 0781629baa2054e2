"""``ironlearn view``: the web page that redraws a model, or a compressed picture, at any zoom."""

from __future__ import annotations

import os

from .. import drawable
from ..files import check_output
from ..files import is_generated_page
from ..fitting import UsageError
from ..viewer import make_server, serve, write_app, write_viewer
from .argtypes import port_arg
from .common import say
from .status import ExitCode


def add_parser(commands) -> None:
    view_p = commands.add_parser("view", help="write a web page that redraws the model or compressed picture "
                                              "at any zoom",
                                 description="Write one self-contained HTML page (weights embedded, no network, "
                                             "opens from file://) that evaluates the model per screen pixel with "
                                             "WebGL2: drag to pan, wheel, pinch or +/- to zoom, beside the "
                                             "training picture, time-lapse and metrics of the run. For a file of "
                                             "'ironlearn compress', the page draws the picture from its latent "
                                             "grids (and MLP) per screen pixel the same way. With --app, a page "
                                             "with no picture: drop any such file on it, or pick one, and it "
                                             "decodes and draws it (one page to share beside small files).")
    view_p.add_argument("source", metavar="RUN_DIR|MODEL.npz|FILE", nargs="?",
                        help="run folder of 'ironlearn fit', a model file, or a file 'ironlearn compress' wrote")
    view_p.add_argument("--app", action="store_true",
                        help="write the page for any compressed file instead (no SOURCE; default "
                             f"{APP_PAGE} here): it opens .ilc files dropped on it or picked, in the browser")
    view_p.add_argument("-o", "--output", metavar="PAGE.html",
                        help="page to write (default: viewer.html in the run folder, or beside the model file; "
                             "NAME.html beside a compressed NAME.ilc)")
    view_p.add_argument("--serve", action="store_true", help="also serve the page on 127.0.0.1 until Ctrl-C")
    view_p.add_argument("--port", type=port_arg, metavar="N", help="port for --serve (default 8000, or a free "
                                                                    "one when 8000 is taken)")
    view_p.add_argument("--no-browser", action="store_true", help="with --serve, do not open a browser")
    view_p.add_argument("--force", action="store_true",
                        help="replace the page at -o if it exists (the default page beside the model is "
                             "rewritten anyway when ironlearn made it)")
    picture_p = view_p.add_mutually_exclusive_group()
    picture_p.add_argument("--with-picture", dest="with_picture", action="store_const", const=True,
                           help="embed the training picture the model names also for a bare model file (one not "
                                "named model.npz or checkpoint.npz); a run's is embedded by default. Either way "
                                "only if it is the picture the model was fitted on")
    picture_p.add_argument("--without-picture", dest="with_picture", action="store_const", const=False,
                           help="leave the training picture out, also for a run (a page to share)")
    view_p.set_defaults(func=cmd_view)


#: The page of ``view --app`` when no ``-o`` names one.
APP_PAGE = "ironlearn-viewer.html"


def _write_app(args) -> int:
    """``view --app``: the page that opens any compressed file."""
    if args.source is not None:
        raise UsageError(f"--app writes a page with no picture; leave out {args.source} (or drop --app to "
                         "write that file's own page)")
    if args.with_picture is not None:
        raise UsageError("--app writes a page with no picture; leave out --with-picture / --without-picture")
    output = args.output or APP_PAGE
    if not output.lower().endswith((".html", ".htm")):
        raise UsageError(f"{output}: view writes an HTML page; give a name ending in .html")
    check_output(output, args.force or (args.output is None and is_generated_page(output)))
    if args.serve:
        make_server(output, args.port).server_close()
    write_app(output, named=args.output is not None)
    say(f"wrote {output} ({os.path.getsize(output) / 2**10:.0f} KB): open it in a browser and drop an .ilc file on it")
    if args.serve:
        serve(output, args.port, open_browser=not args.no_browser, log=say)
    return ExitCode.OK


#: A model file past this size gets a line on the page's cost before the page is written (a
#: 4096x4096 run's 201 MB model made a 243 MB page).
LARGE_MODEL_BYTES = 20 << 20


def _default_page(model_path: str, compressed: bool) -> str:
    """viewer.html beside a model (in its run folder); NAME.html beside a compressed NAME.ilc, so
    that two pictures in one folder get two pages."""
    if compressed:
        stem, suffix = os.path.splitext(os.path.abspath(model_path))
        return stem + (".html" if suffix.lower() not in (".html", ".htm") else ".viewer.html")
    return os.path.join(os.path.dirname(os.path.abspath(model_path)), "viewer.html")


def cmd_view(args) -> int:
    if not args.serve and (args.port is not None or args.no_browser):
        flag = "--port" if args.port is not None else "--no-browser"
        raise UsageError(f"{flag} is for serving the page; add --serve, or drop {flag}")
    if args.app:
        return _write_app(args)
    if args.source is None:
        raise UsageError("view needs a run folder, a model file or a compressed file; or --app for the page "
                         "that opens any compressed file")
    model_path = drawable.locate(args.source)
    compressed = drawable.is_compressed(model_path)
    if compressed and args.with_picture:
        raise UsageError("a compressed file holds no training picture to embed; leave out --with-picture")
    output = args.output or _default_page(model_path, compressed)
    # The page ironlearn made beside the model is ironlearn's to rewrite; a page at a path the user
    # named is theirs, and is marked so, for the day it lies where another page would go.
    check_output(output, args.force or (args.output is None and is_generated_page(output)), reads=[model_path])
    if not output.lower().endswith((".html", ".htm")):
        raise UsageError(f"{output}: view writes an HTML page; give a name ending in .html")
    if args.serve:  # a port in use is refused before anything is written; serve() binds it again at once
        make_server(output, args.port).server_close()
    if not compressed and os.path.getsize(model_path) > LARGE_MODEL_BYTES:  # said before the wait, not after
        say(f"writing a page of up to about {os.path.getsize(model_path) * 4 / 3 / 2**20:.0f} MB (the model's weights "
            "in base64): it takes a while to write, and a browser needs several times that in memory to open it")
    notes = []
    write_viewer(model_path, output, with_picture=args.with_picture, named=args.output is not None,
                 log=notes.append)
    say(f"wrote {output} ({os.path.getsize(output) / 2**20:.1f} MB): open it in a browser, no server needed")
    for note in notes:  # the page says them too; here, before someone shares or serves it
        say(f"note: {note}")
    if args.serve:
        serve(output, args.port, open_browser=not args.no_browser, log=say)
    return ExitCode.OK
