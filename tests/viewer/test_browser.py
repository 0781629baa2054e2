"""The page in a real browser: what it draws must be what ``ironlearn render`` draws.

Every preset is drawn by the WebGL2 shader and by the CPU path and compared
with ``render`` at 40 dB PSNR or better; so is a zoomed region against
``render --view``.  The interactive page must load without a console error and
answer the wheel, a drag, the keys and a double-click.
"""

import pytest

from helpers import make_picture
from ironlearn.cli import main
from models import PRESETS, save_model
from pages import MIN_PSNR_DB, NO_WEBGL2, READY, PageErrors, photograph, psnr_db, read_rgb

SIZE = {name: (128, 128) for name in PRESETS}
SIZE["classic"] = (64, 64)  # 99,457 weights per pixel: seconds on a software GPU
CPU_SIZE = (48, 40)  # not square: a swapped axis shows
VIEWS = {"hashgrid": (-0.3, 0.1, 0.2, 0.45), "siren": (0.25, -0.75, 0.75, -0.35)}


@pytest.fixture(scope="module")
def pages(tmp_path_factory):
    """One model file and one viewer page per preset."""
    folder = tmp_path_factory.mktemp("pages")
    made = {}
    for name in PRESETS:
        model = save_model(folder / f"{name}.npz", name)
        page = folder / f"{name}.html"
        assert main(["view", str(model), "-o", str(page)]) == 0
        made[name] = (model, page)
    return made


def render_reference(model, size, out, view=None):
    args = ["render", str(model), "--size", f"{size[0]}x{size[1]}", "-o", str(out), "--device", "cpu"]
    if view is not None:
        args.append("--view=" + ",".join(repr(v) for v in view))
    assert main(args) == 0
    return read_rgb(out)


@pytest.mark.parametrize("name", list(PRESETS))
def test_the_shader_draws_what_render_draws(browser, pages, tmp_path, name):
    model, page = pages[name]
    size = SIZE[name]
    drawn, mode, errors = photograph(browser, page, size)
    expected = render_reference(model, size, tmp_path / "expected.png")
    assert mode == "webgl2" and not errors
    assert drawn.shape == expected.shape
    assert psnr_db(drawn, expected) >= MIN_PSNR_DB


def test_the_whole_picture_at_256(browser, pages, tmp_path):
    model, page = pages["hashgrid"]
    drawn, _, _ = photograph(browser, page, (256, 256))
    assert psnr_db(drawn, render_reference(model, (256, 256), tmp_path / "expected.png")) >= MIN_PSNR_DB


@pytest.mark.parametrize("name", list(VIEWS))
def test_a_zoomed_view_draws_what_render_view_draws(browser, pages, tmp_path, name):
    model, page = pages[name]
    size, view = (96, 80), VIEWS[name]
    drawn, _, errors = photograph(browser, page, size, view=view)
    expected = render_reference(model, size, tmp_path / "expected.png", view=view)
    assert not errors and psnr_db(drawn, expected) >= MIN_PSNR_DB
    whole = render_reference(model, size, tmp_path / "whole.png")
    assert psnr_db(drawn, whole) < 25  # it really is another picture


@pytest.mark.parametrize("name", list(PRESETS))
def test_the_cpu_path_draws_what_render_draws(browser, pages, tmp_path, name):
    model, page = pages[name]
    drawn, mode, errors = photograph(browser, page, CPU_SIZE, cpu=True)
    assert mode == "cpu" and not errors
    assert psnr_db(drawn, render_reference(model, CPU_SIZE, tmp_path / "expected.png")) >= MIN_PSNR_DB


def test_without_webgl2_the_cpu_draws_the_view(browser, pages, tmp_path):
    model, page = pages["fourier"]
    view = VIEWS["hashgrid"]
    drawn, mode, errors = photograph(browser, page, CPU_SIZE, view=view, init_script=NO_WEBGL2)
    assert mode == "cpu" and not errors
    expected = render_reference(model, CPU_SIZE, tmp_path / "expected.png", view=view)
    assert psnr_db(drawn, expected) >= MIN_PSNR_DB


