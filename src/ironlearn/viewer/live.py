"""``ironlearn fit --live``: the viewer page of a fit that is still training, served on 127.0.0.1.

The fit and the server share one :class:`LiveServer`.  The fit's training loop publishes, from a
callback (:class:`LiveFeed`), a snapshot of the model at most every :data:`SNAPSHOT_SECONDS`;
the server's threads only hand out the latest one, under a lock.  Nothing reads the weights
inside a training step, and reading them changes nothing: a fit is the same, bit for bit, with
or without ``--live``.

A snapshot is one of two kinds, chosen once per fit by the model's size:

* ``weights``: the drawing plan's float32 buffer (:mod:`.plan`), which the page uploads into the
  texture it already has (same architecture, same layout): the page redraws the network itself,
  at any zoom;
* ``frame``: for a model whose buffer holds more than :data:`MAX_LIVE_FLOATS` numbers (the spline
  level of a large photograph: 12.6 million for 2048x2048), a PNG of the region the page shows,
  rendered by the fit at the page's canvas size (at most :data:`MAX_FRAME_PIXELS`), at most once a
  second and in at most :data:`LIVE_SHARE` of the training time.  The page says so.

The protocol (every request must carry a Host of this machine and port, as ``view --serve``'s)::

    GET  /          the page (before the fit has built its model, a page that reloads itself)
    GET  /state     JSON: status ("starting", "training", "done", "stopped"), message, mode
                    ("weights" or "frames"), version (of the latest snapshot), step, seconds,
                    rows ([[step, loss, psnr], ...], the history so far)
    GET  /snapshot  the latest snapshot: application/octet-stream (little-endian float32) or
                    image/png, with headers X-Version, X-Step and, for a frame, X-View (x0,y0,x1,y1)
    POST /view      JSON {"view": [x0, y0, x1, y1], "width": W, "height": H}: the region a frame
                    should show, and the canvas size (204); 400 and one line for any other body
    HEAD            as GET, without the body

When the fit ends, ``/`` becomes the viewer page of the run folder (as ``ironlearn view`` writes it)
and ``/state`` says "done": the page reloads into it.  Ctrl-C or SIGTERM make it "stopped"; a fit
killed outright answers nothing, which the page notices on its own.
"""

from __future__ import annotations

import json
import math
import os
import threading
import time
from http import HTTPStatus
from http.server import BaseHTTPRequestHandler

from ..checks import is_whole
from ..image.coords import check_view
from ..signals import Terminated
from .page import SCRIPTS, model_payload, payload, render_page
from .plan import build_plan
from .run import collect_extras
from .serve import bind, local_hosts, refused_host
from .snapshots import LiveFeed

#: The page's scripts: the viewer's, with the live loop before the one that starts the page.
LIVE_SCRIPTS = (*SCRIPTS[:-1], "live.js", SCRIPTS[-1])
POLL_MS = 250  # how often the page asks for the state: a snapshot reaches it within this of being taken
#: Models up to this many float32 numbers (16 MiB) are sent whole with each snapshot; larger ones as
#: frames.  A snapshot of 4 million packs on a CPU well within the page's poll (measured:
#: docs/viewer.md, 'Watching a fit learn: `ironlearn fit --live`').
MAX_LIVE_FLOATS = 1 << 22
AFTER_FIT_SECONDS = 10.0  # how long the final page is served after the fit when stdout is no terminal
WATCHING_SECONDS = 5.0  # a page that has not polled for this long is gone (a closed tab)
#: After Ctrl-C, the most the fit waits for a watching page to read that it stopped (it goes as soon
#: as the page has): as long as a page may go without polling and still count as watching, since
#: a page polls between its redraws, and a redraw without a GPU can take seconds.
STOP_LINGER_SECONDS = WATCHING_SECONDS
MAX_BODY = 1024  # bytes of a POST /view
MAX_CANVAS = 16384  # pixels of a side of the canvas a POST /view may name
#: The page until the fit has built its network: it reloads itself every second (by script: a meta
#: refresh of an address with a #fragment, as #bare&size=... is, does not reload in Chromium).
STARTING = ("<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>ironlearn: starting</title>"
            "</head><body style=\"background:#16181c;color:#d8dbe0;font:14px system-ui,sans-serif\"><p>The fit "
            "is starting: loading the picture and building the network&hellip;</p>"
            "<script>setTimeout(() => location.reload(), 1000);</script></body></html>")
#: The page may load nothing from anywhere: its script, style and pictures are inline, and it
#: speaks only to this server.
POLICY = ("default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data: blob:; "
          "connect-src 'self'")


