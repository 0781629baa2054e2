"""Nothing lost, nothing leaked: what a page may embed, and whom the server answers.

A model file may come from someone else and name any local picture; the page
may be shared or served.  The server runs in a thread of this process and is
spoken to over real sockets, so its Host checks and its quiet hang-ups are
what a browser would meet.
"""

import json
import re
import shutil
import socket
import struct
import threading
import tracemalloc

import pytest
from PIL import Image

from helpers import make_picture, rewrite_meta, run_cli
from ironlearn.cli import main
from ironlearn.viewer import make_server, payload, render_page
from ironlearn.viewer.serve import SEND_PIECE
from models import save_model
from pages import data_of

MARKERS = ("@title", "/*@style*/", "/*@data*/", "/*@script*/")


def set_settings(path, **changes):
    """Change (or, with None, remove) settings of a saved model, as someone handing it over could."""
    def change(meta, arrays):
        for name, value in changes.items():
            if value is None:
                meta["settings"].pop(name, None)
            else:
                meta["settings"][name] = value
    rewrite_meta(path, change)


# -- the training picture ------------------------------------------------------------------------
@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """A run folder of 'ironlearn fit' and the picture it was fitted on."""
    folder = tmp_path_factory.mktemp("fitted")
    picture = make_picture(folder / "disc.png", size=24)
    run = folder / "run"
    assert main(["fit", str(picture), "--out", str(run), "--steps", "8", "--width", "8", "--depth", "1", "--quiet",
                 "--device", "cpu"]) == 0
    return run, picture


@pytest.fixture
def run(tmp_path, fitted):
    """A fresh copy of the fitted run, to rewrite at will."""
    return shutil.copytree(fitted[0], tmp_path / "run")


@pytest.fixture
def private(tmp_path):
    """A local picture nobody asked to share: pure red, so it is easy to recognise."""
    path = tmp_path / "private.png"
    Image.new("RGB", (24, 24), (255, 0, 0)).save(path)
    return path


def test_a_run_folder_still_shows_the_picture_it_was_fitted_on(run):
    data = payload(run)
    assert data["original"].startswith("data:image/png;base64,") and data["notes"] == []
    assert data["timelapse"] and data["lossPlot"]


@pytest.mark.parametrize("how", ["another picture named", "picture replaced", "no fingerprint"])
def test_a_picture_that_is_not_the_one_fitted_stays_out(run, private, how):
    if how == "another picture named":
        set_settings(run / "model.npz", input=str(private), mode="rgb")
    elif how == "picture replaced":  # the run's name, size and mode; other pixels
        replaced = private.with_name("disc.png")
        Image.new("L", (24, 24), 255).save(replaced)
        set_settings(run / "model.npz", input=str(replaced))
    else:
        set_settings(run / "model.npz", fingerprint=None)
    data = payload(run)
    assert data["original"] is None
    assert len(data["notes"]) == 1
    assert ("does not record" if how == "no fingerprint" else "not the picture it was fitted on") in data["notes"][0]


def test_a_missing_picture_and_another_picture_read_alike(run, private, tmp_path):
    """The page must not tell whoever reads it whether a file exists at a path the model chose."""
    set_settings(run / "model.npz", input=str(private))
    there = payload(run)["notes"]
    set_settings(run / "model.npz", input=str(tmp_path / "nowhere" / "private.png"))
    assert payload(run)["notes"] == there


def test_the_command_says_what_the_page_leaves_out(run, fitted, capsys):
    """A run fitted elsewhere (a Ray task's temporary copy of its picture, gone): the command line
    says the picture is left out, as the page does, before anyone shares or serves the page."""
    set_settings(run / "model.npz", input="/tmp/ironlearn-fit-gone/disc.png")
    code, _, err = run_cli(capsys, "view", run)
    assert code == 0, err
    note = data_of(run / "viewer.html")["notes"][0]
    assert f"note: {note}" in err.splitlines() and "disc.png is not where the run read it" in note
    code, _, err = run_cli(capsys, "view", fitted[0], "-o", run / "second.html")  # the picture in its place
    assert code == 0 and "note:" not in err, err


