"""``ironlearn fit --live`` in a real Chromium: the page follows the fit, then shows the final model,
and says when training stopped; the server answers only this machine.

A fit that is still training cannot be rendered by the test at the very step the page shows, so
the test fits again to that step (``--schedule constant``: the same weights at step s whatever the
run's length) and renders that.  Page and render must agree as the viewer's other tests ask
(:data:`pages.MIN_PSNR_DB`): the same float32 network in two engines.
"""

import http.client
import io
import json
import os
import signal
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from PIL import Image

from helpers import make_picture, patience
from ironlearn.cli import main
from ironlearn.fitting import FitOptions, fit
from ironlearn.viewer import live as live_module
from ironlearn.viewer import snapshots
from ironlearn.viewer.live import LiveServer
from pages import MIN_PSNR_DB, PageErrors, psnr_db, read_rgb

# One worker for all: each test runs a fit and a software-GPU browser on a machine of 2 cores.
pytestmark = pytest.mark.xdist_group("live")
SHOT = (96, 96)
#: A fit that keeps learning visibly for seconds: a slow constant rate, so that its weights at step s
#: are those of a fit of s steps.
FIT = ["--steps", "3000", "--schedule", "constant", "--lr", "0.002", "--device", "cpu", "--seed", "0"]


def start(tmp_path, *extra, seconds=8):
    """``ironlearn fit --live`` in a process of its own; returns it, its URL and the run folder."""
    picture = make_picture(tmp_path / "disc.png", size=32, colour=True)
    run = tmp_path / "run"
    env = {**os.environ, "PYTHONUNBUFFERED": "1"}
    process = subprocess.Popen(
        [sys.executable, "-m", "ironlearn", "fit", str(picture), "--out", str(run), "--live", "--no-browser",
         "--port", "0", "--time-budget", str(seconds), "--quiet", *FIT, *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    url = process.stdout.readline().strip()
    assert url.startswith("http://127.0.0.1:"), process.stderr.read()
    return process, url, run


def until(page, expression, timeout=60_000):
    """Wait until ``expression`` is true in ``page``.  Not Playwright's wait_for_function, whose
    predicate runs through eval, which the page's Content-Security-Policy forbids (as it should)."""
    end = time.monotonic() + timeout / 1000
    while not evaluated(page, expression):
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {expression} on {page.url}: {page.content()[:400]}")
        time.sleep(0.05)


def evaluated(page, expression):
    """``expression`` in ``page``; None while the page reloads (into the final page, when the fit is done)."""
    from playwright.sync_api import Error

    try:
        return page.evaluate(expression)
    except Error as exc:
        if "context was destroyed" in str(exc) or "Cannot read properties of undefined" in str(exc):
            return None
        raise


@pytest.fixture
def pages(browser):
    """Opens live pages in the test browser, and closes them after the test (each holds a WebGL context)."""
    opened = []

    def open_live(url, bare=True, wait=True):
        errors = PageErrors()
        size = SHOT if bare else (720, 480)
        page = errors.watch(browser.new_page(viewport={"width": max(size[0], 100), "height": max(size[1], 100)}))
        opened.append(page)
        page.goto(url + (f"#bare&size={SHOT[0]}x{SHOT[1]}" if bare else ""))
        if wait:
            until(page, "window.ironlearnViewer && window.ironlearnViewer.live", timeout=120_000)
        return page, errors

    yield open_live
    for page in opened:
        page.close()


def drawn(page):
    """A screenshot of the bare canvas and the step the page says it shows, once it is drawn whole."""
    for _ in range(50):
        until(page, "window.ironlearnViewer?.ready", timeout=60_000)
        before = page.evaluate("[window.ironlearnViewer.live.step, window.ironlearnViewer.live.status]")
        shot = page.screenshot(clip={"x": 0, "y": 0, "width": SHOT[0], "height": SHOT[1]})
        after = page.evaluate("[window.ironlearnViewer.ready, window.ironlearnViewer.live.step]")
        if after == [True, before[0]]:
            return np.asarray(Image.open(io.BytesIO(shot)).convert("RGB")), before[0]
    raise AssertionError("the page never held one step still long enough for a screenshot")


def rendered(tmp_path, model, name):
    out = tmp_path / f"{name}.png"
    assert main(["render", str(model), "--size", f"{SHOT[0]}x{SHOT[1]}", "-o", str(out), "--device", "cpu"]) == 0
    return read_rgb(out)


def at_step(tmp_path, step):
    """The fit's model at ``step``: the same fit again, ``step`` steps long."""
    run = tmp_path / f"step-{step}"
    assert main(["fit", str(tmp_path / "disc.png"), "--out", str(run), "--quiet", *FIT[:1], str(step), *FIT[2:]]) == 0
    return rendered(tmp_path, run / "model.npz", f"step-{step}")


def test_the_page_follows_the_fit_then_shows_the_final_model(pages, tmp_path):
    process, url, run = start(tmp_path)
    try:
        page, errors = pages(url)
        until(page, "window.ironlearnViewer?.live?.step > 0", timeout=60_000)
        first, first_step = drawn(page)
        time.sleep(2)
        until(page, f"window.ironlearnViewer?.live?.step > {first_step}", timeout=30_000)
        second, second_step = drawn(page)
        until(page, "window.ironlearnViewer?.live?.status === 'done' && window.ironlearnViewer.ready",
                               timeout=60_000)  # the page reloaded into the run's final page
        final, _ = drawn(page)
        message = page.evaluate("window.ironlearnViewer?.live?.message")
        assert not errors, errors
    finally:
        process.wait(timeout=60)
    assert process.returncode == 0, process.stderr.read()
    assert "training done" in message
    assert np.abs(first.astype(int) - second.astype(int)).mean() > 1.0, "the picture did not change in 2 s"
    for shot, step in [(first, first_step), (second, second_step)]:
        assert psnr_db(shot, at_step(tmp_path, step)) >= MIN_PSNR_DB, f"step {step}"
    assert psnr_db(final, rendered(tmp_path, run / "model.npz", "final")) >= MIN_PSNR_DB


def test_the_interactive_page_grows_the_curves_and_says_done(pages, tmp_path):
    process, url, _ = start(tmp_path, seconds=10)
    try:
        page, errors = pages(url, bare=False)
        until(page, "document.querySelector('#loss-figure') && !document.querySelector('#loss-figure').hidden",
                               timeout=60_000)
        assert page.locator("#loss svg polyline").count() == 2  # loss and PSNR
        assert "training" in page.inner_text("#live")
        until(page, "window.ironlearnViewer?.live?.status === 'done'", timeout=60_000)
        assert page.inner_text("#live").startswith("training done: the final model, step")
        assert page.locator("#compare-label").is_visible()  # the training picture, to split in
        assert not errors, errors
    finally:
        process.wait(timeout=60)


@pytest.mark.parametrize("how", ["kill", "interrupt"])
def test_a_fit_that_stops_leaves_the_page_saying_so(pages, tmp_path, how):
    process, url, _ = start(tmp_path, seconds=60)
    try:
        page, _ = pages(url)
        until(page, "window.ironlearnViewer?.live?.step > 0", timeout=60_000)
        process.send_signal(signal.SIGKILL if how == "kill" else signal.SIGINT)
        until(page, "window.ironlearnViewer?.live?.status === 'stopped'", timeout=30_000)
        message = page.evaluate("window.ironlearnViewer?.live?.message")
    finally:
        try:
            process.wait(timeout=30)
        finally:
            process.kill()
    if how == "kill":
        assert message == "training stopped (the fit is no longer answering)"
    else:
        assert process.returncode == 130
        assert message.startswith("training stopped by Ctrl-C at step ") and "checkpoint is saved" in message, message


def test_sigterm_says_stopped_before_the_server_goes(tmp_path):
    process, url, _ = start(tmp_path, seconds=60)
    port = int(url.rsplit(":", 1)[1].strip("/"))
    try:
        wait_for(lambda: state(port)["step"] > 0)
        process.send_signal(signal.SIGTERM)
        seen = []
        wait_for(lambda: seen.append(state(port)) or seen[-1]["status"] == "stopped")
        assert seen[-1]["message"].startswith("training stopped by SIGTERM at step ")
    finally:
        process.wait(timeout=60)
    assert process.returncode == 143


def state(port):
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
    connection.request("GET", "/state")
    return json.loads(connection.getresponse().read())


def wait_for(condition, seconds=60):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if condition():
            return True
        time.sleep(0.05)
    raise AssertionError("timed out")


# -- in this process: the server alone, and the fit with and without it ---------------------------
@pytest.fixture
def server():
    with LiveServer(0) as served:
        yield served


def test_the_fit_may_go_only_once_the_page_has_the_whole_answer(server, monkeypatch):
    """The fit exits as soon as ``ended`` is set: set while the answer was still being written, the
    page's poll failed and it said the fit was no longer answering (a CI run failed so)."""
    handler = server.httpd.RequestHandlerClass
    send, seen = handler._send, []

    def slow_send(self, *args, **kwargs):
        seen.append(server.ended.is_set())
        time.sleep(0.2)  # a busy machine
        send(self, *args, **kwargs)
        seen.append(server.ended.is_set())

    monkeypatch.setattr(handler, "_send", slow_send)
    assert state(server.httpd.server_port)["status"] == "starting" and not server.ended.is_set()
    server.stop("training stopped by Ctrl-C at step 3")
    assert state(server.httpd.server_port)["status"] == "stopped"
    wait_for(server.ended.is_set, seconds=5)  # after the handler's last look, which follows the send
    assert seen == [False, False, False, False]  # never while an answer was on its way


@pytest.mark.parametrize("host", ["evil.example:{port}", "127.0.0.1:1", "", "127.0.0.1.evil.example:{port}"])
def test_any_other_host_is_refused(server, host):
    connection = http.client.HTTPConnection("127.0.0.1", server.httpd.server_port, timeout=5)
    for method, path in [("GET", "/"), ("GET", "/state"), ("GET", "/snapshot"), ("POST", "/view")]:
        connection.putrequest(method, path, skip_host=True)
        if host:
            connection.putheader("Host", host.format(port=server.httpd.server_port))
        connection.endheaders(b"{}" if method == "POST" else None)
        assert connection.getresponse().status == 403, (method, path)
        connection.close()


def test_a_view_from_another_origin_or_out_of_shape_is_refused(server):
    port = server.httpd.server_port
    good = json.dumps({"view": [-1, -1, 1, 1], "width": 64, "height": 32})

    def post(body, origin=None):
        connection = http.client.HTTPConnection("127.0.0.1", port, timeout=5)
        headers = {"Content-Type": "application/json", **({"Origin": origin} if origin else {})}
        connection.request("POST", "/view", body, headers)
        return connection.getresponse().status

    assert post(good, "http://evil.example") == 403
    assert post(json.dumps({"view": [1, 0, 0, 1], "width": 64, "height": 32})) == 400
    assert post(json.dumps({"view": [0, 0, 1, 1], "width": 10**6, "height": 32})) == 400
    assert server.asked() is None
    assert post(good, f"http://127.0.0.1:{port}") == 204
    assert server.asked() == ((-1.0, -1.0, 1.0, 1.0), 64, 32)


def test_a_frame_covers_the_picture_in_view_at_the_canvas_size():
    assert snapshots.frame_region(None, (400, 200)) == ((-1.0, -1.0, 1.0, 1.0), (400, 200))
    assert snapshots.frame_region(((-2.0, -1.0, 2.0, 1.0), 800, 400), (1, 1)) == ((-1.0, -1.0, 1.0, 1.0), (400, 400))
    assert snapshots.frame_region(((1.5, 0.0, 2.0, 1.0), 100, 100), (1, 1)) is None
    view, (w, h) = snapshots.frame_region(((-1.0, -1.0, 1.0, 1.0), 4000, 4000), (1, 1))
    assert w * h <= snapshots.MAX_FRAME_PIXELS and w == h


def fit_in_thread(options, live):
    """``fit`` in a thread of this process (signals stay with the main thread); joined by the caller."""
    outcome = {}
    thread = threading.Thread(target=lambda: outcome.update(result=fit(options, log=lambda m: None, live=live)))
    thread.start()
    return thread, outcome


@pytest.mark.parametrize("frames", [False, True], ids=["weights", "frames"])
def test_live_leaves_the_fit_unchanged_bit_for_bit(tmp_path, monkeypatch, frames, one_thread_count):
    from ironlearn.train import load_checkpoint

    picture = make_picture(tmp_path / "disc.png", size=24, colour=True)
    monkeypatch.setattr(snapshots, "SNAPSHOT_SECONDS", 0.0)  # a snapshot after every step
    monkeypatch.setattr(snapshots, "FRAME_SECONDS", 0.0)
    monkeypatch.setattr(snapshots, "LIVE_SHARE", 1.0)
    monkeypatch.setattr(LiveServer, "watching", lambda self: True)  # as if a page were open
    if frames:
        monkeypatch.setattr(live_module, "MAX_LIVE_FLOATS", 0)
    common = dict(input=str(picture), steps=25, device="cpu", quiet=True)
    fit(FitOptions(out=str(tmp_path / "plain"), **common), log=lambda m: None)
    with LiveServer(0) as served:
        thread, _ = fit_in_thread(FitOptions(out=str(tmp_path / "live"), **common), served)
        thread.join(patience(120))
        assert served.status == "training" and served.snapshot()[1] == ("image/png" if frames else
                                                                         "application/octet-stream")
        assert json.loads(served.state()[0])["version"] == 25  # one a step
    plain = load_checkpoint(tmp_path / "plain" / "model.npz").model.named_arrays()
    watched = load_checkpoint(tmp_path / "live" / "model.npz").model.named_arrays()
    assert plain.keys() == watched.keys()
    for name in plain:
        np.testing.assert_array_equal(plain[name], watched[name], err_msg=name)


def test_a_large_model_is_drawn_from_the_fits_frames(pages, tmp_path, monkeypatch):
    """Past MAX_LIVE_FLOATS the fit renders what the page shows; the page says so."""
    picture = make_picture(tmp_path / "disc.png", size=32, colour=True)
    monkeypatch.setattr(live_module, "MAX_LIVE_FLOATS", 0)
    options = FitOptions(input=str(picture), out=str(tmp_path / "run"), steps=100000, time_budget=6,
                         device="cpu", quiet=True, schedule="constant", lr=0.002)
    with LiveServer(0) as served:
        page, errors = pages(served.url, wait=False)  # before the fit: the page that reloads until it starts
        thread, _ = fit_in_thread(options, served)
        try:
            until(page, "window.ironlearnViewer && window.ironlearnViewer.live", timeout=120_000)
            until(page, "window.ironlearnViewer?.live?.step > 0", timeout=60_000)
            assert page.evaluate("window.ironlearnViewer.mode") == "frames"
            thread.join(patience(120))  # the fit is over (nobody says done here): its last frame stays
            last = served.snapshot()
            until(page, f"window.ironlearnViewer?.live?.version === {last[2]['X-Version']}")
            shot, step = drawn(page)
            notes = page.evaluate("window.ironlearnViewer.data.notes.join(' ')")
            assert "renders the region in view at screen size" in notes
            assert served.asked() == ((-1.0, -1.0, 1.0, 1.0), *SHOT)  # what the bare page shows
            assert not errors, errors
        finally:
            thread.join(patience(120))
    frame = np.asarray(Image.open(io.BytesIO(last[0])).convert("RGB"))
    assert step == last[2]["X-Step"] and frame.shape == shot.shape
    assert np.abs(shot.astype(int) - frame.astype(int)).mean() < 1.0  # drawn one to one
    assert shot.std() > 5  # a picture, not the empty canvas


def test_live_options_need_live(capsys, tmp_path):
    picture = make_picture(tmp_path / "disc.png", size=16)
    for flags in (["--port", "8123"], ["--no-browser"]):
        assert main(["fit", str(picture), "--out", str(tmp_path / "run"), *flags]) == 2
        err = capsys.readouterr().err.strip()
        assert err == f"ironlearn fit: error: {flags[0]} is for the live page; add --live, or drop {flags[0]}"
    assert not (tmp_path / "run").exists()


def test_the_python_api_shows_the_fit_live_then_stops_serving(tmp_path, capsys):
    import ironlearn

    picture = make_picture(tmp_path / "disc.png", size=16)
    began = time.monotonic()
    run = ironlearn.fit(picture, tmp_path / "run", steps=20, device="cpu", live=True, port=0, open_browser=False)
    url = capsys.readouterr().out.strip()
    assert url.startswith("http://127.0.0.1:") and run.metrics["steps"] == 20
    assert time.monotonic() - began < 30  # no page watched: no wait for one to load the final model
    port = int(url.rsplit(":", 1)[1].strip("/"))
    with pytest.raises(OSError):
        state(port)  # the server stopped with the fit
    with pytest.raises(TypeError, match="live must be True or False"):
        ironlearn.fit(picture, tmp_path / "again", live="yes")


def test_after_the_fit_a_terminal_serves_until_ctrl_c_and_a_script_for_a_few_seconds(server, monkeypatch):
    import _thread
    import signal

    said = []
    monkeypatch.setattr(live_module, "AFTER_FIT_SECONDS", 0.2)
    began = time.monotonic()
    server.serve_after_fit(said.append, interactive=False)
    assert 0.2 <= time.monotonic() - began < 5
    assert said == ["training done; serving the final page for 0.2 s (stdout is not a terminal)"]
    said.clear()
    # Ctrl-C as a terminal's Python takes it: a Ray test earlier in this worker may have left
    # another SIGINT handler, which interrupt_main() calls instead (the wait then never ended).
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        threading.Timer(0.5, _thread.interrupt_main).start()  # Ctrl-C, as the terminal sends it
        server.serve_after_fit(said.append, interactive=True)
    finally:
        signal.signal(signal.SIGINT, previous)
    assert said == ["training done; Ctrl-C stops the server", "stopped serving"]


def test_a_fit_that_cannot_start_ends_at_once_with_its_one_line(capsys, tmp_path):
    began = time.monotonic()
    assert main(["fit", str(tmp_path / "missing.png"), "--live", "--no-browser", "--port", "0"]) == 2
    assert time.monotonic() - began < 1.5  # no page watching: nothing to wait for
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("ironlearn fit: error: ") and "missing.png" in err[-1]


def test_live_into_a_folder_that_holds_a_run_is_refused_before_any_page_is_served(capsys, tmp_path, monkeypatch):
    picture = make_picture(tmp_path / "disc.png", size=16)
    assert main(["fit", str(picture), "--out", str(tmp_path / "run"), "--steps", "3", "--quiet"]) == 0
    capsys.readouterr()
    served = []
    monkeypatch.setattr(LiveServer, "__init__", lambda self, port: served.append(port))
    assert main(["fit", str(picture), "--out", str(tmp_path / "run"), "--live", "--no-browser", "--port", "0"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert served == [] and len(err) == 1 and "already holds a run" in err[0], err


def test_a_live_photograph_starts_from_random_and_says_how_to_start_as_the_picture(tmp_path, capsys):
    import ironlearn

    picture = make_picture(tmp_path / "disc.png", size=260, colour=True)  # the pixel spline: it could start whole
    run = ironlearn.fit(picture, tmp_path / "run", steps=5, device="cpu", live=True, port=0, open_browser=False,
                        progress=True)
    err = capsys.readouterr().err  # progress=True: the command's lines, on stderr as the command prints them
    assert run.settings["start"] == "random" and "give start picture" in err, err  # Python's words: the option, not its flag
    assert ironlearn.fit(picture, tmp_path / "whole", steps=5, device="cpu").settings["start"] == "picture"
