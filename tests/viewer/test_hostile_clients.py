"""The two servers (``view --serve`` and ``fit --live``) against clients that mean harm or stall:
bodies and headers built to raise, hundreds of idle connections, a body that never comes.  Each
answers in one line or hangs up, prints nothing on the terminal, and keeps serving a fresh page."""

import importlib
import json
import os
import socket
import threading
import time

import pytest

from helpers import make_picture, patience
from ironlearn.cli import main
from ironlearn.fitting import folder
from ironlearn.viewer import make_server
from ironlearn.viewer.live import MAX_BODY, LiveServer

serve = importlib.import_module("ironlearn.viewer.serve")  # the package's name "serve" is the function

PAGE = b"<!DOCTYPE html><title>the page</title>"


@pytest.fixture(params=["view --serve", "fit --live"])
def any_server(request, tmp_path):
    """Either server, serving from a thread of this process; its port."""
    if request.param == "fit --live":
        with LiveServer(0) as live:
            yield live.httpd.server_port
        return
    (tmp_path / "viewer.html").write_bytes(PAGE)
    server = make_server(tmp_path / "viewer.html", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_port
    server.shutdown()
    server.server_close()


@pytest.fixture
def live():
    with LiveServer(0) as served:
        yield served


def exchange(port, raw: bytes, timeout=10.0) -> bytes:
    """Send ``raw`` and read until the server hangs up; the whole answer."""
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as client:
        client.sendall(raw)
        answer = b""
        while chunk := client.recv(1 << 16):
            answer += chunk
    return answer


def post_view(port, body: bytes, length: str | None = None) -> bytes:
    """A POST /view from this server's own page (right Host and Origin), with Content-Length ``length``."""
    head = (f"POST /view HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nOrigin: http://127.0.0.1:{port}\r\n"
            f"Content-Type: application/json\r\nContent-Length: {len(body) if length is None else length}\r\n\r\n")
    return exchange(port, head.encode() + body)


def status_of(answer: bytes) -> int:
    return int(answer.split(b" ", 2)[1])


# -- 7: a POST /view built to raise ------------------------------------------------------------------
HUGE = "9" * 400


@pytest.mark.parametrize("body, length, why", [
    (b"{}", "abc", "Content-Length must be a whole number of bytes"),
    (b"{}", "1e3", "Content-Length must be a whole number of bytes"),
    (b"{}", "+2", "Content-Length must be a whole number of bytes"),
    (b"{}", str(MAX_BODY + 1), "Content-Length must be a whole number of bytes"),
    (b"[" * 1000, None, "the body must be JSON"),
    (b"\xff\xfe", None, "the body must be JSON"),
    (f'{{"view": [{HUGE}, 0, {HUGE}1, 1], "width": 64, "height": 32}}'.encode(), None, "four finite numbers"),
    (b'{"view": [0, 0, 1e400, 1], "width": 64, "height": 32}', None, "four finite numbers"),
    (b'{"view": [true, 0, 1, 1], "width": 64, "height": 32}', None, "four numbers"),
    (b'{"view": [0, 0, 1, 1], "width": true, "height": 32}', None, "width and height must be whole numbers"),
    (b'{"view": [0, 0, 1, 1], "width": 64}', None, "the body must be JSON"),
], ids=["letters", "exponent", "sign", "too long", "nested 1000 deep", "not UTF-8", "400 digits", "1e400",
        "a bool", "a bool as width", "no height"])
def test_a_view_built_to_raise_is_a_400_of_one_line_and_prints_nothing(live, capfd, body, length, why):
    """Today's tracebacks on the fit's terminal (ValueError, RecursionError, OverflowError), and no answer."""
    answer = post_view(live.httpd.server_port, body, length)
    assert status_of(answer) == 400 and why.encode() in answer, answer[:300]
    assert live.asked() is None
    assert capfd.readouterr().err == ""


def test_a_good_view_is_still_taken(live):
    port = live.httpd.server_port
    assert status_of(post_view(port, json.dumps({"view": [-1, -1, 1, 1], "width": 64, "height": 32}).encode())) == 204
    assert live.asked() == ((-1.0, -1.0, 1.0, 1.0), 64, 32)


# -- 8: idle connections, and a body that never comes ----------------------------------------------
def test_hundreds_of_idle_connections_neither_keep_a_page_out_nor_use_up_threads(any_server, capfd):
    """560 connections that sent a request's first line and stopped pinned a thread each (574
    threads); new requests got empty replies and "can't start new thread" tracebacks."""
    port = any_server
    before = threading.active_count()
    idle = []
    try:
        for _ in range(200):
            idle.append(socket.create_connection(("127.0.0.1", port), timeout=10))
            idle[-1].sendall(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n".encode())
        began = time.monotonic()
        answer = exchange(port, f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n\r\n".encode())
        took = time.monotonic() - began
        threads = threading.active_count()
    finally:
        for client in idle:
            client.close()
    assert status_of(answer) == 200 and took < patience(3), took
    assert threads <= before + serve.WORKERS + 1, threads  # the workers, and the fresh request's at most
    assert capfd.readouterr().err == ""


class Pesterer:
    """``count`` clients that connect and send nothing, or a request's head a byte at a time, and
    connect again each time the server drops them; ``drops`` counts the times it did."""

    def __init__(self, port: int, count: int):
        self.port, self.drops, self._stop = port, 0, threading.Event()
        self._lock = threading.Lock()
        self._threads = [threading.Thread(target=self._pester, args=(number % 2 == 1,), daemon=True)
                         for number in range(count)]
        for thread in self._threads:
            thread.start()

    def _pester(self, trickles: bool):
        head = f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{self.port}\r\nX-Slow: ".encode() + b"x" * 4096
        while not self._stop.is_set():
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as client:
                    dropped = self._hold(client, head if trickles else b"")
            except TimeoutError:  # not accepted in time: connect again
                continue
            except OSError:  # a reset
                dropped = True
            with self._lock:
                self.drops += dropped

    def _hold(self, client, head: bytes) -> bool:
        """Send ``head`` a byte each 0.2 s (never its end) until the server hangs up (True) or the
        test ends (False)."""
        sent = 0
        while not self._stop.is_set():
            try:
                if not client.recv(1024):
                    return True
            except TimeoutError:
                if sent < len(head):
                    client.sendall(head[sent:sent + 1])
                    sent += 1
        return False

    def wait_for(self, drops: int, seconds: float) -> int:
        """Wait until the server has dropped ``drops`` of them (or ``seconds`` pass); how many it has."""
        deadline = time.monotonic() + seconds
        while self.drops < drops and time.monotonic() < deadline:
            time.sleep(0.01)
        return self.drops

    def stop(self):
        self._stop.set()
        for thread in self._threads:
            thread.join()


def test_forty_clients_that_reconnect_when_dropped_do_not_cut_a_download(tmp_path, monkeypatch, capfd):
    """33 clients that connected, sent nothing and reconnected when dropped cut every large download
    (a 53-80 MB page arrived whole 0-2 times in 10): past the cap the oldest connection was dropped,
    mid-page.  A connection being answered is never dropped for a new one now: the download pauses
    after its first bytes until the server has dropped three times as many idle clients as it
    serves at once (so that the download was the oldest connection many times over), then arrives
    whole."""
    monkeypatch.setattr(serve, "SEND_PIECE", 64 << 10)  # the page in 512 pieces
    monkeypatch.setattr(serve, "REQUEST_SECONDS", 60.0)  # no piece times out while the download pauses
    page = os.urandom(32 << 20)  # larger than the sockets' buffers: the server is mid-page as it pauses
    (tmp_path / "viewer.html").write_bytes(page)
    server = make_server(tmp_path / "viewer.html", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_port
    pests = Pesterer(port, 40)
    try:
        pests.wait_for(serve.WORKERS, patience(10))  # the server full of them before the download
        with socket.create_connection(("127.0.0.1", port), timeout=patience(30)) as client:
            client.sendall(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
            answer = client.recv(1 << 16)
            before = pests.drops
            dropped = pests.wait_for(before + 3 * serve.WORKERS, patience(30)) - before
            while chunk := client.recv(1 << 20):
                answer += chunk
    finally:
        pests.stop()
        server.shutdown()
        server.server_close()
    assert dropped >= 3 * serve.WORKERS, dropped  # the flood went on during the download
    head, _, body = answer.partition(b"\r\n\r\n")
    assert status_of(head) == 200 and len(body) == len(page) and body == page, (head, len(body))
    assert capfd.readouterr().err == ""


def test_a_new_connection_waits_while_every_worker_is_answering(tmp_path, monkeypatch, capfd):
    """With every worker mid-page (two here), a new request waits for one to finish instead of
    cutting the oldest download; the server still stops at once while it waits."""
    monkeypatch.setattr(serve, "WORKERS", 2)
    page = os.urandom(32 << 20)  # larger than the sockets' buffers: the server is mid-page on each
    (tmp_path / "viewer.html").write_bytes(page)
    server = make_server(tmp_path / "viewer.html", 0)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    port = server.server_port
    request = f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode()
    readers = [socket.create_connection(("127.0.0.1", port), timeout=patience(30)) for _ in range(2)]
    for reader in readers:
        reader.sendall(request)
        assert reader.recv(1) == b"H"  # its answer has begun (HTTP/1.0 200 ...)
    late = socket.create_connection(("127.0.0.1", port), timeout=patience(30))
    late.sendall(request)
    bodies = []
    for client in readers + [late]:
        answer = b""
        while chunk := client.recv(1 << 20):
            answer += chunk
        client.close()
        bodies.append(answer.partition(b"\r\n\r\n")[2])
    assert [len(body) for body in bodies] == [len(page)] * 3 and bodies[0] == bodies[1] == bodies[2] == page
    for _ in range(3):  # every worker answering again, and a new connection waiting: shutdown ends it
        stalled = socket.create_connection(("127.0.0.1", port), timeout=patience(30))
        stalled.sendall(request)
    server.shutdown()
    server.server_close()
    assert capfd.readouterr().err == ""


def hung_up_after(port, raw: bytes) -> float:
    """Seconds until the server hangs up on a client that sent ``raw`` and then nothing."""
    began = time.monotonic()
    with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
        client.sendall(raw)
        while client.recv(1024):
            pass
    return time.monotonic() - began


def test_a_request_whose_head_never_ends_is_dropped(any_server, monkeypatch, capfd):
    monkeypatch.setattr(serve, "REQUEST_SECONDS", 0.5)
    took = hung_up_after(any_server, f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{any_server}\r\n".encode())
    assert 0.4 < took < patience(5), took  # not the 10 s this client would wait
    assert capfd.readouterr().err == ""


def test_a_post_whose_body_never_comes_is_dropped(live, monkeypatch, capfd):
    monkeypatch.setattr(serve, "REQUEST_SECONDS", 0.5)
    port = live.httpd.server_port
    took = hung_up_after(port, f"POST /view HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nContent-Length: 40\r\n\r\n"
                               '{"view": '.encode())
    assert 0.4 < took < patience(5), took
    assert live.asked() is None and capfd.readouterr().err == ""


# -- 11: HEAD, and a folder another fit holds ----------------------------------------------------------
def test_the_live_server_answers_head_as_get_without_the_body(live):
    """It answered 501, where view --serve answers as GET."""
    port = live.httpd.server_port
    for path in ("/", "/state"):
        got = exchange(port, f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        head = exchange(port, f"HEAD {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        assert status_of(head) == 200 and head.endswith(b"\r\n\r\n"), head
        length = [line for line in head.split(b"\r\n") if line.startswith(b"Content-Length")]
        assert length and length[0] in got
    assert status_of(exchange(port, b"HEAD / HTTP/1.1\r\nHost: evil.example\r\n\r\n")) == 403
    assert not live.ended.is_set()  # a HEAD delivers no page


def test_live_into_a_folder_another_fit_holds_is_refused_before_any_url(capsys, tmp_path, monkeypatch):
    """The URL was printed, and the page served, before the fit's lock refused the folder."""
    import ironlearn

    picture = make_picture(tmp_path / "disc.png", size=16)
    out = tmp_path / "run"
    out.mkdir()
    served = []
    monkeypatch.setattr(LiveServer, "__init__", lambda self, port: served.append(port))
    with folder.RunLock(str(out)):  # another fit's, as far as the lock can tell
        assert main(["fit", str(picture), "--out", str(out), "--live", "--no-browser", "--port", "0"]) == 2
        captured = capsys.readouterr()
        with pytest.raises(ValueError, match="another fit is running in"):
            ironlearn.fit(picture, out, steps=3, live=True, port=0, open_browser=False)
    err = captured.err.strip().splitlines()
    assert served == [] and captured.out == "" and len(err) == 1, captured
    assert err[0].startswith(f"ironlearn fit: error: another fit is running in {out} (process ") and "--out" in err[0]