class LiveServer:
    """The server of a live fit; bound (to ``port``, or 8000, or a free one) when made.

    Use it as a context manager: leaving it with an exception says "stopped" to the page (and
    waits up to :data:`STOP_LINGER_SECONDS` for the page to read it); leaving it either way stops
    the server.

    Raises
    ------
    ViewerError
        The port is taken or cannot be bound.
    """

    def __init__(self, port: int | None = None):
        self._lock = threading.Lock()
        self._page = STARTING.encode()
        self._state = {"status": "starting", "message": "the fit is starting", "mode": None, "version": 0,
                       "step": 0, "seconds": 0.0, "rows": []}
        self._snapshot = None  # (bytes, content type, headers)
        self._asked = None  # the view, width and height the page asked a frame for
        self.ended = threading.Event()  # a page has read that training stopped, or loaded the final page
        self.watched = threading.Event()  # a page has asked for the state
        self._polled = -math.inf  # when a page last asked (time.monotonic)
        self.httpd = bind(_handler(self), port)
        self._thread = threading.Thread(target=self.httpd.serve_forever, name="ironlearn-live", daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.httpd.server_port}/"

    def __enter__(self) -> "LiveServer":
        return self

    def __exit__(self, kind, error, traceback) -> None:
        try:
            if error is not None and self.status in ("starting", "training"):
                interrupted = isinstance(error, KeyboardInterrupt)
                why = "interrupted" if interrupted else (str(error).splitlines() or [type(error).__name__])[0]
                self.stop(f"training stopped ({why})")
            if error is not None and self.watched.is_set():  # no page, no wait (a usage error, say)
                self.ended.wait(STOP_LINGER_SECONDS)
        finally:
            self.httpd.shutdown()
            self.httpd.server_close()

    @property
    def status(self) -> str:
        with self._lock:
            return self._state["status"]

    # -- what the fit calls -------------------------------------------------------------------
    def watch(self, model, settings: dict, *, step: int, rows, backend) -> LiveFeed:
        """The page of ``model`` (on ``backend``, at ``step``, with the run's ``settings``) from now
        on, and the callback that keeps it current; ``rows()`` gives the history's rows so far."""
        frames = build_plan(model).weights.size > MAX_LIVE_FLOATS
        data = model_payload(model, settings, collect_extras(None, settings), step=step, drawn=not frames,
                             title=f"{_name(settings)}: training live")
        del data["metrics"]["steps"]  # the panel's table is not redrawn: the live line says the step
        if frames:
            data["notes"].append(f"a model this large ({model.num_parameters:,} parameters) is not sent live: while it "
                      "trains, the fit renders the region in view at screen size, at most once a second; "
                      "the whole model comes when training ends")
        data["live"] = {"status": "training", "mode": "frames" if frames else "weights", "pollMs": POLL_MS,
                        "message": "training"}
        page = render_page(data, LIVE_SCRIPTS).encode("utf-8")
        size = tuple(settings["size"])
        with self._lock:
            self._page = page
            self._state.update(status="training", message="training", mode=data["live"]["mode"], step=step)
        return LiveFeed(self, rows, backend, frames=frames, size=size)

    def publish(self, step: int, seconds: float, rows: list, snapshot) -> None:
        """The fit's latest: ``snapshot`` is ``(bytes, content type, headers)``."""
        with self._lock:
            version = self._state["version"] + 1
            self._snapshot = (snapshot[0], snapshot[1], {**snapshot[2], "X-Version": version, "X-Step": step})
            self._state.update(version=version, step=step, seconds=round(seconds, 3), rows=rows)

    def watching(self) -> bool:
        """Whether a page has asked for the state in the last :data:`WATCHING_SECONDS`: with none,
        the fit takes no snapshots (a frame of a large model costs a render)."""
        with self._lock:
            return time.monotonic() - self._polled < WATCHING_SECONDS

    def asked(self):
        """``(view, width, height)`` the page last asked a frame for, or None."""
        with self._lock:
            return self._asked

    def finish(self, run_folder) -> None:
        """The fit is done: from now on ``/`` is the run folder's viewer page."""
        data = payload(run_folder)
        steps = data["metrics"].get("steps", 0)
        psnr = data["metrics"].get("psnr_db")
        message = f"training done: the final model, step {steps:,}" + (f", {psnr:.2f} dB" if psnr else "")
        data["live"] = {"status": "done", "message": message, "pollMs": POLL_MS}
        page = render_page(data, LIVE_SCRIPTS).encode("utf-8")
        with self._lock:
            self._page = page
            self._state.update(status="done", message=message, step=steps)

    def stop(self, message: str) -> None:
        """Training ended otherwise (Ctrl-C, SIGTERM, an error): the page says ``message``."""
        with self._lock:
            self._state.update(status="stopped", message=message)

    def hand_over(self, seconds: float = STOP_LINGER_SECONDS) -> None:
        """Wait up to ``seconds`` for a page that is watching to load the final page; at once when
        none has asked for the state."""
        if self.watched.is_set():
            self.ended.wait(seconds)

    def serve_after_fit(self, log, *, interactive: bool) -> None:
        """Serve the final page until Ctrl-C (``interactive``: someone is at the terminal) or for
        :data:`AFTER_FIT_SECONDS` (a script, whose next command should not wait on a server)."""
        if interactive:
            log("training done; Ctrl-C stops the server")
        else:
            log(f"training done; serving the final page for {AFTER_FIT_SECONDS:g} s (stdout is not a terminal)")
        deadline = math.inf if interactive else time.monotonic() + AFTER_FIT_SECONDS
        try:
            while time.monotonic() < deadline:
                time.sleep(min(0.5, max(0.0, deadline - time.monotonic())))
        except Terminated:
            raise  # SIGTERM ends the command as any other (exit 143)
        except KeyboardInterrupt:
            log("stopped serving")

    # -- what the server's threads call -------------------------------------------------------
    def page(self) -> tuple[bytes, bool]:
        """The page, and whether it is the final one."""
        with self._lock:
            return self._page, self._state["status"] == "done"

    def state(self) -> tuple[bytes, bool]:
        """The state as JSON, and whether it says training stopped."""
        with self._lock:
            text = json.dumps(self._state, separators=(",", ":"))
            self._polled = time.monotonic()
            self.watched.set()
            return text.encode(), self._state["status"] == "stopped"

    def delivered(self, last: bool) -> None:
        """The handler has sent an answer whole; ``last``: the final page, or the state saying that
        training stopped, which is all the page needs, so the fit may go.  (Set before the bytes
        were written, the fit could exit with the answer half sent, and the page, its poll failed,
        said the fit was no longer answering: a CI run failed so.)"""
        if last:
            self.ended.set()

    def snapshot(self):
        with self._lock:
            return self._snapshot

    def ask(self, view: tuple, width: int, height: int) -> None:
        """A frame's region and size, as :func:`read_view` reads them from the page."""
        with self._lock:
            self._asked = (view, width, height)


