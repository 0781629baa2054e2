"""The codec's byte container: exact layout, round trips, strict fields, and refusal of any damaged file."""

import math
import os
import tracemalloc
import zlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ironlearn.codec.bitstream import container
from ironlearn.codec.bitstream.container import CodecError, MAGIC, Reader, VERSION, Writer, pack, read_file, unpack

FUZZ = settings(max_examples=300)
headers = st.binary(max_size=200)
section_lists = st.lists(st.binary(max_size=300), max_size=5)


def crc(data: bytes) -> bytes:
    return zlib.crc32(data).to_bytes(4, "little")


def uvarint(value: int) -> bytes:
    return Writer().uint(value).getvalue()


def prelude(header: bytes = b"", version: int = VERSION) -> bytes:
    """The bytes before the section count, written out by hand."""
    return MAGIC + bytes([version]) + uvarint(len(header)) + header + crc(bytes([version]) + header)


def sample_header() -> bytes:
    """A 40-byte header, as a codec might write: sizes, a quantisation step, a model name."""
    header = Writer().uint(768).uint(512).sint(-7).float32(0.125).raw(b"coolchic-like-arm-v1/laplace-q8").getvalue()
    assert len(header) == 40
    return header


#: A realistic small file, and two that put lengths and counts at the edges of a varint byte.
SAMPLE = pack(sample_header(), [bytes(range(200)), b"\x00" * 127, b"\xff" * 128])
EMPTY = pack(b"", [])
SMALL = pack(b"h", [b"", b"x"])
VALID_FILES = {"sample": SAMPLE, "empty": EMPTY, "small": SMALL}


def refusal(data: bytes) -> str:
    """The message unpack refuses ``data`` with, checked to be one line that says what to do."""
    with pytest.raises(CodecError) as caught:
        unpack(data)
    message = str(caught.value)
    assert "\n" not in message and "; " in message, message
    return message


