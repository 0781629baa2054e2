"""``ironlearn view --serve``: the page over HTTP on 127.0.0.1, until Ctrl-C.

Only the page itself is served (at ``/`` and under its own name), never the
folder around it.  The page needs no server: this is for opening it in a
browser that cannot reach the file, or from another program.
"""

from __future__ import annotations

import errno
import os
import sys
import threading
import webbrowser
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from .plan import ViewerError

DEFAULT_PORT = 8000


def _handler(page_path: str):
    name = "/" + os.path.basename(page_path)

    class PageHandler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (the http.server name)
            if self.path.split("?")[0] not in ("/", name):
                self.send_error(404, "only the viewer page is served here")
                return
            with open(page_path, "rb") as file:  # read per request: a rewritten page is served fresh
                body = file.read()
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format, *args):  # one line per request would bury the URL
            pass

    return PageHandler


def _bind(page_path: str, port: int | None) -> ThreadingHTTPServer:
    """A server on ``port``; without one, on 8000 or (when taken) any free port."""
    for candidate in ([port] if port is not None else [DEFAULT_PORT, 0]):
        try:
            return ThreadingHTTPServer(("127.0.0.1", candidate), _handler(page_path))
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE or port is not None:
                raise ViewerError(f"cannot serve on 127.0.0.1:{candidate}: {exc.strerror or exc}; "
                                  "choose another --port") from None
    raise AssertionError("port 0 is always free")


def _desktop() -> bool:
    """Whether a graphical browser can open: without a display, webbrowser falls back to text
    browsers (lynx, w3m) that would take over this terminal."""
    return sys.platform in ("darwin", "win32") or bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def serve(page_path, port: int | None = None, *, open_browser: bool = True, log=print) -> None:
    """Serve the page at ``page_path`` on 127.0.0.1 until Ctrl-C; prints its URL on stdout first.

    Raises
    ------
    ViewerError
        The port is taken or cannot be bound.
    """
    page_path = os.path.abspath(os.fspath(page_path))
    server = _bind(page_path, port)
    url = f"http://127.0.0.1:{server.server_port}/{os.path.basename(page_path)}"
    thread = threading.Thread(target=server.serve_forever, name="ironlearn-view", daemon=True)
    thread.start()
    print(url, flush=True)
    if open_browser and _desktop() and webbrowser.open(url):
        log(f"opened {url} in the browser; Ctrl-C stops the server")
    else:
        log(f"serving the viewer at {url}; open it in a browser, Ctrl-C stops the server")
    try:
        while thread.is_alive():
            thread.join(0.5)
    except KeyboardInterrupt:
        log("stopped serving")
    finally:
        server.shutdown()
        server.server_close()
