"""``ironlearn view``: the page it writes, and one line with exit code 2 for anything it cannot use."""

import base64
import io
import json
import os
import re
import signal
import subprocess
import sys
import urllib.error
import urllib.request
import zlib

import numpy as np
import pytest
from PIL import Image

from helpers import make_picture, patience, rewrite_meta, run_cli
from ironlearn.nn import Linear, ReLU, Sequential, register
from ironlearn.train import save_checkpoint
from ironlearn.viewer import payload
from models import save_model
from pages import data_of


@pytest.fixture
def model_file(tmp_path):
    return save_model(tmp_path / "model.npz", "hashgrid")


def test_the_page_holds_everything_it_needs(tmp_path, capsys, model_file):
    code, _, err = run_cli(capsys, "view", model_file)
    page = tmp_path / "viewer.html"  # beside the model by default
    assert code == 0 and page.exists() and "viewer.html" in err
    text = page.read_text(encoding="utf-8")
    # Self-contained: no script, style, picture or request from anywhere else.
    assert not re.search(r"""(src|href)\s*=\s*["']?(https?:)?//""", text)
    assert not re.search(r"\b(fetch|XMLHttpRequest|import)\s*\(", text) and "url(http" not in text
    data = data_of(page)
    packed = data["weights"]  # a model's buffer travels deflated, as one part of floats
    assert len(zlib.decompress(base64.b64decode(packed["deflate"]))) == packed["bytes"] == 4 * packed["floats"]
    assert packed["floats"] % 4 == 0 and packed["floats"] <= 4 * data["texture"][0] * data["texture"][1]
    assert [op["type"] for op in data["ops"]] == ["hashgrid", "linear", "relu", "linear"]
    assert data["picture"] == {"width": 48, "height": 32, "mode": None}


def test_a_run_folder_brings_its_picture_timelapse_plot_and_metrics(tmp_path, capsys):
    picture = make_picture(tmp_path / "disc.png", size=40)
    run = tmp_path / "run"
    assert run_cli(capsys, "fit", picture, "--out", run, "--steps", "12", "--width", "8", "--depth", "1",
                   "--quiet", "--device", "cpu")[0] == 0
    data = payload(run, max_original_side=16)
    assert data["original"].startswith("data:image/png;base64,")
    assert data["timelapse"].startswith("data:image/gif;base64,") and data["lossPlot"].startswith("data:image/png")
    assert data["metrics"]["steps"] == 12 and data["metrics"]["device"] == "cpu" and "psnr_db" in data["metrics"]
    with Image.open(io.BytesIO(base64.b64decode(data["original"].split(",", 1)[1]))) as original:
        assert original.size == (16, 16)  # downscaled to the longest side asked for
    os.remove(run / "loss.png")
    os.remove(picture)
    data = payload(run)
    assert data["lossPlot"] is None and len(data["history"]) > 1 and data["original"] is None
    assert any("disc.png" in note for note in data["notes"])
    # A fit killed between model.npz and metrics.json leaves an older run's metrics: the model's win.
    (run / "metrics.json").write_text(json.dumps({**data["metrics"], "steps": 3, "psnr_db": 1.0}))
    again = payload(run)
    assert again["metrics"]["steps"] == 12 and again["metrics"]["psnr_db"] == data["metrics"]["psnr_db"]
    assert any("another step than the model" in note for note in again["notes"])


def test_an_existing_page_at_a_named_path_needs_force(tmp_path, capsys, model_file):
    page = tmp_path / "page.html"
    assert run_cli(capsys, "view", model_file, "-o", page)[0] == 0
    code, _, err = run_cli(capsys, "view", model_file, "-o", page)
    assert code == 2 and "--force" in err and len(err.strip().splitlines()) == 1
    assert run_cli(capsys, "view", model_file, "-o", page, "--force")[0] == 0
    assert run_cli(capsys, "view", model_file)[0] == 0
    assert run_cli(capsys, "view", model_file)[0] == 0  # the page ironlearn made beside the model: rewritten


@register
class Cube(ReLU):
    """A layer the viewer has no shader for."""


def _newer(meta, arrays):
    meta["version"] = 99


@pytest.mark.parametrize("case", ["not a model", "newer format", "undrawable layer", "two outputs", "missing",
                                  "empty folder", "not html", "bad port", "port without serve"])
def test_bad_input_gets_one_line_and_exit_2(tmp_path, capsys, model_file, case):
    args = []
    if case == "not a model":
        source = tmp_path / "notes.npz"
        source.write_bytes(b"these are not the arrays you are looking for")
    elif case == "newer format":
        source = model_file
        rewrite_meta(source, _newer)
    elif case == "undrawable layer":
        rng = np.random.default_rng(0)
        source = tmp_path / "cube.npz"
        save_checkpoint(source, Sequential(Linear(2, 4, rng=rng), Cube(), Linear(4, 1, rng=rng)))
    elif case == "two outputs":
        source = tmp_path / "two.npz"
        save_checkpoint(source, Sequential(Linear(2, 2, rng=np.random.default_rng(0))))
    elif case == "missing":
        source = tmp_path / "nowhere"
    elif case == "empty folder":
        source = tmp_path / "empty"
        source.mkdir()
    elif case == "not html":
        source, args = model_file, ["-o", tmp_path / "page.png"]
    elif case == "bad port":
        source, args = model_file, ["--serve", "--port", "70000"]
    else:  # it was ignored without a word
        source, args = model_file, ["--port", "8001"]
    code, out, err = run_cli(capsys, "view", source, *args)
    assert code == 2, err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err and out == ""
    expected = {"not a model": "not a readable ironlearn", "newer format": "newer", "undrawable layer": "Cube",
                "two outputs": "2 outputs", "missing": "no such file", "empty folder": "no model.npz",
                "not html": ".html", "bad port": "port", "port without serve": "add --serve"}[case]
    assert expected in err
    assert not (tmp_path / "viewer.html").exists() or case in ("not html", "bad port", "port without serve")


