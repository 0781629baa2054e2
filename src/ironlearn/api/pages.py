"""The page that redraws a model or a compressed picture at any zoom, and the page that opens any
compressed file: ``ironlearn view``, composed once (where the page goes, what may be replaced, a
port checked before anything is written, then written and, when asked, served)."""

from __future__ import annotations

import os
from collections.abc import Callable

from .. import drawable
from ..errors import UsageError
from ..files import check_output, is_generated_page
from ..viewer import make_server, serve as serve_page, write_app, write_viewer
from ..viewer.serve import check_port
from .arguments import checked, silent

#: The page of the app (the page for any compressed file) when no ``out`` names one.
APP_PAGE = "ironlearn-viewer.html"
#: A model or compressed file past this size gets a line on the page's cost before the page is
#: written (a 201 MB model made a 261 MB page; measured: docs/any-size.md, 'Past 16.8 megapixels:
#: the same level, of 2^24 vertices').
LARGE_FILE_BYTES = 20 << 20


@checked(port=check_port)
def view(source, out=None, *, with_picture: bool | None = None, serve: bool = False, port: int | None = None,
         open_browser: bool = True, force: bool = False, log: Callable = silent) -> str:
    """Write the page that redraws the run folder, model file or compressed file at ``source``
    (one self-contained HTML file), as ``ironlearn view`` does, and return its path.

    ``out`` defaults to viewer.html beside the model (in its run folder), or NAME.html beside a
    compressed NAME.ilc; such a page that ironlearn made is rewritten, any other only with
    ``force``.  ``with_picture`` embeds the training picture (None: a run's, not a bare model
    file's).  ``serve`` then serves it on 127.0.0.1:``port`` until Ctrl-C.  ``log`` gets what
    was written and its notes.
    """
    picture = drawable.load(source)
    output = os.fspath(out) if out is not None else picture.page
    # The page ironlearn made beside the model is ironlearn's to rewrite; a page at a path the user
    # named is theirs, and is marked so, for the day it lies where another page would go.
    check_output(output, force or (out is None and is_generated_page(output)), reads=[picture.path])
    if not output.lower().endswith((".html", ".htm")):
        raise UsageError(f"{output}: view writes an HTML page; give a name ending in .html")
    if serve:  # a port in use is refused before anything is written; serve() binds it again at once
        make_server(output, port).server_close()
    if os.path.getsize(picture.path) > LARGE_FILE_BYTES:  # said before the wait, not after
        log(f"writing a page of up to about {os.path.getsize(picture.path) * 4 / 3 / 2**20:.0f} MB (the file in "
            "base64): it takes a while to write, and a browser needs several times that in memory to open it")
    notes = []
    write_viewer(picture, output, with_picture=with_picture, named=out is not None, log=notes.append)
    log(f"wrote {output} ({os.path.getsize(output) / 2**20:.1f} MB): open it in a browser, no server needed")
    for note in notes:  # the page says them too; here, before someone shares or serves it
        log(f"note: {note}")
    if serve:
        serve_page(output, port, open_browser=open_browser, log=log)
    return output


@checked(port=check_port)
def view_app(out=None, *, serve: bool = False, port: int | None = None, open_browser: bool = True,
             force: bool = False, log: Callable = silent) -> str:
    """Write the page that opens any compressed file dropped on it or picked (``ironlearn view
    --app``; default :data:`APP_PAGE` here), serve it when asked as :func:`view` does, and
    return its path."""
    output = os.fspath(out) if out is not None else APP_PAGE
    if not output.lower().endswith((".html", ".htm")):
        raise UsageError(f"{output}: view writes an HTML page; give a name ending in .html")
    check_output(output, force or (out is None and is_generated_page(output)))
    if serve:
        make_server(output, port).server_close()
    write_app(output, named=out is not None)
    log(f"wrote {output} ({os.path.getsize(output) / 2**10:.0f} KB): open it in a browser and drop an .ilc file on it")
    if serve:
        serve_page(output, port, open_browser=open_browser, log=log)
    return output