def read_view(body: bytes) -> tuple:
    """``(view, width, height)`` from the JSON body of a POST /view; ValueError, with one line, for
    any other body (an attacker's: nested 1,000 deep, or of numbers past a float, included)."""
    try:
        request = json.loads(body)
    except (ValueError, RecursionError):  # not UTF-8, not JSON; arrays nested past Python's stack
        request = None
    if not isinstance(request, dict) or not {"view", "width", "height"} <= request.keys():
        raise ValueError('the body must be JSON {"view": [x0, y0, x1, y1], "width": W, "height": H}')
    view, width, height = check_view(request["view"]), request["width"], request["height"]
    if not all(is_whole(n) and 1 <= n <= MAX_CANVAS for n in (width, height)):
        raise ValueError(f"width and height must be whole numbers from 1 to {MAX_CANVAS}")
    return view, width, height


def content_length(declared: str | None) -> int:
    """The bytes a POST's Content-Length declares; ValueError, with one line, unless it is plain
    decimal digits from 1 to :data:`MAX_BODY` (``int()`` would raise for "abc" and "1e3", and take " +1_0")."""
    digits = declared is not None and declared.isascii() and declared.isdigit()
    if not (digits and len(declared) <= len(str(MAX_BODY)) and 1 <= int(declared) <= MAX_BODY):
        raise ValueError(f"Content-Length must be a whole number of bytes from 1 to {MAX_BODY}")
    return int(declared)


def _name(settings: dict) -> str:
    return os.path.basename(settings.get("input") or "model")


def _handler(live: LiveServer):
    class LiveHandler(BaseHTTPRequestHandler):
        def do_HEAD(self):  # noqa: N802 (the http.server name)
            self.do_GET(with_body=False)

        def do_GET(self, with_body: bool = True):  # noqa: N802
            if refused_host(self):
                return
            path = self.path.split("?")[0]
            if path in ("/", "/index.html"):
                page, last = live.page()
                self._send(page, "text/html; charset=utf-8", {"Content-Security-Policy": POLICY}, with_body)
                live.delivered(last and with_body)
            elif path == "/state":
                state, last = live.state()
                self._send(state, "application/json", with_body=with_body)
                live.delivered(last and with_body)
            elif path == "/snapshot" and live.snapshot() is not None:
                self._send(*live.snapshot(), with_body=with_body)
            else:
                self.send_error(HTTPStatus.NOT_FOUND, "not here: this server answers /, /state, /snapshot, /view")

        def do_POST(self):  # noqa: N802
            if refused_host(self) or self._foreign():
                return
            if self.path != "/view":
                self.send_error(HTTPStatus.NOT_FOUND, "only /view takes a POST")
                return
            try:
                live.ask(*read_view(self.rfile.read(content_length(self.headers.get("Content-Length")))))
            except ValueError as exc:
                self.send_error(HTTPStatus.BAD_REQUEST, explain=str(exc))
                return
            self.send_response(HTTPStatus.NO_CONTENT)
            self.end_headers()

        def _foreign(self) -> bool:
            """A POST from a page of another origin (a browser says which in Origin): 403."""
            origin = self.headers.get("Origin")
            if origin is None or origin.lower() in {f"http://{host}" for host in local_hosts(self.server.server_port)}:
                return False
            self.send_error(HTTPStatus.FORBIDDEN, "only this server's page may ask for a view")
            return True

        def _send(self, body: bytes, kind: str, headers: dict | None = None, with_body: bool = True):
            self.send_response(HTTPStatus.OK)
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(body)))
            self.send_header("Cache-Control", "no-store")
            for name, value in (headers or {}).items():
                self.send_header(name, str(value))
            self.end_headers()
            if with_body:
                self.wfile.write(body)

        def log_message(self, format, *args):  # one line per poll would bury the fit's progress
            pass

    return LiveHandler

