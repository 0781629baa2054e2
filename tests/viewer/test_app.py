"""The page for any compressed file (``ironlearn view --app``), in a real Chromium: a file dropped on
it or picked is decoded in the page, by constriction's range decoder compiled to WebAssembly, into
the same latents, operations, numbers (to the bit) and shader as Python's plan of the picture
(``build_picture_plan``, which the file's own page is held to as well), and draws what ``render FILE`` draws; a damaged file is refused
in one line whenever Python refuses it, and decodes to what Python decodes when Python does not.
"""

import base64

import numpy as np
import pytest

from helpers import rounded_network, run_cli, waves, with_everything
from ironlearn import codec
from ironlearn.codec.bitstream import container
from ironlearn.codec.bitstream import entropy
from ironlearn.codec.bitstream import portable
from ironlearn.codec.bitstream import sections as bitstream
from ironlearn.cli import main
from pages import READY, bare_hash, read_rgb
from picture_oracle import build_picture_plan
from test_compressed import PAGE_ALLOWANCE, close_enough, expected_data, photograph_like

SIZE = (96, 72)


def _as_format_5(data: bytes) -> bytes:
    """The same picture as ironlearn wrote it in format 5: its scales by the C library's exp and log."""
    decoded = codec.read(data)
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(container, "VERSION", 5)
        return bitstream.write(decoded.pyramid, None if decoded.net is None else rounded_network(decoded.net))


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    folder = tmp_path_factory.mktemp("app")
    rgb = codec.encode(waves(30, 40, 3), bpp=2.0, seconds=0.5)
    made = {"rgb": rgb, "gray": codec.encode(waves(33, 27, 1), bpp=2.0, seconds=0.5),
            "photo": codec.encode(photograph_like(96, 128), bpp=1.0, seconds=1), "rgb-mlp": with_everything(rgb)}
    made["rgb-mlp-format-5"] = _as_format_5(made["rgb-mlp"])
    paths = {}
    for name, data in made.items():
        paths[name] = folder / f"{name}.ilc"
        paths[name].write_bytes(data)
    app = folder / "viewer.html"
    assert main(["view", "--app", "-o", str(app)]) == 0
    return app, paths


def opened(browser, app, path, hash=""):
    """Drop ``path`` on the page (through its file picker): ``(page, api)`` once it draws or refuses."""
    page = browser.new_page()
    page.goto(app.as_uri() + hash)
    page.wait_for_function("window.ironlearnViewer && window.ironlearnViewer.waiting")
    page.set_input_files("#file", str(path))
    page.wait_for_function(f"({READY}) || window.ironlearnViewer.error", timeout=60_000)
    return page


@pytest.mark.parametrize("name", ["rgb", "gray", "photo", "rgb-mlp", "rgb-mlp-format-5"])
def test_a_dropped_file_becomes_its_own_page_to_the_bit(browser, files, name):
    app, paths = files
    page = opened(browser, app, paths[name], bare_hash(SIZE))
    try:
        drawn = page.evaluate("""() => { const api = window.ironlearnViewer, d = api.data;
            return { error: api.error, ops: d.ops, shader: d.shader, output: d.output, texture: d.texture,
                     model: d.model, picture: d.picture, metrics: d.metrics,
                     weights: Array.from(new Uint8Array(d.unpacked.buffer), (b) => String.fromCharCode(b)).join("") }; }""")
    finally:
        page.close()
    assert drawn["error"] is None
    decoded = codec.read(paths[name].read_bytes())
    expected = expected_data(decoded, paths[name].name, paths[name].stat().st_size)
    for key in ("ops", "shader", "output", "texture", "model", "picture"):
        assert drawn[key] == expected[key], key
    assert drawn["metrics"] == pytest.approx(expected["metrics"])
    weights = np.frombuffer(drawn["weights"].encode("latin-1"), np.uint32)
    assert np.array_equal(weights, build_picture_plan(decoded).weights.view(np.uint32))


@pytest.mark.parametrize("name", ["photo", "rgb-mlp"])
def test_it_draws_what_render_draws(browser, files, tmp_path, name):
    app, paths = files
    page = opened(browser, app, paths[name], bare_hash(SIZE))
    try:
        assert page.evaluate("window.ironlearnViewer.mode") == "webgl2"
        drawn = page.locator("canvas#network").screenshot()
    finally:
        page.close()
    (tmp_path / "drawn.png").write_bytes(drawn)
    out = tmp_path / "expected.png"
    assert main(["render", str(paths[name]), "--size", f"{SIZE[0]}x{SIZE[1]}", "-o", str(out)]) == 0
    assert close_enough(read_rgb(tmp_path / "drawn.png"), read_rgb(out))


