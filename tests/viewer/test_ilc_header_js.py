"""``IL.readHeader`` (``viewer/static/ilcfile.js``) in a real browser against ``codec.read_header``:
for files the codec wrote it must give every field Python gives (floats bit for bit, sections
byte for byte), and for every damaged or crafted file refuse with the message of Python's
``CodecError``, or, where Python reads a damaged file, read the same fields.

The damaged files are evaluated in one call, a few thousand of them: truncations, flipped bytes
with and without their checksums made good again, every byte of a header edited, crafted headers
at and past every bound, sections at the edge of what their header declares, and random bytes.
"""

import base64
import json
import math
import struct
import zlib
from pathlib import Path

import numpy as np
import pytest

from helpers import random_context, waves, with_filters, with_mlp
from ironlearn import codec, viewer
from ironlearn.codec.bitstream import container
from ironlearn.codec.bitstream import sections as bitstream
from ironlearn.codec.bitstream import least_bits
from ironlearn.codec.bitstream.container import CodecError, MAGIC, Writer
from ironlearn.codec.bitstream.context import DEPTH, INPUTS, WAVE
from ironlearn.codec.shapes import MAX_SYMBOL
from ironlearn.codec.shapes import level_shape
from ironlearn.codec.quantise import weight_code
from ironlearn.viewer.format_data import format_script

STATIC = Path(viewer.__file__).parent / "static"

#: What the page answers for each file, as JSON (Playwright turns large results into Python
#: objects slowly): ["read", fields] or ["refused", message] (or ["threw", text] for anything but
#: an IL.FileRefused, which is a failure). Floats come as the hex of their float64 bytes, and the
#: sections as [where they start in the file, their length].
HARNESS = """(cases) => {
  const hex = (bytes) => Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  const bits = (x) => {
    const view = new DataView(new ArrayBuffer(8));
    view.setFloat64(0, x, true);
    return hex(new Uint8Array(view.buffer));
  };
  const coded = (records) => records.map(([exponent, logScale, magnitude]) => [exponent, bits(logScale), magnitude]);
  return JSON.stringify(cases.map((text) => {
    const bytes = Uint8Array.from(atob(text), (c) => c.charCodeAt(0));
    let h;
    try {
      h = IL.readHeader(bytes);
    } catch (error) {
      return error instanceof IL.FileRefused ? ["refused", error.message] : ["threw", String(error)];
    }
    return ["read", {
      version: h.version, height: h.height, width: h.width, channels: h.channels, levels: h.levels,
      hidden: h.hidden, depth: h.depth,
      grids: h.grids.map(([step, a, slope, magnitude]) => [bits(step), bits(a), slope, magnitude]),
      weights: coded(h.weights), filters: coded(h.filters),
      sections: h.sections.map((section) => [section.byteOffset - bytes.byteOffset, section.length]),
      mode: h.mode, gridShapes: h.gridShapes, filteredLevels: h.filteredLevels, tensorSizes: h.tensorSizes,
      numParameters: h.numParameters, context: h.context, contextShifts: h.contextShifts,
      contextWeights: coded(h.contextWeights), contextGrids: h.contextGrids, contextSizes: h.contextSizes,
    }];
  }));
}"""


def bits(x: float) -> str:
    return struct.pack("<d", x).hex()


