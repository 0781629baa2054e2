import re

import numpy as np
import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from PIL import Image

from ironlearn.image import io as io_module
from ironlearn.image.coords import axis, pixel_grid
from ironlearn.image.io import (MODES, InputError, Picture, load_picture, parse_size, read_pixel_csv,
                                read_pixel_levels, write_pixel_csv)


def test_pixel_centres_span_minus_one_to_one():
    np.testing.assert_allclose(axis(4), [-0.75, -0.25, 0.25, 0.75])
    grid = pixel_grid(3, 2)
    assert grid.shape == (6, 2) and grid.dtype == np.float32
    np.testing.assert_allclose(grid[:3, 0], axis(3))  # x varies fastest
    np.testing.assert_allclose(grid[::3, 1], axis(2))


def test_parse_size():
    assert parse_size("256") == 256 and parse_size("640x480") == (640, 480)
    for bad in ("0", "-3", "x", "12x", "axb", "1x2x3"):
        with pytest.raises(ValueError):
            parse_size(bad)


def test_modes_and_resize(tmp_path):
    rgb = np.zeros((20, 40, 3), np.uint8)
    rgb[:, :20] = (255, 0, 0)
    Image.fromarray(rgb).save(tmp_path / "a.png")
    picture = load_picture(tmp_path / "a.png", size=10)
    assert (picture.width, picture.height, picture.mode, picture.channels) == (10, 5, "rgb", 3)
    gray = load_picture(tmp_path / "a.png", mode="gray", size=(8, 8))
    assert gray.pixels.shape == (8, 8, 1) and gray.pixels.dtype == np.float32
    binary = load_picture(tmp_path / "a.png", mode="binary")
    assert set(np.unique(binary.pixels)) <= {0.0, 1.0}


def test_gray_image_defaults_to_gray(tmp_path):
    Image.fromarray(np.full((8, 8, 3), 77, np.uint8)).save(tmp_path / "g.png")
    assert load_picture(tmp_path / "g.png").mode == "gray"


@pytest.mark.parametrize("mode,array", [
    ("binary", (np.arange(64).reshape(8, 8) % 3 == 0) * 255),
    ("gray", np.arange(64).reshape(8, 8) * 4),
    ("rgb", np.random.default_rng(0).integers(0, 256, (6, 9, 3))),
])
def test_csv_round_trip_is_exact(tmp_path, mode, array):
    array = array.astype(np.uint8)
    Image.fromarray(array).save(tmp_path / "in.png")
    picture = load_picture(tmp_path / "in.png", mode=mode)
    write_pixel_csv(tmp_path / "p.csv", picture)
    pixels, read_mode = read_pixel_csv(tmp_path / "p.csv")
    assert read_mode == mode
    np.testing.assert_array_equal(pixels, picture.pixels)


def test_binary_csv_uses_one_for_black(tmp_path):
    (tmp_path / "p.csv").write_text("x,y,pixel_value\n0,0,1\n1,0,0\n0,1,0\n1,1,0\n")
    pixels, mode = read_pixel_csv(tmp_path / "p.csv")
    assert mode == "binary" and pixels[0, 0, 0] == 0.0 and pixels[0, 1, 0] == 1.0  # black, white


def test_a_csv_saved_by_excel_with_a_byte_order_mark_reads(tmp_path):
    """Excel's "CSV UTF-8" starts with U+FEFF, which used to hide the x of the header."""
    (tmp_path / "p.csv").write_bytes("\ufeffx,y,pixel_value\r\n0,0,1\r\n1,0,0\r\n0,1,0\r\n1,1,0\r\n".encode())
    pixels, mode = read_pixel_csv(tmp_path / "p.csv")
    assert mode == "binary" and pixels.shape == (2, 2, 1) and pixels[0, 0, 0] == 0.0


@pytest.mark.parametrize("text,message", [
    ("", "empty"),
    ("a,b,c\n1,2,3\n", "missing column"),
    ("x,y\n0,0\n", "missing column"),
    ("x,y,pixel_value\n", "no pixels"),
    ("x,y,pixel_value\n0,0,1\n1,0,oops\n", "line 3: a non-numeric"),
    ("x,y,pixel_value\n0,0,nan\n", "line 2: NaN"),
    ("x,y,pixel_value\n0,0,1\n0,0,1\n", "appears more than once"),
    ("x,y,pixel_value\n0,0,1\n1,1,0\n", "missing"),
    ("x,y,pixel_value\n-1,0,1\n", "whole numbers from 0"),
    ("x,y,pixel_value\n0,0,1,5\n", "expected 3 values"),
    ("x,y,pixel_value\n0,0,300\n", "0-255"),
])
def test_bad_csv_is_named(tmp_path, text, message):
    (tmp_path / "bad.csv").write_text(text)
    with pytest.raises(InputError, match=message):
        read_pixel_csv(tmp_path / "bad.csv")


# -- properties --------------------------------------------------------------------------------
sides = st.integers(1, 10**6)


@settings(max_examples=100, deadline=None)
@given(width=sides, height=sides, separator=st.sampled_from("xX"))
def test_parse_size_round_trips(width, height, separator):
    assert parse_size(str(width)) == width
    assert parse_size(f"{width}{separator}{height}") == (width, height)


def _int_could_take(char):
    # int() accepts Unicode decimal digits, surrounding whitespace, a sign and underscores.
    return char.isdecimal() or char.isspace() or char in "+-_xX"


