"""``ironlearn view``: the web page that redraws a model, or a compressed picture, at any zoom."""

from __future__ import annotations

from ..api import APP_PAGE, view, view_app
from ..errors import UsageError
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


def cmd_view(args) -> int:
    if not args.serve and (args.port is not None or args.no_browser):
        flag = "--port" if args.port is not None else "--no-browser"
        raise UsageError(f"{flag} is for serving the page; add --serve, or drop {flag}")
    serving = {"serve": args.serve, "port": args.port, "open_browser": not args.no_browser, "log": say}
    if not args.app:
        if args.source is None:
            raise UsageError("view needs a run folder, a model file or a compressed file; or --app for the page "
                             "that opens any compressed file")
        view(args.source, args.output, with_picture=args.with_picture, force=args.force, **serving)
        return ExitCode.OK
    if args.source is not None:
        raise UsageError(f"--app writes a page with no picture; leave out {args.source} (or drop --app to "
                         "write that file's own page)")
    if args.with_picture is not None:
        raise UsageError("--app writes a page with no picture; leave out --with-picture / --without-picture")
    view_app(args.output, force=args.force, **serving)
    return ExitCode.OK
