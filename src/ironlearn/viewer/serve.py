"""``ironlearn view --serve``: the page over HTTP on 127.0.0.1, until Ctrl-C.

Only the page itself is served (at ``/`` and under its own name), never the
folder around it.  The page needs no server: this is for opening it in a
browser that cannot reach the file, or from another program.

Binding 127.0.0.1 keeps other machines out, but not other web sites: a page
from anywhere can point a name of its own at 127.0.0.1 (DNS rebinding) and
read what it fetches there.  Its requests carry that name in the Host header,
so the page goes only to requests addressed to 127.0.0.1, localhost or [::1]
at this port; any other Host, or none, gets 403.

A client that opens connections and sends nothing (or a request's head, or a POST whose body never
comes) holds a thread of the server while it waits.  So a connection is dropped when one read or
write takes over :data:`REQUEST_SECONDS`, at most :data:`WORKERS` are served at once, and past that
a new connection takes the place of the oldest one that is still *asking*: one whose answer has not
begun (idle, slow to send its request, or kept open for another).  A connection being answered is
never dropped for a new one, so clients that connect, send nothing and connect again each time
they are dropped take each other's places and never cut a download of the page, however large
(they did when the oldest connection went first); a new connection waits only while every worker
is answering.  Hundreds of idle connections neither use up the process's threads nor keep a fresh
page out.
"""

from __future__ import annotations

import errno
import os
import shutil
import socket
import sys
import threading
import urllib.parse
import webbrowser
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from ..checks import is_whole
from ..signals import Terminated
from .plan import ViewerError

DEFAULT_PORT = 8000
LOCAL_NAMES = ("127.0.0.1", "localhost", "[::1]")  # the only Host names answered
#: Bytes of the page read and sent at a time: what each open request holds, whatever the page's size.
SEND_PIECE = 1 << 20
#: Seconds a connection may take over any one read or write (its request's head, a POST's body, a
#: piece of the page, a live snapshot of up to 16 MiB) before it is dropped: a local browser takes
#: milliseconds.
REQUEST_SECONDS = 5.0
#: Connections served at once, a thread each: a browser opens at most 6 to one server.
WORKERS = 32


def check_port(port) -> None:
    """TypeError unless ``port`` is None or a whole number (``True`` would be port 1), ValueError
    unless it is from 0 (any free port) to 65535, as ``--port`` is checked."""
    if port is None:
        return
    if not is_whole(port):
        raise TypeError(f"port must be a whole number from 0 to 65535 (got {port!r})")
    if not 0 <= port <= 65535:
        raise ValueError(f"port must be from 0 (any free port) to 65535 (got {port})")


def local_hosts(port: int) -> set[str]:
    """The Host header values a request to this machine at ``port`` carries (without the port
    on 80, as browsers send it)."""
    return {f"{name}:{port}" for name in LOCAL_NAMES} | (set(LOCAL_NAMES) if port == 80 else set())


def refused_host(handler: BaseHTTPRequestHandler) -> bool:
    """Answer 403 and return True unless the request carries one Host header, of this machine at
    this server's port (DNS rebinding, above)."""
    port = handler.server.server_port
    hosts = handler.headers.get_all("Host", [])
    if len(hosts) == 1 and hosts[0].strip().lower() in local_hosts(port):
        return False
    handler.send_error(HTTPStatus.FORBIDDEN, explain=f"this server answers only requests to 127.0.0.1:{port}, "
                                                     f"localhost:{port} or [::1]:{port}")
    return True


class _Tracked:
    """Mixed into a :class:`QuietServer`'s handler: tells the server when a connection's answer
    begins (its status line) and when the connection asks again (kept open for another request)."""

    def send_response_only(self, code, message=None):
        self.server.answering(self.request)
        super().send_response_only(code, message)

    def handle_one_request(self):
        try:
            super().handle_one_request()
        finally:
            self.server.asking(self.request)


#: What a :class:`QuietServer` knows of each connection it serves.
ASKING, ANSWERING, DROPPED = "asking", "answering", "dropped"