def test_a_bare_model_file_embeds_its_picture_only_on_request(run, tmp_path, capsys):
    bare = shutil.copy(run / "model.npz", tmp_path / "shared.npz")
    page = tmp_path / "viewer.html"
    assert run_cli(capsys, "view", bare)[0] == 0
    data = data_of(page)
    assert data["original"] is None and "--with-picture" in " ".join(data["notes"])
    # Its folder is not its run's: nothing beside it is read.
    shutil.copy(run / "timelapse.gif", tmp_path / "timelapse.gif")
    assert run_cli(capsys, "view", bare, "--force", "--with-picture")[0] == 0
    data = data_of(page)
    assert data["original"].startswith("data:image/png;base64,") and data["timelapse"] is None


def test_with_picture_still_checks_the_fingerprint(run, private, tmp_path, capsys):
    bare = shutil.copy(run / "model.npz", tmp_path / "shared.npz")
    set_settings(bare, input=str(private), mode="rgb")
    assert run_cli(capsys, "view", bare, "--with-picture")[0] == 0
    data = data_of(tmp_path / "viewer.html")
    assert data["original"] is None and "not the picture" in data["notes"][0]


def test_without_picture_leaves_a_runs_picture_out(run, capsys):
    code, _, err = run_cli(capsys, "view", run, "--without-picture")
    assert code == 0, err
    assert data_of(run / "viewer.html")["original"] is None
    code, _, err = run_cli(capsys, "view", run, "--force", "--with-picture", "--without-picture")
    assert code == 2 and len(err.strip().splitlines()) == 1


# -- the page template's markers -----------------------------------------------------------------
@pytest.mark.parametrize("title", [*MARKERS, "".join(MARKERS), "</title><script>alert(1)</script>"])
def test_a_title_holding_the_templates_markers_stays_a_title(tmp_path, title):
    data = payload(save_model(tmp_path / "model.npz", "mlp"))
    data["title"] = title
    data["notes"] = list(MARKERS)
    page = render_page(data)
    assert re.search(r"<title>(.*?)</title>", page, re.S)[1] == title.replace("<", "&lt;").replace(">", "&gt;")
    found = json.loads(re.search(r'id="ironlearn-data">(.*?)</script>', page, re.S)[1])
    assert found["title"] == title and found["notes"] == list(MARKERS)
    # The script went in once, where the template wants it, and nowhere else.
    assert page.count("window.ironlearnViewer") == render_page({**data, "title": "x"}).count("window.ironlearnViewer")


def test_markers_in_a_models_settings_reach_the_page_as_text(tmp_path, capsys):
    model = save_model(tmp_path / "model.npz", "mlp")
    set_settings(model, input=f"/pictures/{''.join(MARKERS)}.png", model="/*@script*/",
                 metrics={marker: marker for marker in MARKERS})
    code, _, err = run_cli(capsys, "view", model)
    assert code == 0 and "Traceback" not in err, err
    data = data_of(tmp_path / "viewer.html")
    assert data["preset"] == "/*@script*/" and data["metrics"]["/*@data*/"] == "/*@data*/"


# -- the server ----------------------------------------------------------------------------------
PAGE = b"<!DOCTYPE html><title>the page</title>"


class Served:
    """The page ``body`` served by :func:`make_server` from a thread of this process."""

    def __init__(self, page, body: bytes):
        page.write_bytes(body)
        self.server = make_server(page, 0)
        self.server.daemon_threads = False  # so that server_close() waits for the requests in flight
        self.port = self.server.server_port
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def stop(self):
        """Stop serving, once every request in flight is answered (and has printed what it would)."""
        self.server.shutdown()
        self.server.server_close()


@pytest.fixture
def serving(tmp_path):
    """``serving(body=PAGE)`` starts a :class:`Served`; the test's end stops it."""
    started = []

    def start(body=PAGE):
        started.append(Served(tmp_path / "viewer.html", body))
        return started[-1]

    yield start
    for served in started:
        served.stop()


def request(port, head: bytes) -> tuple[int, dict, bytes]:
    """Send ``head`` (a request without its final blank line); returns (status, headers, body)."""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as client:
        client.sendall(head + b"\r\n")
        answer = b""
        while chunk := client.recv(1 << 16):
            answer += chunk
    top, _, body = answer.partition(b"\r\n\r\n")
    lines = top.decode("latin-1").split("\r\n")
    headers = dict(line.split(": ", 1) for line in lines[1:])
    return int(lines[0].split()[1]), headers, body