@settings(max_examples=200, deadline=None)
@given(st.text().filter(lambda text: not all(_int_could_take(c) for c in text)))
def test_parse_size_rejects_junk(text):
    with pytest.raises(ValueError):
        parse_size(text)


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.sampled_from("0123456789xX+-_ \u0663"), max_size=8))
def test_parse_size_accepts_exactly_n_or_w_x_h(text):
    wanted = re.fullmatch(r"([0-9]+)(?:[xX]([0-9]+))?", text)
    if wanted and all(int(side) > 0 for side in wanted.groups() if side is not None):
        parse_size(text)
    else:
        with pytest.raises(ValueError):
            parse_size(text)


@st.composite
def pictures(draw):
    mode = draw(st.sampled_from(MODES))
    height, width = draw(st.integers(1, 6)), draw(st.integers(1, 6))
    top = 1 if mode == "binary" else 255
    levels = draw(arrays(np.int64, (height, width, 3 if mode == "rgb" else 1), elements=st.integers(0, top)))
    # The format's own ambiguity: a gray file holding only 0 and 1 reads back as a binary drawing.
    assume(mode != "gray" or levels.max() > 1)
    return Picture((levels / top).astype(np.float32), mode, "drawn")


@settings(max_examples=60, deadline=None)
@given(picture=pictures())
def test_pixel_csv_round_trips(tmp_path_factory, picture):
    path = tmp_path_factory.mktemp("csv") / "p.csv"
    write_pixel_csv(path, picture)
    pixels, mode = read_pixel_csv(path)
    assert mode == picture.mode
    np.testing.assert_array_equal(pixels, picture.pixels)


# -- pixel CSVs in pieces, float pictures ------------------------------------------------------------
@pytest.fixture
def small_pieces(monkeypatch):
    """Pieces of 7 rows, so that a small CSV spans several."""
    monkeypatch.setattr(io_module, "PIECE_PIXELS", 7)


@pytest.mark.parametrize("mode", MODES)
def test_a_csv_in_many_pieces_round_trips(tmp_path, small_pieces, mode):
    levels = np.random.default_rng(1).integers(0, 256, (9, 5, 3 if mode == "rgb" else 1)).astype(np.uint8)
    if mode == "binary":
        levels = np.where(levels >= 128, 255, 0).astype(np.uint8)
    picture = Picture(levels, mode, "drawn")
    write_pixel_csv(tmp_path / "p.csv", picture)
    lines = (tmp_path / "p.csv").read_text().splitlines()
    assert len(lines) == 1 + 45 and lines[1].startswith("0,0,") and lines[-1].startswith("4,8,")
    pixels, read_mode = read_pixel_csv(tmp_path / "p.csv")
    assert read_mode == mode
    np.testing.assert_array_equal(pixels, picture.pixels)


def _rows(width, height, skip=()):
    return [f"{x},{y},{(x + y) % 256}" for y in range(height) for x in range(width) if (x, y) not in skip]


@pytest.mark.parametrize("change,message", [
    (lambda rows: rows.__setitem__(17, "1,3,oops"), "line 19: a non-numeric"),
    (lambda rows: rows.__setitem__(17, "1,3"), "line 19: expected 3 values"),
    (lambda rows: rows.__setitem__(17, "1,3,nan"), "line 19: NaN"),
    (lambda rows: rows.__setitem__(17, "1.5,3,0"), "line 19: coordinates must be whole"),
    (lambda rows: rows.insert(15, "") or rows.__setitem__(17, "-1,3,0"), "line 19: coordinates must be whole"),
    (lambda rows: rows.__setitem__(17, rows[2]), "pixel x=2, y=0 appears more than once"),
    (lambda rows: rows.pop(17), "1 pixel(s) of the 4x5 grid are missing (first: x=1, y=4)"),
])
def test_a_bad_row_is_named_by_its_line_across_pieces(tmp_path, small_pieces, change, message):
    rows = _rows(4, 5)
    change(rows)
    (tmp_path / "p.csv").write_text("\n".join(["x,y,pixel_value", *rows]) + "\n")
    with pytest.raises(InputError, match=re.escape(message)):
        read_pixel_csv(tmp_path / "p.csv")


def test_decimals_blank_lines_and_any_order_read_as_before(tmp_path, small_pieces):
    rows = _rows(3, 4)[::-1]
    rows[5] = rows[5].rsplit(",", 1)[0] + ",7.6"  # a decimal level is rounded to the nearest
    (tmp_path / "p.csv").write_text("x,y,pixel_value\r\n" + "\r\n".join(rows[:6] + [""] + rows[6:]) + "\r\n")
    levels, mode = read_pixel_levels(tmp_path / "p.csv")
    expected = (np.arange(3)[None, :] + np.arange(4)[:, None]).astype(np.uint8)
    x, y = map(int, rows[5].split(",")[:2])
    expected[y, x] = 8
    assert mode == "gray" and levels.dtype == np.uint8
    np.testing.assert_array_equal(levels[..., 0], expected)


@pytest.mark.filterwarnings("error")
def test_a_float_picture_spanning_float32_is_stretched_without_overflow(tmp_path):
    values = np.array([[-3.4e38, -1.0, 0.0, 3.4e38]] * 4, np.float32)
    Image.fromarray(values, "F").save(tmp_path / "f.tif")
    picture = load_picture(tmp_path / "f.tif")
    np.testing.assert_allclose(picture.pixels[0, :, 0], [0, 0.5, 0.5, 1], atol=1e-6)
    assert "stretched" in picture.notes[0]