def flip(data: bytes, bit: int) -> bytes:
    damaged = bytearray(data)
    damaged[bit // 8] ^= 1 << (bit % 8)
    return bytes(damaged)


# -- the layout ------------------------------------------------------------------------------------------
def test_layout_is_magic_version_header_crc_then_the_section_table_and_payloads():
    assert pack(b"hi", [b"abc", b""]) == (MAGIC + bytes([VERSION]) + b"\x02" + b"hi" + crc(bytes([VERSION]) + b"hi")
                                          + b"\x02" + b"\x03" + crc(b"abc") + b"\x00" + crc(b"")
                                          + b"abc")
    assert len(MAGIC) == 4 and MAGIC[0] >= 0x80 and VERSION == 7


def test_overhead_is_a_few_dozen_bytes():
    sections = [b"a" * 1000, b"b" * 3000, b"c" * 1000]
    assert len(pack(sample_header(), sections)) - 40 - 5000 == 29
    assert len(EMPTY) == 11


@FUZZ
@given(header=headers, sections=section_lists)
def test_pack_then_unpack_gives_back_header_and_sections(header, sections):
    assert unpack(pack(header, sections)) == (header, sections)


def test_the_largest_header_and_section_count_round_trip():
    header, sections = bytes(container.MAX_HEADER_BYTES), [bytes([i]) for i in range(container.MAX_SECTIONS)]
    assert unpack(pack(header, sections)) == (header, sections)


@pytest.mark.parametrize("header, sections, words", [
    (bytes(container.MAX_HEADER_BYTES + 1), [], "header has 65537 bytes"),
    (b"", [b""] * (container.MAX_SECTIONS + 1), "257 sections"),
])
def test_pack_refuses_what_unpack_would_refuse(header, sections, words):
    with pytest.raises(ValueError, match=words):
        pack(header, sections)


def test_pack_refuses_a_file_over_the_size_read_file_reads(monkeypatch):
    monkeypatch.setattr(container, "MAX_FILE_BYTES", 100)
    pack(b"", [bytes(80)])
    with pytest.raises(ValueError, match="over the 100"):
        pack(b"", [bytes(90)])


@pytest.mark.parametrize("header, sections", [("text", []), (b"", [5]), (b"", [b"ok", None])])
def test_pack_refuses_what_is_not_bytes(header, sections):
    with pytest.raises(TypeError, match="must be bytes"):
        pack(header, sections)


# -- Writer and Reader -----------------------------------------------------------------------------------
@pytest.mark.parametrize("write, expected", [
    (lambda w: w.uint(0), b"\x00"), (lambda w: w.uint(127), b"\x7f"), (lambda w: w.uint(128), b"\x80\x01"),
    (lambda w: w.uint(300), b"\xac\x02"), (lambda w: w.uint(2**64 - 1), b"\xff" * 9 + b"\x01"),
    (lambda w: w.sint(0), b"\x00"), (lambda w: w.sint(-1), b"\x01"), (lambda w: w.sint(1), b"\x02"),
    (lambda w: w.sint(-64), b"\x7f"), (lambda w: w.sint(64), b"\x80\x01"),
    (lambda w: w.float32(1.0), b"\x00\x00\x80\x3f"), (lambda w: w.raw(b"ab").raw(bytearray(b"c")), b"abc"),
])
def test_writer_bytes_are_leb128_zigzag_and_little_endian(write, expected):
    assert write(Writer()).getvalue() == expected


@pytest.mark.parametrize("write, error", [
    (lambda w: w.uint(-1), ValueError), (lambda w: w.uint(2**64), ValueError),
    (lambda w: w.sint(2**63), ValueError), (lambda w: w.sint(-(2**63) - 1), ValueError),
    (lambda w: w.float32(1e39), ValueError), (lambda w: w.uint(1.5), TypeError), (lambda w: w.raw("ab"), TypeError),
])
def test_writer_refuses_values_it_cannot_write(write, error):
    with pytest.raises(error):
        write(Writer())


@FUZZ
@given(values=st.lists(st.integers(0, 2**64 - 1), max_size=8), signed=st.lists(st.integers(-(2**63), 2**63 - 1),
       max_size=8), floats=st.lists(st.floats(width=32, allow_nan=False), max_size=4), tail=st.binary(max_size=9))
def test_writer_then_reader_gives_back_every_field(values, signed, floats, tail):
    writer = Writer()
    for value in values:
        writer.uint(value)
    for value in signed:
        writer.sint(value)
    for value in floats:
        writer.float32(value)
    reader = Reader(writer.raw(tail).getvalue())
    assert [reader.uint(0, 2**64 - 1) for _ in values] == values
    assert [reader.sint(-(2**63), 2**63 - 1) for _ in signed] == signed
    assert [reader.float32(finite=False) for _ in floats] == floats
    assert reader.raw(len(tail)) == tail
    reader.done()


def test_reader_reads_nan_and_infinity_only_when_asked():
    reader = Reader(Writer().float32(math.nan).float32(-math.inf).getvalue())
    assert math.isnan(reader.float32(finite=False)) and reader.float32(finite=False) == -math.inf


@pytest.mark.parametrize("data, read, words", [
    (uvarint(300), lambda r: r.uint(0, 299, name="the width"), ["corrupted", "the width is 300, outside 0..299"]),
    (uvarint(3), lambda r: r.uint(4, 9, name="the width"), ["corrupted", "the width is 3, outside 4..9"]),
    (uvarint(2**32), lambda r: r.uint(), ["corrupted", "4294967296"]),
    (Writer().sint(-5).getvalue(), lambda r: r.sint(-4, 4, name="the shift"), ["the shift is -5, outside -4..4"]),
    (b"\x80\x80", lambda r: r.uint(name="the width"), ["truncated", "the header ends inside the width"]),
    (b"", lambda r: r.sint(0, 1), ["truncated", "ends inside a field"]),
    (b"\xff" * 10 + b"\x01", lambda r: r.uint(), ["corrupted", "runs over 10 bytes"]),
    (b"\x85\x00", lambda r: r.uint(), ["corrupted", "needless zero byte"]),
    (Writer().float32(math.nan).getvalue(), lambda r: r.float32(name="the step"), ["the step is nan, not a finite"]),
    (Writer().float32(math.inf).getvalue(), lambda r: r.float32(), ["is inf, not a finite"]),
    (b"\x00\x00", lambda r: r.float32(name="the step"), ["truncated", "the step (4 bytes needed, 2 left)"]),
    (b"abc", lambda r: r.raw(4, name="the name"), ["truncated", "the name (4 bytes needed, 3 left)"]),
    (b"abc", lambda r: r.raw(2) and r.done(), ["corrupted", "in the header, 1 extra byte(s) at the end"]),
])
def test_reader_refuses_with_one_line_naming_the_field(data, read, words):
    with pytest.raises(CodecError) as caught:
        read(Reader(data))
    message = str(caught.value)
    assert "\n" not in message and "; " in message
    for word in words:
        assert word in message


def test_reader_names_the_part_it_reads():
    with pytest.raises(CodecError, match="the latents ends inside the scale"):
        Reader(b"", what="latents").uint(name="the scale")


# -- unpack refuses every damaged file with one line that names the problem ------------------------------
def with_byte(data: bytes, index: int, value: int) -> bytes:
    return data[:index] + bytes([value]) + data[index + 1:]


SECTIONS_START = len(SAMPLE) - (200 + 127 + 128)


@pytest.mark.parametrize("data, words", [
    (b"", ["not an ironlearn compressed file", "only 0 bytes"]),
    (MAGIC[:3], ["not an ironlearn compressed file", "only 3 bytes"]),
    (b"PK\x03\x04" + SAMPLE[4:], ["not an ironlearn compressed file", "signature"]),
    (b"\x89PNG\r\n\x1a\n" + bytes(30), ["not an ironlearn compressed file"]),
    (b"\x09ILC" + SAMPLE[4:], ["not an ironlearn compressed file", "text-mode", "binary mode"]),
    (MAGIC, ["truncated", "the file ends inside the format version"]),
    (with_byte(SAMPLE, 4, VERSION + 1),
     [f"made by a newer ironlearn (format {VERSION + 1}); upgrade ironlearn to read it"]),
    (MAGIC + b"\xc8" + b"anything at all", ["made by a newer ironlearn (format 200)"]),
    (with_byte(SAMPLE, 4, 0)[:20], ["unknown format version 0"]),
    (MAGIC + bytes([VERSION]), ["truncated", "ends inside the header length"]),
    (MAGIC + bytes([VERSION]) + uvarint(container.MAX_HEADER_BYTES + 1), ["corrupted", "the header length is 65537"]),
    (MAGIC + bytes([VERSION]) + b"\xff" * 12, ["corrupted", "the header length runs over 10 bytes"]),
    (SAMPLE[:30], ["truncated", "ends inside the header (40 bytes needed, 24 left)"]),
    (SAMPLE[:47], ["truncated", "the header checksum"]),
    (with_byte(SAMPLE, 10, SAMPLE[10] ^ 0x20), ["corrupted", "the header fails its checksum"]),
    (with_byte(SAMPLE, 46, SAMPLE[46] ^ 0x01), ["corrupted", "the header fails its checksum"]),
    (prelude(), ["truncated", "ends inside the section count"]),
    (prelude() + uvarint(container.MAX_SECTIONS + 1), ["corrupted", "the section count is 257, outside 0..256"]),
    (prelude() + b"\x01\x05", ["truncated", "section 0's checksum"]),
    (prelude() + b"\x01" + uvarint(container.MAX_FILE_BYTES + 1) + crc(b""), ["corrupted", "section 0's length"]),
    (SAMPLE[:-1], ["truncated", "the sections (455 bytes needed, 454 left)"]),
    (SAMPLE[:SECTIONS_START], ["truncated", "the sections (455 bytes needed, 0 left)"]),
    (SAMPLE + b"\x00", ["corrupted", "in the file, 1 extra byte(s) at the end"]),
    (SAMPLE + SAMPLE, ["corrupted", f"{len(SAMPLE)} extra byte(s)"]),
    (with_byte(SAMPLE, SECTIONS_START, 1), ["section 0 is corrupted"]),
    (with_byte(SAMPLE, len(SAMPLE) - 1, 0xfe), ["section 2 is corrupted"]),
])
def test_unpack_refuses_with_one_line_naming_the_problem(data, words):
    message = refusal(data)
    for word in words:
        assert word in message


def test_a_newer_version_is_reported_before_any_damage_it_also_has():
    assert "newer ironlearn" in refusal(with_byte(SAMPLE, 4, 9)[:-3])


@pytest.mark.parametrize("version", range(1, container.READABLE[0]))
def test_earlier_formats_are_refused_with_what_to_do(version):
    assert "compress the picture again" in refusal(prelude(version=version) + bytes(6))


@pytest.mark.parametrize("name", VALID_FILES)
def test_every_bit_flip_of_a_valid_file_is_refused(name):
    data = VALID_FILES[name]
    for bit in range(8 * len(data)):
        refusal(flip(data, bit))


@pytest.mark.parametrize("name", VALID_FILES)
def test_every_truncation_of_a_valid_file_is_refused(name):
    data = VALID_FILES[name]
    for size in range(len(data)):
        message = refusal(data[:size])
        assert "truncated" in message or "not an ironlearn compressed file" in message, message


def test_a_huge_claimed_size_allocates_nothing():
    claims = [prelude() + b"\x01" + uvarint(container.MAX_FILE_BYTES) + crc(b"") + bytes(10),
              MAGIC + b"\x01" + uvarint(container.MAX_HEADER_BYTES) + bytes(10)]
    tracemalloc.start()
    try:
        for data in claims:
            refusal(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 64 * 1024


# -- fuzzing: whatever the bytes, CodecError or a good result, quickly -----------------------------------
def unpack_and_read(data: bytes) -> None:
    """Read ``data`` as a decoder would: unpack it, then a few header fields; only CodecError may escape."""
    try:
        header, sections = unpack(data)
        reader = Reader(header)
        reader.uint(1, 1 << 16, "the width")
        reader.sint(-8, 8, "the shift")
        reader.float32("the step")
        reader.raw(3, "the name")
        reader.done()
    except CodecError as error:
        assert "\n" not in str(error)


@FUZZ
@given(start=st.sampled_from([b"", MAGIC, MAGIC + b"\x01"]), data=st.binary(max_size=400))
def test_random_bytes_raise_nothing_but_codec_error(start, data):
    unpack_and_read(start + data)


@FUZZ
@given(data=st.binary(max_size=40))
def test_reading_fields_from_random_bytes_raises_nothing_but_codec_error(data):
    unpack_and_read(pack(data, []))


@FUZZ
@given(header=headers, sections=section_lists, data=st.data())
def test_a_single_bit_flip_anywhere_is_refused(header, sections, data):
    packed = pack(header, sections)
    refusal(flip(packed, data.draw(st.integers(0, 8 * len(packed) - 1))))


@FUZZ
@given(header=headers, sections=section_lists, data=st.data())
def test_a_truncation_anywhere_is_refused(header, sections, data):
    packed = pack(header, sections)
    refusal(packed[:data.draw(st.integers(0, len(packed) - 1))])


@FUZZ
@given(name=st.sampled_from(sorted(VALID_FILES)), keep=st.floats(0, 1),
       edits=st.lists(st.tuples(st.floats(0, 1, exclude_max=True), st.binary(min_size=1, max_size=4)), max_size=4))
def test_damaged_valid_files_raise_nothing_but_codec_error(name, keep, edits):
    data = bytearray(VALID_FILES[name])
    for where, patch in edits:
        at = int(where * len(data))
        data[at:at + len(patch)] = patch
    unpack_and_read(bytes(data[:round(keep * len(data))]))


# -- read_file --------------------------------------------------------------------------------------------
def test_read_file_gives_the_bytes_of_a_file(tmp_path):
    path = tmp_path / "picture.ilc"
    path.write_bytes(SAMPLE)
    assert unpack(read_file(path)) == unpack(SAMPLE)
    assert read_file(str(path), limit=len(SAMPLE)) == SAMPLE


def read_file_refusal(path, **options) -> str:
    with pytest.raises(CodecError) as caught:
        read_file(path, **options)
    message = str(caught.value)
    assert "\n" not in message and "; " in message and str(path) in message
    return message


def test_read_file_refuses_a_missing_path(tmp_path):
    assert "no such file" in read_file_refusal(tmp_path / "missing.ilc")


def test_read_file_refuses_a_folder(tmp_path):
    assert "is a folder" in read_file_refusal(tmp_path)


def test_read_file_refuses_a_file_over_the_limit(tmp_path):
    path = tmp_path / "big.ilc"
    path.write_bytes(bytes(101))
    assert "101 bytes, over the 100" in read_file_refusal(path, limit=100)


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="no named pipes here")
def test_read_file_refuses_a_pipe_without_waiting_on_it(tmp_path):
    path = tmp_path / "pipe.ilc"
    os.mkfifo(path)
    assert "not a regular file" in read_file_refusal(path)


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0, reason="root reads any file")
def test_read_file_refuses_an_unreadable_file(tmp_path):
    path = tmp_path / "locked.ilc"
    path.write_bytes(SAMPLE)
    path.chmod(0)
    assert "cannot read" in read_file_refusal(path)