def python_reading(data: bytes) -> list:
    """What the harness should answer for ``data``: what ``codec.read_header`` makes of it."""
    try:
        h = codec.read_header(data)
    except CodecError as error:
        return ["refused", str(error)]
    coded = [[exponent, bits(log_scale), magnitude] for exponent, log_scale, magnitude in h.weights + h.filters]
    return ["read", {
        "version": h.version, "height": h.height, "width": h.width, "channels": h.channels, "levels": h.levels,
        "hidden": h.hidden, "depth": h.depth,
        "grids": [[bits(step), bits(a), slope, magnitude] for step, a, slope, magnitude in h.grids],
        "weights": coded[:len(h.weights)], "filters": coded[len(h.weights):],
        "sections": [section.hex() for section in h.sections],
        "mode": h.mode, "gridShapes": [list(shape) for shape in h.grid_shapes],
        "filteredLevels": h.filtered_levels, "tensorSizes": h.tensor_sizes, "numParameters": h.num_parameters,
        "context": h.context, "contextShifts": [shift for shift, in h.context_shifts],
        "contextWeights": [[exponent, bits(log_scale), magnitude] for exponent, log_scale, magnitude in h.context_weights],
        "contextGrids": [flag for flag, in h.context_grids], "contextSizes": h.context_sizes,
    }]


def js_readings(page, files: list[bytes]) -> list:
    """The page's answer for each file, as :func:`python_reading` gives it (sections as hex)."""
    answers = json.loads(page.evaluate(HARNESS, [base64.b64encode(data).decode("ascii") for data in files]))
    for data, (outcome, fields) in zip(files, answers):
        if outcome == "read":
            fields["sections"] = [data[start:start + size].hex() for start, size in fields["sections"]]
    return answers


# -- files ------------------------------------------------------------------------------------------------
def uvarint(value: int) -> bytes:
    return Writer().uint(value).getvalue()


def pack_as(header: bytes, sections: list[bytes], version: int = container.VERSION) -> bytes:
    """``container.pack``'s file, of any format version, its checksums made good."""
    table = Writer().uint(len(sections))
    for section in sections:
        table.uint(len(section)).raw(zlib.crc32(section).to_bytes(4, "little"))
    return b"".join([MAGIC, bytes([version]), uvarint(len(header)), header,
                     zlib.crc32(bytes([version]) + header).to_bytes(4, "little"), table.getvalue(), *sections])


def with_an_mlp(data: bytes, context: bool = False) -> bytes:
    """The file of ``data``'s picture given filters and a random MLP, its weights in steps of 2**-8,
    and (``context``) a random context model."""
    decoded = with_mlp(with_filters(codec.read(data)))
    codes = [(q, -8, log_scale) for q, log_scale in
             (weight_code(weight, -8) for weight in decoded.net.named_parameters().values())]
    return bitstream.write(decoded.pyramid, (decoded.net, codes), random_context(decoded.pyramid) if context else None)


@pytest.fixture(scope="module")
def files():
    """name -> a file as the codec writes it: RGB and gray, with and without an MLP and a context
    model, formats 3 to 7."""
    made = {}
    for name, channels in (("rgb", 3), ("gray", 1)):
        made[name] = codec.encode(waves(30, 40, channels), bpp=2.0, seconds=0.5)
        made[f"{name}-mlp"] = with_an_mlp(made[name])
        made[f"{name}-context"] = with_an_mlp(made[name], context=True)
    header, sections = container.unpack(made["rgb-mlp"])
    header = header[:-1]  # without the context model's width (0): format 6's header
    made["rgb-mlp-format-6"] = pack_as(header, sections, version=6)
    made["rgb-mlp-format-4"] = pack_as(header, sections, version=4)
    filter_fields = 6 * 4  # a level: exponent (1 byte), log-scale (4), largest value (1 byte, below 128)
    made["rgb-mlp-format-3"] = pack_as(header[:-filter_fields], sections, version=3)
    assert pack_as(header + b"\x00", sections) == made["rgb-mlp"]  # pack_as writes what container.pack does
    for data in made.values():
        codec.read_header(data)  # each is read by Python
    return made


@pytest.fixture(scope="module")
def page(browser):
    page = browser.new_page()
    errors = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.add_script_tag(path=str(STATIC / "network.js"))  # declares IL
    page.add_script_tag(content=format_script())  # the format's numbers, generated from the codec
    page.add_script_tag(path=str(STATIC / "ilcfile.js"))
    assert not errors, errors
    yield page
    page.close()