class QuietServer(ThreadingHTTPServer):
    """A thread per connection, at most :data:`WORKERS` at once, each connection dropped after
    :data:`REQUEST_SECONDS` stalled in a read or write; past the cap a new connection takes the
    place of the oldest one whose answer has not begun, never of one being answered (the module's
    docstring says why); no traceback for a client that hangs up or stalls."""

    # Connections the system holds until they are accepted: past socketserver's 5, the next one of
    # a burst would wait a second (the system drops its opening packet; the client sends it again).
    request_queue_size = 128

    def __init__(self, address, handler):
        super().__init__(address, type(handler.__name__, (_Tracked, handler), {}))
        self._open = {}  # each connection being served -> ASKING, ANSWERING or DROPPED; oldest first
        self._changed = threading.Condition()  # a connection served, or asking again, or stopping
        self._stopping = False

    def process_request(self, request, client_address):
        with self._changed:
            while len(self._open) >= WORKERS:
                if self._stopping:
                    self.shutdown_request(request)
                    return
                self._drop_one_asking()
                self._changed.wait()  # its thread ends at once; or an answer ends, or one asks again
            self._open[request] = ASKING
        request.settimeout(REQUEST_SECONDS)
        try:
            super().process_request(request, client_address)
        except BaseException:  # no thread started: it would never give its place back
            self._served(request)
            raise

    def process_request_thread(self, request, client_address):
        try:
            super().process_request_thread(request, client_address)
        finally:
            self._served(request)

    def answering(self, request) -> None:
        """``request``'s answer has begun: it is not dropped for a new connection from now on."""
        self._mark(request, ASKING, ANSWERING)

    def asking(self, request) -> None:
        """``request`` has been answered and waits for another request (or is closing)."""
        self._mark(request, ANSWERING, ASKING)

    def shutdown(self):
        with self._changed:  # a new connection waiting for a place waits no more
            self._stopping = True
            self._changed.notify_all()
        super().shutdown()

    def _mark(self, request, was: str, now: str) -> None:
        with self._changed:
            if self._open.get(request) == was:
                self._open[request] = now
                self._changed.notify_all()

    def _served(self, request) -> None:
        with self._changed:
            self._open.pop(request, None)
            self._changed.notify_all()

    def _drop_one_asking(self) -> None:
        """Hang up the oldest connection whose answer has not begun (its lock held), so that its
        thread's read ends at once: a flood of idle connections costs a fresh one no wait, and
        costs a download under way nothing."""
        asking = next((connection for connection, state in self._open.items() if state == ASKING), None)
        if asking is None:
            return
        self._open[asking] = DROPPED
        try:
            asking.shutdown(socket.SHUT_RDWR)
        except OSError:  # its thread has just closed it
            pass

    def handle_error(self, request, client_address):
        # A browser that hangs up (a closed tab, a cancelled load) or a client that stalls past
        # REQUEST_SECONDS is no error of ours: no traceback on the user's terminal.
        if not isinstance(sys.exc_info()[1], (ConnectionError, TimeoutError)):
            super().handle_error(request, client_address)


def page_address(page_path) -> str:
    """The path of the page's URL: ``/`` and its file name, percent-encoded from the name's bytes,
    as a browser sends it back (a space, a ``#``, or a name that is not UTF-8)."""
    return "/" + urllib.parse.quote(os.fsencode(os.path.basename(page_path)))