# -- the interactive page -----------------------------------------------------------------
@pytest.fixture(scope="module")
def run_page(tmp_path_factory):
    """A real (short) fit, so the page has a training picture, time-lapse, plot and metrics."""
    folder = tmp_path_factory.mktemp("run")
    picture = make_picture(folder / "disc.png", colour=True)
    assert main(["fit", str(picture), "--out", str(folder / "run"), "--steps", "20", "--width", "16",
                 "--depth", "1", "--quiet", "--device", "cpu"]) == 0
    assert main(["view", str(folder / "run")]) == 0
    return folder / "run" / "viewer.html"


def open_interactive(browser, page_path, init_script=None):
    errors = PageErrors()
    page = errors.watch(browser.new_page(viewport={"width": 720, "height": 480}))
    if init_script:
        page.add_init_script(init_script)
    page.goto(f"file://{page_path}")
    page.wait_for_function(READY, timeout=120_000)
    return page, errors


def under(page, x, y):
    """The point of the [-1, 1] square under stage pixel (x, y)."""
    box = page.locator("#stage").bounding_box()
    x0, y0, x1, y1 = page.evaluate("window.ironlearnViewer.view")
    return x0 + (x1 - x0) * x / box["width"], y0 + (y1 - y0) * y / box["height"]


def test_the_interactive_page_zooms_pans_and_resets(browser, run_page):
    page, errors = open_interactive(browser, run_page)
    try:
        assert page.inner_text("#zoom") == "1.00\u00d7"
        assert page.evaluate("window.ironlearnViewer.mode") == "webgl2"
        assert page.locator("#notice").is_hidden()
        for selector in ("#timelapse-figure", "#loss-figure", "#compare-label"):
            assert page.locator(selector).is_visible(), selector
        assert "PSNR" in page.inner_text("#metrics") and "parameters" in page.inner_text("#metrics")

        box = page.locator("#stage").bounding_box()
        x, y = 0.3 * box["width"], 0.6 * box["height"]
        before = under(page, x, y)
        page.mouse.move(box["x"] + x, box["y"] + y)
        page.mouse.wheel(0, -300)
        page.wait_for_function("window.ironlearnViewer.zoom > 1.5")
        assert page.inner_text("#zoom") == "1.82\u00d7"  # exp(300 * 0.002)
        assert under(page, x, y) == pytest.approx(before, abs=1e-4)  # the zoom keeps the pointer's point

        page.mouse.down()
        page.mouse.move(box["x"] + x + 50, box["y"] + y - 20, steps=4)
        page.mouse.up()
        assert under(page, x + 50, y - 20) == pytest.approx(before, abs=1e-4)  # the point followed the drag

        page.keyboard.press("+")
        assert page.inner_text("#zoom") == "2.28\u00d7"
        page.keyboard.press("o")
        assert page.locator("#split").is_visible()
        page.mouse.dblclick(box["x"] + 10, box["y"] + 10)
        assert page.inner_text("#zoom") == "1.00\u00d7"
        page.wait_for_function(READY, timeout=120_000)
        assert not errors
    finally:
        page.close()


def test_without_webgl2_the_page_says_so_in_one_line(browser, run_page):
    page, errors = open_interactive(browser, run_page, init_script=NO_WEBGL2)
    try:
        notice = page.inner_text("#notice")
        assert page.evaluate("window.ironlearnViewer.mode") == "cpu"
        assert "WebGL2 is not available" in notice and "\n" not in notice.strip()
        assert not errors
    finally:
        page.close()


def test_a_lost_webgl_context_is_said_in_one_line_and_never_ready(browser, run_page):
    """The browser may take a page's WebGL context back (a GPU reset, too little memory): the
    canvas goes blank, and a painter that went on would call a blank canvas done, so that a
    screenshot waiting on `ready` shot it (a blank shot, once in three full runs under load)."""
    page, _ = open_interactive(browser, run_page)
    try:
        assert page.evaluate("window.ironlearnViewer.mode") == "webgl2"
        page.evaluate("window.ironlearnViewer.canvas.getContext('webgl2')"
                      ".getExtension('WEBGL_lose_context').loseContext()")
        page.wait_for_function("window.ironlearnViewer.contextLost === true", timeout=30_000)
        page.evaluate("window.ironlearnViewer.redraw()")
        page.wait_for_timeout(1000)  # a painter's end, had it come, would have set ready by now
        assert page.evaluate("window.ironlearnViewer.ready") is False
        line = page.inner_text("#error")
        assert "WebGL context" in line and "reload" in line and "\n" not in line.strip()
    finally:
        page.close()