# -- damage -----------------------------------------------------------------------------------------------
def header_of(height=40, width=30, channels=3, levels=3, hidden=0, depth=0, grid=(0.01, 0.0, 0, 0),
              grids=None, weight=(-8, 0.0, 0), filter_=(0, 0.0, 0), version=container.VERSION, context=0, shift=0,
              context_weight=(-8, 0.0, 0), learned=1) -> bytes:
    """A header in the layout of codec/header.py; a value given as bytes is written as it is (a
    varint or float of one's own making), and the records are repeated as many times as the
    numbers given say (once where a number is given as bytes). Format 7's context model: a width
    ``context``, each of its inputs' ``shift``, its tensors' ``context_weight`` and each grid's
    ``learned``."""
    def count(value, default=1):
        return value if isinstance(value, int) else default

    writer = Writer()

    def put(kind, value):
        if isinstance(value, bytes):
            writer.raw(value)
        else:
            getattr(writer, kind)(value)

    for value in (height, width, channels, levels, hidden, depth):
        put("uint", value)
    grids = grids or [grid] * (count(levels) * count(channels))
    for record in grids:
        for kind, value in zip(("float32", "float32", "uint", "uint"), record):
            put(kind, value)
    layers = count(depth, 0) + 1 if count(depth, 0) else 0
    for _ in range(2 * layers):
        for kind, value in zip(("sint", "float32", "uint"), weight):
            put(kind, value)
    for _ in range(min(count(levels), 4) if version >= 4 else 0):
        for kind, value in zip(("sint", "float32", "uint"), filter_):
            put(kind, value)
    if version >= 7:
        put("uint", context)
        width = count(context, 1) if context else 0
        for _ in range(INPUTS if width else 0):
            put("uint", shift)
        for _ in range(2 * (DEPTH + 1) if width else 0):
            for kind, value in zip(("sint", "float32", "uint"), context_weight):
                put(kind, value)
        for _ in range(count(levels) * count(channels) if width else 0):
            put("uint", learned)
    return writer.getvalue()


def f32(value: float) -> bytes:
    """``value`` as float32 bytes, infinite where it is beyond float32 (Writer.float32 refuses it)."""
    return struct.pack("<f", value if abs(value) < 3.5e38 or math.isnan(value) else math.copysign(math.inf, value))


