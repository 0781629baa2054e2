"""Inputs whose cost follows their size (issue 64): pictures that declare far more pixels than
their files hold, a size of 401 digits, a render a typo made huge, and abbreviated options.

Each case ends in one line on stderr and exit 2, with every file the user had unchanged; a picture
is refused before Pillow decodes it, and a command that meets one keeps its memory small.
"""

import argparse
import io
import os
import struct

import pytest
from PIL import Image

import ironlearn
from helpers import make_picture, rewrite_meta, run_cli, run_measured
from test_crafted_files import ADDRESS_LIMIT, SMALL_FILE_PEAK
from test_small_files import tiny_jpeg_declaring

QUICK = {"device": "cpu", "width": 8, "depth": 1}


@pytest.fixture(scope="module")
def run_folder(tmp_path_factory):
    """A tiny run, trained at 24x24."""
    folder = tmp_path_factory.mktemp("cost")
    ironlearn.fit(make_picture(folder / "pic.png", size=24), out=folder / "run", steps=3, **QUICK)
    return folder / "run"


def one_line(capsys, args, message, code=2):
    got, _, err = run_cli(capsys, *args)
    assert got == code, err
    assert message in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    return err


# -- pictures that declare far more than they hold ---------------------------------------------------
def tiny_webp_declaring(path, width: int, height: int):
    """A lossless WebP of one colour whose header declares ``width x height``: its codes take no
    bits a pixel, so the 38 bytes decode to any size."""
    buffer = io.BytesIO()
    Image.new("RGB", (16, 16), "white").save(buffer, "WEBP", lossless=True)
    data = bytearray(buffer.getvalue())
    assert data[12:16] == b"VP8L" and data[20] == 0x2F  # the lossless bitstream's signature, then its sizes
    fields = struct.unpack("<I", data[21:25])[0] & ~((1 << 28) - 1)
    data[21:25] = struct.pack("<I", fields | (width - 1) | (height - 1) << 14)
    path.write_bytes(bytes(data))
    return path


def tiny_gif_declaring(path, width: int, height: int):
    """35 bytes: a ``width x height`` screen holding one frame of one pixel."""
    path.write_bytes(b"GIF89a" + struct.pack("<HHBBB", width, height, 0x80, 0, 0) + b"\0\0\0\xff\xff\xff"
                     + b",\0\0\0\0\1\0\1\0\0" + b"\2\2\x44\1\0" + b";")
    return path


def tiny_bmp_declaring(path, width: int, height: int):
    """An 8-bit RLE BMP whose rows are all skipped by delta codes (255 rows in 4 bytes)."""
    rle = b"".join(b"\0\2\0" + bytes([min(255, height - 1 - row)]) for row in range(0, height - 1, 255)) + b"\0\1"
    info = struct.pack("<IiiHHIIiiII", 40, width, height, 1, 8, 1, len(rle), 2835, 2835, 2, 2)
    start = 14 + len(info) + 8
    path.write_bytes(b"BM" + struct.pack("<IHHI", start + len(rle), 0, 0, start) + info
                     + b"\0\0\0\0\xff\xff\xff\0" + rle)
    return path