def get(port, host: str | None, method="GET", path="/") -> tuple[int, dict, bytes]:
    if host is None:  # HTTP/1.0 may leave the Host out
        return request(port, f"{method} {path} HTTP/1.0\r\n".encode())
    return request(port, f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nConnection: close\r\n".encode())


@pytest.mark.parametrize("host", ["127.0.0.1:{port}", "localhost:{port}", "[::1]:{port}", "LocalHost:{port}"])
def test_the_page_goes_to_local_host_names(serving, host):
    port = serving().port
    status, headers, body = get(port, host.format(port=port))
    assert status == 200 and body == PAGE and headers["Content-Type"].startswith("text/html")
    assert get(port, host.format(port=port), path="/viewer.html?x=1")[2] == PAGE


@pytest.mark.parametrize("host", ["evil.example", "evil.example:{port}", "127.0.0.1:{other}", "localhost",
                                  "127.0.0.1.evil.example:{port}", None, "two"])
def test_any_other_host_is_refused(serving, host, capfd):
    port = serving().port
    if host == "two":  # one right, one wrong: which one would a proxy believe?
        status, _, body = request(port, f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nHost: evil.example\r\n"
                                        "Connection: close\r\n".encode())
    else:
        status, _, body = get(port, host and host.format(port=port, other=port + 1))
    assert status == 403 and PAGE not in body and len(body) < 1000
    assert b"127.0.0.1:%d" % port in body  # says where to ask instead
    assert capfd.readouterr().err == ""


def test_head_answers_as_get_without_the_body(serving):
    port = serving().port
    status, headers, body = get(port, f"127.0.0.1:{port}", method="HEAD")
    assert status == 200 and body == b"" and int(headers["Content-Length"]) == len(PAGE)
    assert headers.keys() == get(port, f"127.0.0.1:{port}")[1].keys()
    assert get(port, "evil.example", method="HEAD")[::2] == (403, b"")
    assert get(port, f"127.0.0.1:{port}", method="HEAD", path="/model.npz")[::2] == (404, b"")


def _hang_up_hard(client):
    """Close with a reset, as a killed browser does, instead of an orderly goodbye."""
    client.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
    client.close()


@pytest.mark.parametrize("how", ["connect and close", "connect and reset", "mid-request", "mid-response"])
def test_a_client_hanging_up_prints_nothing(serving, capfd, how):
    served = serving(PAGE + b" " * (32 << 20))  # larger than any socket buffer: the server is mid-write
    port = served.port
    client = socket.create_connection(("127.0.0.1", port), timeout=10)
    if how == "connect and close":
        client.close()
    elif how == "connect and reset":
        _hang_up_hard(client)
    elif how == "mid-request":
        client.sendall(b"GET / HTTP/1.1\r\nHost: 127.0")
        _hang_up_hard(client)
    else:
        client.sendall(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\n\r\n".encode())
        assert client.recv(1024).startswith(b"HTTP/1.0 200")
        _hang_up_hard(client)
    assert get(port, f"127.0.0.1:{port}", path="/elsewhere")[0] == 404  # still answering
    served.stop()
    assert capfd.readouterr().err == ""


def test_slow_readers_of_a_large_page_hold_a_piece_each_not_the_page(serving):
    """The page goes out in pieces of SEND_PIECE: six readers stalled after its first bytes hold six
    pieces, where reading it whole held six pages (2.85 GB for six of a 455 MB page).  Measured with
    tracemalloc: the server is this process's threads, and every byte it reads is a Python object."""
    served = serving(PAGE + b" " * (32 << 20))
    readers = []
    tracemalloc.start()
    try:
        for _ in range(6):
            reader = socket.create_connection(("127.0.0.1", served.port), timeout=10)
            reader.sendall(f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{served.port}\r\n\r\n".encode())
            seen = b""
            while PAGE not in seen:  # the server is sending the page, then stalls on this reader
                seen += reader.recv(1024)
            readers.append(reader)
        held = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        for reader in readers:
            _hang_up_hard(reader)
    assert held < 6 * SEND_PIECE + (4 << 20), f"{held >> 20} MB held"