def crafted_cases() -> dict:
    """Headers at and past each bound of codec/header.py, each in an otherwise good file."""
    big = uvarint(2**64 - 1)  # ten bytes: a number past 2**53
    headers = {
        "least": header_of(height=1, width=1, channels=1, levels=1),
        "huge height": header_of(height=uvarint(2**60)), "height 0": header_of(height=0),
        "height over": header_of(height=32769), "width 2**70-1": header_of(width=b"\xff" * 9 + b"\x7f"),
        "too many pixels": header_of(height=32768, width=32768), "most pixels": header_of(height=8192, width=8192),
        "2 channels": header_of(channels=2), "0 channels": header_of(channels=0), "4 channels": header_of(channels=4),
        "0 levels": header_of(levels=0), "8 levels": header_of(levels=8), "7 levels": header_of(levels=7),
        "width, no depth": header_of(hidden=16), "depth, no width": header_of(hidden=0, depth=2),
        "mlp over": header_of(hidden=256, depth=8), "mlp at": header_of(hidden=16, depth=2, channels=1),
        "mlp wide": header_of(hidden=32, depth=3, levels=1, channels=1), "hidden 257": header_of(hidden=257),
        "depth 9": header_of(hidden=1, depth=9), "mlp 64x1": header_of(hidden=64, depth=1, levels=7, channels=1),
        "needless zero": header_of(height=b"\x80\x00"), "needless zero 64": header_of(width=b"\xc0\x00"),
        "varint over 10": header_of(levels=b"\xff" * 10 + b"\x01"),
        "weight exponent -2**63": header_of(hidden=4, depth=1, weight=(big, 0.0, 0)),
        "weight exponent 2**63-1": header_of(hidden=4, depth=1, weight=(uvarint(2**64 - 2), 0.0, 0)),
        "weight exponent 1": header_of(hidden=4, depth=1, weight=(1, 0.0, 0)),
        "weight exponent -15": header_of(hidden=4, depth=1, weight=(-15, 0.0, 0)),
        "weight exponent -14": header_of(hidden=4, depth=1, weight=(-14, 0.0, 5)),
        "weight scale nan": header_of(hidden=4, depth=1, weight=(0, f32(math.nan), 0)),
        "weight largest over": header_of(hidden=4, depth=1, weight=(0, 0.0, MAX_SYMBOL + 1)),
        "filter exponent 1": header_of(filter_=(1, 0.0, 0)),
        "filter scale 12.5": header_of(filter_=(0, 12.5, 0)), "filter scale -12": header_of(filter_=(0, -12.0, 1)),
        "filter largest huge": header_of(filter_=(0, 0.0, big)),
        "grid slope 13": header_of(grid=(0.01, 0.0, 13, 0)), "grid slope 12": header_of(grid=(0.01, 0.0, 12, 0)),
        "grid largest over": header_of(grid=(0.01, 0.0, 0, MAX_SYMBOL + 1)),
        "grid a over": header_of(grid=(0.01, 12.000001, 0, 0)), "grid a 12": header_of(grid=(0.01, 12.0, 0, 0)),
        "format 6": header_of(version=6), "format 5": header_of(version=5),
        "format 4": header_of(version=4), "format 3": header_of(version=3),
        "format 3, wrong": header_of(version=4),  # filters where format 3 has none: extra bytes
    }
    for step in (5.0, 4.0, 4.0000005, 2.0**-19, 2.0**-20, 0.0, -0.0, -1.0, math.nan, math.inf, -math.inf, 1e39):
        headers[f"grid step {step}"] = header_of(grid=(f32(step), 0.0, 0, 0))
    versions = {"format 6": 6, "format 5": 5, "format 4": 4, "format 3": 3, "format 3, wrong": 3}
    # Format 7's context model: its width, its inputs' shifts, its tensors' records, each grid's flag,
    # and one bound of multiply-adds a pixel for it and the MLP together.
    context = {
        "format 7, least": dict(height=1, width=1, channels=1, levels=1),
        "context 1": dict(context=1), "context 8 with an MLP": dict(context=8, hidden=16, depth=2, levels=7),
        "context 9 with an MLP": dict(context=9, hidden=16, depth=2, levels=7),
        "context 16 gray": dict(context=16, channels=1), "context 16 rgb": dict(context=16),
        "context 17": dict(context=17, channels=1), "context huge": dict(context=big),
        "context and MLP over, a third": dict(context=16, channels=1, levels=1, hidden=31, depth=2),
        "context and MLP at": dict(context=16, channels=1, levels=1, hidden=30, depth=2),
        "context shift 15": dict(context=2, shift=15), "context shift 16": dict(context=2, shift=16),
        "context weight 511": dict(context=2, context_weight=(-14, -12.0, 511)),
        "context weight 512": dict(context=2, context_weight=(0, 0.0, 512)),
        "context weight exponent 1": dict(context=2, context_weight=(1, 0.0, 0)),
        "context weight scale nan": dict(context=2, context_weight=(0, f32(math.nan), 1)),
        "context grid 0": dict(context=3, learned=0), "context grid 2": dict(context=3, learned=2),
        "context needless zero": dict(context=b"\x80\x00"),
    }
    for name, fields in context.items():
        headers[name], versions[name] = header_of(**fields), 7
    headers["context in format 6"], versions["context in format 6"] = header_of(version=7, context=1), 6
    headers["format 7 without context"], versions["format 7 without context"] = header_of(version=6), 7
    cases = {name: pack_as(header, [b"", b""], versions.get(name, container.VERSION)) for name, header in headers.items()}
    good = headers["least"]
    cases.update({
        "extra header byte": pack_as(good + b"\x00", [b"", b""]),
        "no sections": pack_as(good, []), "one section": pack_as(good, [b""]),
        "three sections": pack_as(good, [b"", b"", b""]),
        "sections with bytes": pack_as(good, [b"\x01\x02\x03\x04", b"junk"]),
    })
    for k in range(len(headers["mlp at"])):
        cases[f"header cut at {k}"] = pack_as(headers["mlp at"][:k], [b"", b""])
    return cases