def _handler(page_path: str, log):
    addresses = (b"/", b"/" + os.fsencode(os.path.basename(page_path)))
    told = threading.Event()  # the terminal has been told that the page is gone, since it last was there

    class PageHandler(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (the http.server name)
            self._answer(with_body=True)

        def do_HEAD(self):  # noqa: N802
            self._answer(with_body=False)

        def _answer(self, with_body: bool):
            if refused_host(self):
                return
            if urllib.parse.unquote_to_bytes(self.path.split("?")[0]) not in addresses:
                self.send_error(HTTPStatus.NOT_FOUND, "only the viewer page is served here")
                return
            # Opened per request, so a rewritten page is served fresh (os.replace leaves this open
            # file whole), and sent in pieces: a slow reader of a large page holds one piece.
            try:
                file = open(page_path, "rb")
            except OSError as exc:
                self._gone(exc)
                return
            told.clear()
            with file:
                self.send_response(HTTPStatus.OK)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(os.fstat(file.fileno()).st_size))
                self.send_header("Cache-Control", "no-store")
                self.end_headers()
                if with_body:
                    shutil.copyfileobj(file, self.wfile, SEND_PIECE)

        def _gone(self, exc: OSError):
            """A 404 that says so, and one line on the terminal while the page stays away (a
            browser that asks again and again adds none)."""
            self.send_error(HTTPStatus.NOT_FOUND, "the page is no longer where ironlearn view wrote it",
                            f"{os.path.basename(page_path)} was moved or deleted; run ironlearn view again to write it")
            if not told.is_set():
                told.set()
                log(f"the page {page_path} cannot be read ({exc.strerror or exc}): it was moved or deleted; "
                    "requests get 404 until it is back (run ironlearn view again to write it)")

        def log_message(self, format, *args):  # one line per request would bury the URL
            pass

    return PageHandler


def make_server(page_path, port: int | None = None, *, log=None) -> ThreadingHTTPServer:
    """A server of the page at ``page_path`` on 127.0.0.1:``port``; without a port, on 8000 or
    (when taken) any free port.  Call its ``serve_forever`` to answer, ``shutdown`` to stop.
    ``log`` (None: nothing) is told, once, when the page is no longer there to serve.

    Raises
    ------
    ViewerError
        The port is taken or cannot be bound.
    """
    return bind(_handler(os.path.abspath(os.fspath(page_path)), log or (lambda message: None)), port)


def bind(handler, port: int | None = None) -> QuietServer:
    """A server of ``handler`` (a request handler class) on 127.0.0.1:``port``, or on 8000 or
    (when taken) any free port; ViewerError when the port is taken or cannot be bound, TypeError or
    ValueError when it is no port (:func:`check_port`)."""
    check_port(port)
    for candidate in ([int(port)] if port is not None else [DEFAULT_PORT, 0]):
        try:
            return QuietServer(("127.0.0.1", candidate), handler)
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE or port is not None:
                raise ViewerError(f"cannot serve on 127.0.0.1:{candidate}: {exc.strerror or exc}; "
                                  "choose another {port}", "port") from None
    raise AssertionError("port 0 is always free")


def _desktop() -> bool:
    """Whether a graphical browser can open: without a display, webbrowser falls back to text
    browsers (lynx, w3m) that would take over this terminal."""
    return sys.platform in ("darwin", "win32") or bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def announce(url: str, open_browser: bool, log, what: str, then: str = "") -> None:
    """Print ``url`` on stdout (for programs), open it in a browser when asked and able, and say
    which on ``log`` (for people)."""
    print(url, flush=True)
    if open_browser and _desktop() and webbrowser.open(url):
        log(f"opened {url} in the browser{then}")
    else:
        log(f"serving {what} at {url}; open it in a browser{then}")


def serve(page_path, port: int | None = None, *, open_browser: bool = True, log=print) -> None:
    """Serve the page at ``page_path`` on 127.0.0.1 until Ctrl-C; prints its URL on stdout first.

    Raises
    ------
    ViewerError
        The port is taken or cannot be bound.
    """
    page_path = os.path.abspath(os.fspath(page_path))
    server = make_server(page_path, port, log=log)
    url = f"http://127.0.0.1:{server.server_port}{page_address(page_path)}"
    thread = threading.Thread(target=server.serve_forever, name="ironlearn-view", daemon=True)
    thread.start()
    announce(url, open_browser, log, "the viewer", "; Ctrl-C stops the server")
    try:
        while thread.is_alive():
            thread.join(0.5)
    except Terminated:
        raise  # SIGTERM stops the command as it stops any other (exit 143), not as Ctrl-C's normal end
    except KeyboardInterrupt:
        log("stopped serving")
    finally:
        server.shutdown()
        server.server_close()