def blank_g4_tiff(path, width: int, height: int):
    """A blank page in fax (CCITT G4) coding: one bit a row, as a scanner writes one."""
    buffer = io.BytesIO()
    Image.new("1", (width, 8), 1).save(buffer, "TIFF", compression="group4")
    data = bytearray(buffer.getvalue())
    strip = b"\xff" * -(-height // 8) + b"\0\x10\x01"  # a 1 (vertical mode 0) a row, then end of page
    first = struct.unpack("<I", data[4:8])[0]
    for entry in range(first + 2, first + 2 + 12 * struct.unpack("<H", data[first:first + 2])[0], 12):
        tag, kind = struct.unpack("<HH", data[entry:entry + 4])
        value = {257: height, 278: height, 273: len(data), 279: len(strip)}.get(tag)  # length, rows a strip, strip
        if value is not None:
            data[entry + 8:entry + 12] = struct.pack("<H2x" if kind == 3 else "<I", value)
    path.write_bytes(bytes(data + strip))
    return path


#: Each format's file declaring 10000x10000 in a few bytes, which Pillow decoded whole.
DECLARING = {"webp": tiny_webp_declaring, "gif": tiny_gif_declaring, "jpg": tiny_jpeg_declaring,
             "bmp": tiny_bmp_declaring, "tif": blank_g4_tiff}


@pytest.mark.parametrize("suffix", DECLARING)
def test_a_picture_declaring_far_more_than_its_file_holds_is_refused_before_it_is_decoded(tmp_path, monkeypatch,
                                                                                         suffix):
    """38 to 1,389 bytes declaring 10000x10000, each decoded whole before (WebP: 1.5 GB in 4.6 s);
    encode wrote 1.1 to 2.2 GB of CSV from such files, and fit trained on them."""
    from ironlearn.image.io import InputError, load_picture

    path = DECLARING[suffix](tmp_path / f"big.{suffix}", 10000, 10000)
    assert os.path.getsize(path) < 1400
    monkeypatch.setattr(Image, "MAX_IMAGE_PIXELS", None)  # Pillow's own warning: the size is ours to check
    kind = type(Image.open(path))

    def decode(self):
        raise AssertionError("decoded")

    monkeypatch.setattr(kind, "load", decode)
    name = kind.format.replace("WEBP", "WebP")
    with pytest.raises(InputError, match=rf"declares 10000x10000 pixels in [0-9,]+ bytes, more than real {name} "
                                         r"pictures hold .* or give max_pixels 100000000 to read it"):
        load_picture(path)


def test_a_jpeg_of_thousands_of_scans_is_refused_before_it_is_decoded(tmp_path, monkeypatch):
    """Each scan decodes the whole picture again: one scan repeated 2,000 times made 48 KB at 4 MP
    take 6.6 s (a 95 KB progressive JPEG took 12 s).  A progressive JPEG as encoders write it still
    reads, whatever bytes its segments hold (a start-of-scan marker's among them)."""
    from ironlearn.image.io import InputError, load_picture

    buffer = io.BytesIO()
    make_picture(tmp_path / "p.png", size=64, colour=True)
    Image.open(tmp_path / "p.png").save(buffer, "JPEG", progressive=True, icc_profile=b"\xff\xda" * 200)
    data = buffer.getvalue()
    last = data.rindex(b"\xff\xda")  # the last scan: its header and coded data, up to the end of the picture
    (tmp_path / "ok.jpg").write_bytes(data)
    (tmp_path / "scans.jpg").write_bytes(data[:last] + data[last:-2] * 2000 + b"\xff\xd9")
    assert load_picture(tmp_path / "ok.jpg").values.shape == (64, 64, 3)

    def decode(self):
        raise AssertionError("decoded")

    monkeypatch.setattr(type(Image.open(tmp_path / "scans.jpg")), "load", decode)
    with pytest.raises(InputError, match=r"is a JPEG of 2,00\d scans, more than encoders write \(100\)"):
        load_picture(tmp_path / "scans.jpg")


def test_the_commands_refuse_such_a_picture_in_little_memory(run_folder, tmp_path):
    """encode and fit: one line; view of a run whose model names such a picture: no comparison, as
    for any other picture (2.7 GB before it refused)."""
    picture = tiny_webp_declaring(tmp_path / "big.webp", 10000, 10000)
    for command in (["to-csv", picture, "-o", tmp_path / "out.csv"],
                    ["fit", picture, "--out", tmp_path / "run", "--steps", 3, "--device", "cpu"]):
        done, peak = run_measured(*command, memory_limit=ADDRESS_LIMIT)
        assert done.returncode == 2 and len(done.stderr.strip().splitlines()) == 1, done.stderr
        assert "more than real WebP pictures hold" in done.stderr and "--max-pixels 100000000" in done.stderr
        assert peak < SMALL_FILE_PEAK
    assert sorted(os.listdir(tmp_path)) == ["big.webp"]
    folder = tmp_path / "claims"
    folder.mkdir()
    (folder / "model.npz").write_bytes((run_folder / "model.npz").read_bytes())

    def name_it(meta, arrays):
        meta["settings"]["input"] = str(picture)

    rewrite_meta(folder / "model.npz", name_it)
    done, peak = run_measured("view", folder, "--with-picture", "-o", tmp_path / "page.html",
                              memory_limit=ADDRESS_LIMIT)
    assert done.returncode == 0, done.stderr
    assert "no comparison" in done.stderr and peak < SMALL_FILE_PEAK


def test_a_flat_picture_past_the_bound_is_read_when_the_user_raises_the_limit(tmp_path, capsys):
    """A flat picture can be as dense as a crafted one: past 4.2 MP it is refused unasked, and read
    once --max-pixels is given (here a 2100x2100 screen of one pixel's frame, 35 bytes)."""
    picture = tiny_gif_declaring(tmp_path / "flat.gif", 2100, 2100)
    out = tmp_path / "out.csv"
    one_line(capsys, ["to-csv", picture, "-o", out, "--size", 8], "or give --max-pixels 4410000 to read it as it is")
    assert not out.exists()
    code, _, err = run_cli(capsys, "to-csv", picture, "-o", out, "--size", 8, "--max-pixels", 4410000)
    assert code == 0 and "8x8" in err, err
    tiny_gif_declaring(picture, 2048, 2048)  # 4.2 MP: read whatever its file
    code, _, err = run_cli(capsys, "to-csv", picture, "-o", out, "--size", 8, "--force")
    assert code == 0, err


def test_real_pictures_stay_within_the_bound(tmp_path):
    """The densest that Pillow writes real content in each format, a drawing enlarged 16 times
    (12,800 x 12,800 would pass the bound only where it holds detail)."""
    from ironlearn.image.io import FLAT_PIXELS_PER_BYTE, PIXELS_PER_BYTE

    sample = Image.open(os.path.join(os.path.dirname(ironlearn.__file__), "data", "sample.png")).convert("RGB")
    drawing = sample.resize((sample.width * 8, sample.height * 8), Image.NEAREST)
    for fmt, options in (("JPEG", dict(quality=50, optimize=True)), ("WEBP", dict(lossless=True, method=6)),
                         ("GIF", {}), ("TIFF", dict(compression="tiff_deflate")), ("BMP", {})):
        buffer = io.BytesIO()
        drawing.save(buffer, fmt, **options)
        density = drawing.width * drawing.height / len(buffer.getvalue())
        assert density < PIXELS_PER_BYTE.get(fmt, FLAT_PIXELS_PER_BYTE) / 2, (fmt, density)


# -- numbers a typo made huge ------------------------------------------------------------------------
@pytest.mark.parametrize("command", [["to-csv", "{pic}", "-o", "{tmp}/out.csv"],
                                     ["fit", "{pic}", "--out", "{tmp}/run", "--steps", "1", "--device", "cpu"]],
                         ids=["to-csv", "fit"])
def test_a_size_of_401_digits_is_one_line(run_folder, tmp_path, capsys, command):
    """OverflowError and a traceback: the longest side's scale is a float division."""
    args = [a.format(pic=run_folder.parent / "pic.png", tmp=tmp_path) for a in command]
    one_line(capsys, [*args, "--size", "9" * 401], "is a longer side than ironlearn reads (100 MP in all)")
    assert os.listdir(tmp_path) == []


def test_a_render_past_268_megapixels_asks_for_max_pixels(run_folder, tmp_path, capsys, monkeypatch):
    """--scale 1000 of a 24-pixel run (576 MP): a typo drew for minutes before; now refused before
    anything is drawn, and drawn once --max-pixels says so."""
    from ironlearn.api import render_file

    drawn = []
    monkeypatch.setattr("ironlearn.api.drawing.save_bands", lambda out, width, height, *_, **__: drawn.append(width))
    out = tmp_path / "big.png"
    one_line(capsys, ["render", run_folder, "--scale", 1000, "-o", out],
             "a render of 24000x24000 is 576 MP, more than ironlearn draws unasked (268.4 MP); give a smaller "
             "--size or --scale, or --max-pixels 576000000 to draw it")
    one_line(capsys, ["render", run_folder, "--size", 64, "--max-pixels", 4000, "-o", out],
             "over the limit you set (--max-pixels 4,000)")
    with pytest.raises(ValueError, match="more than ironlearn draws unasked .* give a smaller size or scale, or "
                                         "max_pixels 576000000"):
        render_file(run_folder, out, scale=1000)
    assert not drawn
    code, _, err = run_cli(capsys, "render", run_folder, "--scale", 1000, "--max-pixels", 576000000, "-o", out)
    assert code == 0 and drawn == [24000], err


def test_options_are_never_abbreviated(run_folder, tmp_path, capsys):
    """--step 100 was taken as --steps 100 (argparse's prefix matching), on every command."""
    from ironlearn.cli import build_parser

    one_line(capsys, ["fit", run_folder.parent / "pic.png", "--out", tmp_path / "run", "--step", 100],
             "unrecognized arguments: --step 100")
    one_line(capsys, ["render", run_folder, "--size", 8, "-o", tmp_path / "x.png", "--forc"],
             "unrecognized arguments: --forc")
    parser = build_parser()
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices
    assert not parser.allow_abbrev and not any(command.allow_abbrev for command in commands.values())
    assert os.listdir(tmp_path) == []