def room_cases() -> dict:
    """Latents sections one byte short of what their grids declare take at least, just long enough,
    and one byte over; and the grids of a few shapes and magnitudes."""
    cases = {}
    for side, channels, levels, magnitudes in ((1024, 3, 7, [MAX_SYMBOL]), (8189, 1, 4, [300]),
                                               (777, 3, 5, [1, 0, 4096, 77, MAX_SYMBOL]), (2000, 1, 1, [12345]),
                                               (3000, 3, 3, [200, 900]), (6000, 1, 3, [5000])):
        grids = [(0.01, 0.0, 0, magnitudes[i % len(magnitudes)]) for i in range(levels * channels)]
        header = header_of(height=side, width=side + 3, channels=channels, levels=levels, grids=grids)
        shapes = [level_shape(side, side + 3, k) for k in range(levels) for _ in range(channels)]
        needed = sum(least_bits(h * w, grid[3]) for (h, w), grid in zip(shapes, grids))
        enough = max(0, math.ceil((needed - 64) / 8))
        for size in (0, enough - 1, enough, enough + 1):
            if size >= 0:
                cases[f"{side} {channels}x{levels}, {size} bytes"] = pack_as(header, [bytes(size), b""])
    return cases


def density_cases() -> dict:
    """Latents sections coding as many latents as their length allows (bitstream.most_latents), and
    one more; and the 8192x8192 files of near-free zeros that cost gigabytes before the bound."""
    cases = {}
    for size in (0, 8, 400):
        allowed = bitstream.most_latents(size)
        for name, width in (("at", allowed // 1024), ("over", allowed // 1024 + 1)):
            assert name == "over" or allowed % 1024 == 0
            header = header_of(height=1024, width=width, channels=1, levels=1, grid=(0.01, -12.0, 0, 1))
            cases[f"density {name}, {size} bytes"] = pack_as(header, [bytes(size), b""])
    for channels in (1, 3):
        header = header_of(height=8192, width=8192, channels=channels, levels=7, grid=(0.01, -12.0, 0, 1))
        cases[f"near-free 8192x8192x{channels}"] = pack_as(header, [bytes(8), b""])
    return cases


def work_cases() -> dict:
    """Tall grids under the context model holding as much decoding work as their section allows
    (bitstream.most_learned: a latent each, LEARNED_STEP_WORK a wavefront), and one row more."""
    cases, step = {}, bitstream.LEARNED_STEP_WORK
    for size in (0, 400):
        rows = (bitstream.most_learned(size) + step * (WAVE - 1)) // (1 + step * WAVE)  # the most that fit
        for name, height in (("at", rows), ("over", rows + 1)):
            header = header_of(height=height, width=1, channels=1, levels=1, grid=(0.01, -12.0, 0, 1), context=1)
            cases[f"work {name}, {size} bytes"] = pack_as(header, [bytes(size), b""])
    return cases


def container_cases() -> dict:
    """Files wrong before their header is read: not ours, of another format, lengths out of bounds."""
    good = header_of(height=1, width=1, channels=1, levels=1)
    prelude = pack_as(good, [])[:-1]  # up to the section count
    return {
        "empty": b"", "one byte": MAGIC[:1], "three bytes": MAGIC[:3], "magic only": MAGIC,
        "zip": b"PK\x03\x04" + bytes(40), "png": b"\x89PNG\r\n\x1a\n" + bytes(30),
        "text mode": b"\x09ILC" + pack_as(good, [b"", b""])[4:], "text mode, short": b"\x09ILC",
        **{f"version {v}": MAGIC + bytes([v]) + bytes(8) for v in (0, 1, 2, 6, 200, 255)},
        **{f"version {v}, good checksum": pack_as(good, [b"", b""], v) for v in range(8)},
        "no header length": MAGIC + b"\x05", "header length 65537": MAGIC + b"\x05" + uvarint(65537),
        "header length 2**64-1": MAGIC + b"\x05" + uvarint(2**64 - 1),
        "header length over 10 bytes": MAGIC + b"\x05" + b"\xff" * 12,
        "header length needless zero": MAGIC + b"\x05" + b"\x81\x00",
        "header length 65536": MAGIC + b"\x05" + uvarint(65536) + bytes(100),
        "no section count": prelude, "section count 257": prelude + uvarint(257),
        "section count 256": prelude + uvarint(256) + bytes(20),
        "section checksum cut": prelude + b"\x01\x05\x00\x00",
        "section length over": prelude + b"\x01" + uvarint(2**28 + 1) + bytes(4),
        "section length at most": prelude + b"\x01" + uvarint(2**28) + bytes(4 + 10),
        "extra byte": pack_as(good, [b"", b""]) + b"\x00",
        "doubled": pack_as(good, [b"", b""]) * 2,
    }


def file_damage(name: str, data: bytes, rng, changes=(0x01, 0x80, 0x40, 0xFF)) -> dict:
    """``data`` cut short, its bytes changed (checksums left as they are), each of its header's
    bytes XORed with each of ``changes`` with checksums made good, its sections cut, and random
    patches."""
    header, (latents, weights) = container.unpack(data)
    version = data[4]
    cases = {f"{name} whole": data}
    sections_start = len(data) - len(latents) - len(weights)
    for size in [*range(sections_start + 1), *range(sections_start + 1, len(data), 16)]:
        cases[f"{name} cut at {size}"] = data[:size]
    for at in range(0, len(data), 5):
        cases[f"{name} byte {at} flipped"] = data[:at] + bytes([data[at] ^ 0xFF]) + data[at + 1:]
    for at in range(len(header)):
        for change in changes:
            edited = header[:at] + bytes([header[at] ^ change]) + header[at + 1:]
            cases[f"{name} header byte {at} ^ {change:#x}"] = pack_as(edited, [latents, weights], version)
    cases[f"{name} header + 1 byte"] = pack_as(header + b"\x01", [latents, weights], version)
    for size in range(0, len(latents), max(1, len(latents) // 8)):
        cases[f"{name} latents cut to {size}"] = pack_as(header, [latents[:size], weights], version)
    for size in range(0, len(weights), max(1, len(weights) // 8)):
        cases[f"{name} weights cut to {size}"] = pack_as(header, [latents, weights[:size]], version)
    cases[f"{name} sections swapped"] = pack_as(header, [weights, latents], version)
    for index in range(20):
        patched = bytearray(data)
        for _ in range(rng.integers(1, 4)):
            at = int(rng.integers(0, len(patched)))
            patched[at:at + 4] = rng.integers(0, 256, int(rng.integers(1, 5)), dtype=np.uint8).tobytes()
        cases[f"{name} patch {index}"] = bytes(patched[:int(rng.integers(len(patched) // 2, len(patched) + 1))])
    return cases


def random_cases(rng) -> dict:
    return {f"random {index}": start + rng.integers(0, 256, int(rng.integers(0, 60)), dtype=np.uint8).tobytes()
            for index, start in enumerate([b"", MAGIC, MAGIC + b"\x05", MAGIC + b"\x04", MAGIC + b"\x03"] * 10)}


# -- tests ------------------------------------------------------------------------------------------------
def test_files_the_codec_wrote_read_as_python_reads_them(page, files):
    answers = dict(zip(files, js_readings(page, list(files.values()))))
    for name, data in files.items():
        assert answers[name] == python_reading(data), name
        assert answers[name][0] == "read"
    assert answers["rgb-mlp"][1]["depth"] == 2 and answers["rgb-mlp"][1]["filteredLevels"] == [0, 1, 2]
    assert answers["gray"][1]["mode"] == "gray" and answers["rgb-mlp-format-3"][1]["filters"] == []
    assert answers["rgb-context"][1]["context"] == 8 and len(answers["gray-context"][1]["contextShifts"]) == INPUTS
    assert answers["rgb-mlp"][1]["context"] == 0 and answers["rgb-mlp-format-6"][1]["contextSizes"] == []


def test_damaged_and_crafted_files_are_refused_with_pythons_message(page, files):
    rng = np.random.default_rng(0)
    cases = {**container_cases(), **crafted_cases(), **room_cases(), **density_cases(), **work_cases(),
             **random_cases(rng)}
    for name, data in files.items():
        # formats 3 and 4 share most of their header with rgb-mlp: one change a byte is enough there
        cases.update(file_damage(name, data, rng, (0x80,) if "format" in name else (0x01, 0x80, 0x40, 0xFF)))
    expected = {name: python_reading(data) for name, data in cases.items()}
    answers = dict(zip(cases, js_readings(page, list(cases.values()))))
    wrong = [(name, expected[name], answers[name]) for name in cases if answers[name] != expected[name]]
    assert not wrong, f"{len(wrong)} of {len(cases)} disagree, e.g. {wrong[:3]}"
    outcomes = [answer[0] for answer in expected.values()]
    assert outcomes.count("read") > 100 and outcomes.count("refused") > 1000  # both ways, many times
    # the section-length check refuses and accepts at its edge
    edge = [expected[name][0] for name in cases if name.startswith("1024 3x7")]
    assert edge == ["refused", "refused", "read", "read"]
    # and so does the density check: a header's latents, at most as many as its section allows
    assert [expected[name][0] for name in cases if name.startswith("density")] == ["read", "refused"] * 3
    assert all("may code" in expected[name][1] for name in cases if name.startswith(("density over", "near-free")))
    # and the context model's work: at most what its section allows
    assert [expected[name][0] for name in cases if name.startswith("work")] == ["read", "refused"] * 2
    assert all("work under its context model" in expected[name][1] for name in cases if name.startswith("work over"))
    # the context model's multiply-adds, with the MLP's: at the bound read, past it refused (a third rounded)
    for name in ("context 8 with an MLP", "context and MLP at", "context 16 gray", "format 6", "format 7, least"):
        assert expected[name][0] == "read", name
    assert "take 2,068 multiply-adds a pixel" in expected["context and MLP over, a third"][1]
    assert "take 2,152 multiply-adds a pixel" in expected["context 9 with an MLP"][1]


def test_least_bits_is_within_a_rounding_of_pythons(page):
    """Math.log2 and the C library's log2 may round a last bit apart (glibc's log2 is not always
    correctly rounded); no more."""
    magnitudes = list(range(MAX_SYMBOL + 1))
    found = page.evaluate("(ms) => ms.map((m) => IL.leastBits(1, m))", magnitudes)
    for magnitude, value in zip(magnitudes, found):
        expected = least_bits(1, magnitude)
        assert abs(value - expected) <= math.ulp(expected), magnitude


def test_what_is_not_a_uint8array_is_a_type_error(page):
    assert page.evaluate("""() => {
      try { IL.readHeader([0x89, 0x49, 0x4c, 0x43]); } catch (error) { return error instanceof TypeError; }
      return false;
    }""")