def test_a_file_name_that_is_not_utf8_reaches_the_page_readable(tmp_path, model_file):
    """``view`` of a compressed file named caf\\xe9.ilc (Latin-1, not UTF-8: Python holds the byte
    as a surrogate) raised UnicodeEncodeError writing the page's title; so did a model whose
    training picture had such a name.  Each undecodable byte is shown as U+FFFD."""
    from helpers import waves
    from ironlearn import codec

    packed = os.path.join(os.fsencode(tmp_path), b"caf\xe9.ilc")
    with open(packed, "wb") as file:
        file.write(codec.encode(waves(12, 16, 1), bpp=2.0, seconds=0.2))
    done = subprocess.run([sys.executable, "-m", "ironlearn", "view", packed], capture_output=True)
    page = tmp_path / os.fsdecode(b"caf\xe9.html")
    assert done.returncode == 0 and b"Traceback" not in done.stderr and page.exists(), done.stderr
    assert "<title>caf\ufffd.ilc: ironlearn viewer</title>" in page.read_text(encoding="utf-8")
    assert data_of(page)["file"]["name"] == "caf\ufffd.ilc"

    rewrite_meta(model_file, lambda meta, arrays: meta["settings"].update(input=os.fsdecode(b"/gone/caf\xe9.png")))
    done = subprocess.run([sys.executable, "-m", "ironlearn", "view", model_file, "--with-picture"], capture_output=True)
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr
    assert "<title>caf\ufffd.png: ironlearn viewer</title>" in (tmp_path / "viewer.html").read_text(encoding="utf-8")


def _serving(*args) -> subprocess.Popen:
    """``ironlearn view ARGS --serve --port 0`` in a child process, its URL the first line of its
    stdout; SIGINT stops it."""
    env = {**os.environ, "DISPLAY": "", "WAYLAND_DISPLAY": ""}
    # A suite started in the background (`make test &`) ignores SIGINT, and a child inherits an
    # ignored signal (it waited out its timeout): a handler set in Python is reset to the default
    # in the child, as a terminal's would be.
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        return subprocess.Popen([sys.executable, "-m", "ironlearn", "view", *args, "--serve", "--port", "0"],
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    finally:
        signal.signal(signal.SIGINT, previous)


def _stopped(process) -> str:
    """Ctrl-C to a :func:`_serving` process; its stderr."""
    process.send_signal(signal.SIGINT)
    _, err = process.communicate(timeout=patience(20))
    assert process.returncode == 0
    return err.decode("utf-8", "replace")


def test_serve_answers_until_ctrl_c(tmp_path, model_file):
    process = _serving(str(model_file))
    try:
        url = process.stdout.readline().decode().strip()
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/viewer\.html", url), url
        with urllib.request.urlopen(url, timeout=10) as response:
            assert response.status == 200 and b"ironlearn-data" in response.read()
        with pytest.raises(urllib.error.HTTPError):  # only the page, never the folder around it
            urllib.request.urlopen(url.replace("viewer.html", "model.npz"), timeout=10)
        err = _stopped(process)
    finally:
        process.kill()
    assert "Traceback" not in err and "stopped serving" in err


def test_a_page_of_any_name_is_served_and_a_moved_one_gets_a_404_and_one_line(tmp_path, model_file):
    """A page name that is not UTF-8 (or holds a space or a #) went into the URL as it was: printed
    undecodable, never matched.  A page moved away while served printed a traceback for each
    request, which got no answer."""
    page = os.path.join(os.fsencode(tmp_path), b"\xff my #1.html")
    process = _serving(str(model_file), "-o", page)
    try:
        url = process.stdout.readline().decode("ascii").strip()
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+/%FF%20my%20%231\.html", url), url
        with urllib.request.urlopen(url, timeout=10) as response:
            assert response.status == 200 and b"ironlearn-data" in response.read()
        os.rename(page, tmp_path / "moved.html")
        for _ in range(3):
            with pytest.raises(urllib.error.HTTPError) as answer:
                urllib.request.urlopen(url, timeout=10)
            body = answer.value.read()
            assert answer.value.code == 404 and b"moved or deleted" in body and len(body) < 1000
        err = _stopped(process)
    finally:
        process.kill()
    gone = [line for line in err.splitlines() if "moved or deleted" in line]
    assert "Traceback" not in err and len(gone) == 1 and "run ironlearn view again" in gone[0], err


def test_a_large_models_page_says_what_it_will_cost_before_it_is_written(tmp_path, capsys, model_file, monkeypatch):
    """A 4096x4096 run's page was 243 MB, written with no word beforehand."""
    from ironlearn.api import pages as page_job

    monkeypatch.setattr(page_job, "LARGE_FILE_BYTES", 0)
    code, _, err = run_cli(capsys, "view", model_file)
    lines = err.strip().splitlines()
    assert code == 0 and lines[0].startswith("writing a page of up to about") and lines[1].startswith("wrote "), err