def test_the_page_computes_portable_exp_and_log_as_python_does(browser, files):
    """Format 6's scales (codec/portable.py) are the same float64 in the page, to the bit."""
    app, _ = files
    rng = np.random.default_rng(3)
    xs = np.concatenate([rng.uniform(-12, 12, 3000), [0.0, -12.0, 12.0]]).tolist()
    ys = np.exp(rng.uniform(-3, 26, 3000)).tolist() + [0.2, 1.0]
    page = browser.new_page()
    page.goto(app.as_uri())
    try:
        found = page.evaluate("""([xs, ys]) => ({ exp: xs.map(IL.portableExp), log: ys.map(IL.portableLog),
                                                  table: IL.classLogActivity(IL.portableLog) })""", [xs, ys])
    finally:
        page.close()
    assert [float(v) for v in found["exp"]] == [portable.exp(x) for x in xs]
    assert [float(v) for v in found["log"]] == [portable.log(y) for y in ys]
    assert [float(v) for v in found["table"]] == entropy.class_log_activity(portable.log).tolist()


def _damaged(data: bytes, rng) -> list:
    """Truncations, and single bytes changed all over the file (most in its sections)."""
    variants = [data[:n] for n in (0, 3, 8, len(data) // 3, len(data) // 2, len(data) - 4, len(data) - 1)]
    variants.append(data + b"\0\0\0\0")
    for at in list(range(min(64, len(data)))) + list(rng.integers(0, len(data), 120)):
        changed = bytearray(data)
        changed[at] ^= 1 << int(rng.integers(0, 8))
        variants.append(bytes(changed))
    return variants


def test_a_damaged_file_is_refused_as_python_refuses_it(browser, files):
    """Each variant through the page's own reader (IL.readIlc), all in one call: refused exactly when
    Python refuses it, with one line; otherwise decoded to Python's latents."""
    app, paths = files
    variants = _damaged(paths["rgb-mlp"].read_bytes(), np.random.default_rng(0))
    page = browser.new_page()
    page.goto(app.as_uri())
    page.wait_for_function("window.ironlearnViewer && window.ironlearnViewer.waiting")
    try:
        results = page.evaluate("""async (files) => {
            const codec = window.ironlearnViewer.data.codec, out = [];
            for (const text of files) {
              try {
                const picture = await IL.readIlc(IL.base64Bytes(text), codec);
                out.push({ latents: picture.latents.map((level) => level && level.map((g) => Array.from(g))) });
              } catch (error) {
                out.push({ error: error instanceof IL.FileRefused ? error.message : `${error.name}: ${error.message}` });
              }
            }
            return out; }""", [base64.b64encode(v).decode() for v in variants])
    finally:
        page.close()
    refused = 0
    for variant, result in zip(variants, results):
        try:
            decoded = codec.read(variant)
        except codec.CodecError as exc:
            # The same words; where a section's decoding fails, constriction's words for it differ.
            assert "error" in result and "\n" not in result["error"], result
            assert result["error"] == str(exc) or ("section" in str(exc) and "section" in result["error"]), result
            refused += 1
            continue
        assert "latents" in result, result["error"]
        for k, grids in enumerate(result["latents"]):
            assert (grids is None) == decoded.pyramid.is_empty(k)
            if grids is not None:
                assert np.array_equal(np.asarray(grids).reshape(decoded.pyramid.latents[k].shape),
                                      decoded.pyramid.latents[k])
    assert refused > len(variants) // 2  # most damage is found


def test_another_file_replaces_the_picture(browser, files, tmp_path):
    """A damaged file is refused and the page waits; a good one draws; another replaces it, with its
    own stage (the last one's listeners gone: one key press zooms once)."""
    app, paths = files
    broken = tmp_path / "broken.ilc"
    broken.write_bytes(paths["rgb"].read_bytes()[:-8])
    page = opened(browser, app, broken)
    try:
        assert page.evaluate("window.ironlearnViewer.error").startswith("broken.ilc: ")
        page.set_input_files("#file", str(paths["photo"]))
        page.wait_for_function(READY)
        page.set_input_files("#another-file", str(paths["gray"]))
        page.wait_for_function(f"{READY} && window.ironlearnViewer.data.picture.mode === 'gray'")
        assert page.evaluate("window.ironlearnViewer.error") is None
        assert page.locator("#error").is_hidden() and page.locator("#open").is_hidden()
        assert page.evaluate("window.ironlearnViewer.data.title") == "gray.ilc: ironlearn viewer"
        page.locator("#stage").focus()
        page.keyboard.press("+")
        assert page.evaluate("window.ironlearnViewer.zoom") == pytest.approx(1.25)
    finally:
        page.close()


#: Workers that note when they are ended; the first one's answer is held back until ``window.held()``.
HOLD_FIRST_WORKER = """(() => {
  const Made = window.Worker;
  window.workers = [];
  window.Worker = class extends Made {
    constructor(...args) { super(...args); this.terminated = false; window.workers.push(this); }
    terminate() { this.terminated = true; super.terminate(); }
    set onmessage(handler) {
      const first = window.workers[0] === this;
      super.onmessage = first ? (event) => { window.held = () => handler(event); } : handler;
    }
  };
})()"""


def test_a_later_file_takes_the_place_of_one_still_being_read(browser, files):
    """A slow file dropped before a fast one replaced it when it finished, and its worker ran on.
    The first file's answer is held back here until the second is drawn: the first one's worker is
    ended when the second comes, and its answer, if it came, would change nothing."""
    app, paths = files
    page = browser.new_page()
    try:
        page.add_init_script(HOLD_FIRST_WORKER)
        page.goto(app.as_uri())
        page.wait_for_function("window.ironlearnViewer && window.ironlearnViewer.waiting")
        page.set_input_files("#file", str(paths["photo"]))
        page.wait_for_function("window.workers.length === 1")  # the first file is being decoded
        page.set_input_files("#file", str(paths["gray"]))
        page.wait_for_function(f"{READY} && window.ironlearnViewer.data.picture.mode === 'gray'", timeout=60_000)
        page.wait_for_function("Boolean(window.held) || window.workers[0].terminated", timeout=60_000)
        assert page.evaluate("window.workers.map((worker) => worker.terminated)") == [True, True]
        page.evaluate("() => window.held && window.held()")
        page.evaluate("() => new Promise((done) => setTimeout(done, 0))")  # what the answer would set off
        shown = page.evaluate("(({ data, ready, error }) => [data.title, ready, error])(window.ironlearnViewer)")
    finally:
        page.close()
    assert shown == ["gray.ilc: ironlearn viewer", True, None]


def test_a_file_too_large_to_be_one_is_refused_unread(browser, files, tmp_path):
    app, _ = files
    huge = tmp_path / "huge.ilc"
    with open(huge, "wb") as file:
        file.truncate(container.MAX_FILE_BYTES + 1)  # sparse: no disk spent
    page = opened(browser, app, huge)
    try:
        error = page.evaluate("window.ironlearnViewer.error")
    finally:
        page.close()
    assert error.startswith("huge.ilc: it has 268,435,457 bytes, over the 268,435,456 ironlearn reads")


def test_a_damaged_file_dropped_on_the_page_says_so(browser, files, tmp_path):
    app, paths = files
    broken = tmp_path / "broken.ilc"
    broken.write_bytes(paths["photo"].read_bytes()[:-8])
    page = opened(browser, app, broken)
    try:
        error = page.evaluate("window.ironlearnViewer.error")
        shown = page.locator("#error").inner_text()
        ready = page.evaluate(READY)
    finally:
        page.close()
    assert not ready and error.startswith("broken.ilc: ") and shown == error


def test_a_dropped_file_is_decoded_off_the_main_thread_and_a_near_free_one_refused_at_once(browser, files, tmp_path):
    """A valid 352-byte file of near-free zeros blocked the tab's main thread for 54 s and took 6 GB:
    the page now refuses it from its header, as Python does (bitstream.most_latents), and decodes
    any file in a worker, never calling the decoder on the page's own thread."""
    from test_crafted_files import _near_free

    app, paths = files
    bomb = tmp_path / "near-free.ilc"
    bomb.write_bytes(_near_free(8192, 8192, 1, 2, coded={1}))
    with pytest.raises(codec.CodecError) as refused:
        codec.read_header(bomb.read_bytes())
    for path, error in ((paths["photo"], None), (bomb, f"near-free.ilc: {refused.value}")):
        page = browser.new_page()
        try:
            page.add_init_script("""(() => { const Made = window.Worker; window.workersMade = 0;
                window.Worker = class extends Made { constructor(...a) { super(...a); window.workersMade += 1; } }; })()""")
            page.goto(app.as_uri())
            page.wait_for_function("window.ironlearnViewer && window.ironlearnViewer.waiting")
            page.evaluate("""() => { const read = IL.readIlc; window.readHere = 0;
                IL.readIlc = (...a) => { window.readHere += 1; return read(...a); }; }""")
            page.set_input_files("#file", str(path))
            page.wait_for_function(f"({READY}) || window.ironlearnViewer.error", timeout=60_000)
            assert page.evaluate("[window.workersMade, window.readHere, window.ironlearnViewer.error]") == [1, 0, error]
        finally:
            page.close()


# -- the command, without a browser ----------------------------------------------------------------
def test_view_app_writes_one_small_page(tmp_path, capsys, files):
    page = tmp_path / "viewer.html"
    code, _, err = run_cli(capsys, "view", "--app", "-o", page)
    assert code == 0 and "drop an .ilc file" in err
    assert page.stat().st_size <= PAGE_ALLOWANCE
    page.write_text("mine")
    code, _, err = run_cli(capsys, "view", "--app", "-o", page)
    assert code == 2 and "already exists" in err and page.read_text() == "mine"
    code, _, err = run_cli(capsys, "view", "--app", files[1]["rgb"], "-o", tmp_path / "other.html")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--app" in err
    code, _, err = run_cli(capsys, "view")
    assert code == 2 and len(err.strip().splitlines()) == 1 and "--app" in err
    code, _, err = run_cli(capsys, "view", "--app", "--port", "9000", "-o", tmp_path / "served.html")
    assert code == 2 and "--serve" in err and not (tmp_path / "served.html").exists()
