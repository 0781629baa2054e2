"""Crafted compressed files, built with the codec's own writer: each is refused in one line (exit 2,
no traceback, the user's files untouched) or read with work and memory in proportion to the
request and to the file, whatever picture its header declares."""

import time

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from helpers import run_measured, waves
from ironlearn import codec
from ironlearn.codec.bitstream import container
from ironlearn.codec.bitstream import sections as bitstream
from ironlearn.codec.bitstream import least_bits, most_latents
from ironlearn.codec.bitstream.header import MAX_MLP_MACS, MAX_PIXELS
from ironlearn.codec.shapes import MAX_SYMBOL

#: Peak resident memory a command may reach on any of these files: the interpreter and NumPy
#: take about 60 MB; the grids a file declares are not allocated unless it codes them.
SMALL_FILE_PEAK = 250 * 2**20
#: Address space the commands run in: a regression fails fast instead of filling the machine.
ADDRESS_LIMIT = 2 * 2**30


def _header(height, width, channels=3, levels=7, *, hidden=0, depth=0, magnitude=0, weight_tensors=0) -> bytes:
    """A header as the codec writes it (bitstream.write's layout), every field within its bounds."""
    header = container.Writer().uint(height).uint(width).uint(channels).uint(levels).uint(hidden).uint(depth)
    for _ in range(levels * channels):
        header.float32(0.01).float32(0.0).uint(0).uint(magnitude)
    for _ in range(weight_tensors):
        header.sint(-8).float32(0.0).uint(0)
    for _ in range(min(levels, 4)):
        header.sint(0).float32(0.0).uint(0)
    return header.uint(0).getvalue()  # no context model


def _refused_in_one_line(done, path, before):
    assert done.returncode == 2, done.stderr
    assert len(done.stderr.strip().splitlines()) == 1 and "Traceback" not in done.stderr, done.stderr
    assert path.read_bytes() == before  # the user's file, byte for byte


@pytest.fixture
def empty_8k(tmp_path):
    """264 bytes declaring 8192x8192 RGB, 7 levels, every grid empty (what compress writes for black)."""
    path = tmp_path / "empty.ilc"
    path.write_bytes(container.pack(_header(8192, 8192), [b"", b""]))
    return path


def test_a_file_of_empty_8k_grids_renders_16x16_in_little_memory(empty_8k, tmp_path):
    done, peak = run_measured("render", empty_8k, "--size", 16, "-o", tmp_path / "out.png",
                              memory_limit=ADDRESS_LIMIT)
    assert done.returncode == 0, done.stderr
    assert peak < SMALL_FILE_PEAK  # 2.15 GB before


def test_a_file_of_empty_8k_grids_makes_a_small_page(empty_8k, tmp_path):
    done, peak = run_measured("view", empty_8k, "-o", tmp_path / "page.html", memory_limit=ADDRESS_LIMIT)
    assert done.returncode == 0, done.stderr
    assert peak < SMALL_FILE_PEAK and (tmp_path / "page.html").stat().st_size < 2**20  # 1.82 GB before


def test_info_decodes_nothing(empty_8k, tmp_path):
    """A header declaring magnitude 32768 over an empty section: info printed 268 million latents."""
    path = tmp_path / "loud.ilc"
    path.write_bytes(container.pack(_header(8192, 8192, magnitude=MAX_SYMBOL), [b"", b""]))
    before = path.read_bytes()
    started = time.perf_counter()
    done, peak = run_measured("info", path, memory_limit=ADDRESS_LIMIT)
    _refused_in_one_line(done, path, before)
    assert "fewer than" in done.stderr and peak < SMALL_FILE_PEAK and time.perf_counter() - started < 20
    done, peak = run_measured("info", empty_8k, memory_limit=ADDRESS_LIMIT)  # read, from its header
    assert done.returncode == 0 and "8192x8192 rgb" in done.stdout and peak < SMALL_FILE_PEAK


def test_an_mlp_over_the_bound_is_refused(tmp_path):
    path = tmp_path / "wide.ilc"
    path.write_bytes(container.pack(_header(1024, 1024, hidden=256, depth=8, weight_tensors=18), [b"", b""]))
    before = path.read_bytes()
    done, peak = run_measured("decompress", path, "-o", tmp_path / "out.png", memory_limit=ADDRESS_LIMIT)
    _refused_in_one_line(done, path, before)
    assert f"over the {MAX_MLP_MACS:,}" in done.stderr and peak < SMALL_FILE_PEAK
    assert not (tmp_path / "out.png").exists()


def test_what_compress_writes_is_within_the_bounds():
    from ironlearn.codec.bitstream.header import mlp_layers
    from ironlearn.codec.model.network import DEPTH, WIDTH

    assert sum(i * o for i, o in mlp_layers(7 * 3, 3, WIDTH, DEPTH)) * 3 < MAX_MLP_MACS


@pytest.fixture(scope="module")
def real_file():
    return codec.encode(waves(48, 64, 3), bpp=2.0, seconds=2.0)


@pytest.mark.parametrize("damage", ["missing last word", "emptied", "junk appended", "swapped"])
def test_a_section_that_is_not_its_coding_is_refused(real_file, damage, tmp_path):
    header, (latents, weights) = container.unpack(real_file)
    sections = {"missing last word": [latents[:-4], weights], "emptied": [b"", weights],
                "junk appended": [latents + bytes(range(16)), weights], "swapped": [weights, latents]}[damage]
    path = tmp_path / "damaged.ilc"
    path.write_bytes(container.pack(header, sections))
    before = path.read_bytes()
    with pytest.raises(codec.CodecError, match="section"):
        codec.read(before)
    done, _ = run_measured("decompress", path, "-o", tmp_path / "out.png")
    _refused_in_one_line(done, path, before)


def _near_free(height, width, channels, levels, coded, ones=0) -> bytes:
    """A valid file whose ``coded`` levels are zeros under a model of log-scale -12, which makes a
    zero near-certain (2e-7 bits): their honest coding takes a word; ``ones`` latents of level 0
    (at random places) are 1 instead, at up to 24 bits each."""
    from ironlearn.codec.bitstream.header import write_header
    from ironlearn.codec.model.latents import Pyramid

    fields = dict(height=height, width=width, channels=channels, levels=levels, hidden=0, depth=0,
                  grids=tuple((0.5, -12.0, 0, int(k in coded)) for k in range(levels) for _ in range(channels)),
                  weights=(), filters=((0, 0.0, 0),) * min(levels, 4), context=0, context_shifts=(),
                  context_weights=(), context_grids=())
    pyramid = Pyramid(height, width, channels, levels)
    if ones:
        grid = np.zeros(pyramid.latents[0].shape, np.int32)
        grid.reshape(-1)[np.random.default_rng(0).choice(grid.size, ones, replace=False)] = 1
        pyramid.latents[0] = grid
    sections, _ = bitstream.walk("encode", fields, pyramid, [], (b"", b""), container.VERSION)
    return container.pack(write_header(fields), sections)


def test_latents_coded_nearly_free_are_refused_at_once(tmp_path):
    """A 53-byte file declaring 8192x8192 whose level 1 (16.8 million latents) is coded honestly in
    one word: before, every command decoded it (a 352-byte RGB one of every level took 31 s and
    3.1 GB to render at 16x16, and 5 GB to view)."""
    path = tmp_path / "near-free.ilc"
    path.write_bytes(_near_free(8192, 8192, 1, 2, coded={1}))
    before = path.read_bytes()
    assert len(before) < 100
    for command in (["render", path, "--size", 16, "-o", tmp_path / "out.png"],
                    ["decompress", path, "--size", 64, "-o", tmp_path / "out.png"],
                    ["view", path, "-o", tmp_path / "page.html"], ["info", path]):
        started = time.perf_counter()
        done, peak = run_measured(*command, memory_limit=ADDRESS_LIMIT)
        _refused_in_one_line(done, path, before)
        assert "may code" in done.stderr and peak < SMALL_FILE_PEAK and time.perf_counter() - started < 20
    assert not (tmp_path / "out.png").exists() and not (tmp_path / "page.html").exists()


def test_a_file_of_100_kb_declaring_201_million_latents_is_refused_at_once(tmp_path):
    """Issue 64's file: 99.8 KB whose level 0 of 8192x8192 RGB (201 million latents) was within
    the old bound (256 a bit) and took 45 s and 2.4 GB to draw at 64x64; now refused from its
    header and its section's length, before anything is decoded."""
    fields = _header(8192, 8192, levels=1, magnitude=1)
    data = container.pack(fields, [bytes(99_800), b""])
    with pytest.raises(codec.CodecError, match="may code"):
        codec.read_header(data)
    path = tmp_path / "dense.ilc"
    path.write_bytes(data)
    started = time.perf_counter()
    done, peak = run_measured("decompress", path, "--size", 64, "-o", tmp_path / "out.png",
                              memory_limit=ADDRESS_LIMIT)
    _refused_in_one_line(done, path, data)
    assert "may code" in done.stderr and peak < SMALL_FILE_PEAK and time.perf_counter() - started < 20
    assert not (tmp_path / "out.png").exists()


def test_the_costliest_file_under_100_kb_draws_in_little(tmp_path):
    """The most latents a file under 100 KB may code (17 million: 2376x2376 RGB, near-free zeros
    and 33,250 ones at 24 bits each) draws at 64x64 under 500 MB (measured: 3.6 s, 257 MB) and makes
    a page."""
    data = _near_free(2376, 2376, 3, 1, coded={0}, ones=33_250)
    header = codec.read_header(data)
    assert len(data) < 100_000 and 3 * 2376 ** 2 > 0.99 * most_latents(len(header.sections[0]))
    path = tmp_path / "dense.ilc"
    path.write_bytes(data)
    for command in (["decompress", path, "--size", 64, "-o", tmp_path / "out.png"],
                    ["view", path, "-o", tmp_path / "page.html"]):
        started = time.perf_counter()
        done, peak = run_measured(*command, memory_limit=ADDRESS_LIMIT)
        assert done.returncode == 0, done.stderr
        assert peak < 500 * 2**20 and time.perf_counter() - started < 50  # ten times the 5 s aimed at


def test_a_page_past_the_texture_limit_is_refused_before_decoding(tmp_path):
    """An 8192x8192 file whose level 0 is coded (within the density bound) needs a 2048x32768
    texture, past the 16384 rows most GPUs hold: `view` refuses it in one line from its header
    (the page froze for 35 s at 4.4 GB before failing)."""
    from ironlearn.viewer.plan import MAX_TEXTURE_ROWS

    path = tmp_path / "tall.ilc"
    path.write_bytes(container.pack(_header(8192, 8192, channels=1, levels=1, magnitude=1), [bytes(500_000), b""]))
    before = path.read_bytes()
    codec.read_header(before)  # within every bound of the format
    done, peak = run_measured("view", path, "-o", tmp_path / "page.html", memory_limit=ADDRESS_LIMIT)
    _refused_in_one_line(done, path, before)
    assert f"2048x32768 texture on the page, more than the {MAX_TEXTURE_ROWS} rows" in done.stderr
    assert peak < SMALL_FILE_PEAK and not (tmp_path / "page.html").exists()


def test_the_writer_empties_a_grid_too_sparse_for_its_bits():
    """One latent in a 2048x2048 grid would code 4 million latents in a word or two; the writer
    empties that grid rather than write a file the reader refuses."""
    from ironlearn.codec.model.latents import Pyramid

    pyramid = Pyramid(2048, 2048, 1, 2, steps=[[0.1], [0.1]])
    pyramid.latents[0] = np.zeros((1, 2048, 2048), np.int32)
    pyramid.latents[0][0, 5, 7] = 3
    pyramid.latents[1] = np.zeros((1, 1024, 1024), np.int32)
    pyramid.latents[1][0, :16, :16] = np.random.default_rng(0).integers(-5, 6, (16, 16))
    data = bitstream.write(pyramid, None)
    header = codec.read_header(data)  # accepted
    assert [grid[3] for grid in header.grids] == [0, 5]
    assert pyramid.latents[0][0, 5, 7] == 3  # the pyramid given is left as it was
    assert np.array_equal(codec.read(data).pyramid.latents[1], pyramid.latents[1])


def test_least_bits_is_a_floor_the_coder_keeps():
    """The bound that refuses a short section before decoding: a section of only the likeliest
    symbol, at the narrowest scale, is never shorter than least_bits says."""
    import constriction

    for magnitude in (1, 7, 300, MAX_SYMBOL):
        count = 200_000
        encoder = constriction.stream.queue.RangeEncoder()
        model = constriction.stream.model.QuantizedLaplace(-magnitude, magnitude)
        encoder.encode(np.zeros(count, np.int32), model, np.zeros(count), np.full(count, np.exp(-12.0)))
        assert 32 * len(encoder.get_compressed()) + 64 >= least_bits(count, magnitude)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(side=st.sampled_from([4096, 8192]), levels=st.integers(1, 7), channels=st.sampled_from([1, 3]),
       magnitude=st.sampled_from([0, 1, 2, 300, 4096, MAX_SYMBOL]), latents=st.binary(max_size=64),
       weights=st.binary(max_size=16))
def test_extreme_headers_cost_little_or_are_refused(tmp_path, side, levels, channels, magnitude, latents, weights):
    """Valid headers at the largest allowed sizes over random section bytes: each is read, or
    refused with a CodecError, within a bound of time and memory (the header alone, and a
    16x16 render; in-process, so the bound is on what the codec allocates)."""
    import tracemalloc

    assert side * side <= MAX_PIXELS
    latents = latents[:len(latents) // 4 * 4]
    data = container.pack(_header(side, side, channels, levels, magnitude=magnitude), [latents, weights])
    tracemalloc.start()
    started = time.perf_counter()
    try:
        header = codec.read_header(data)
        assert header.width == side
        codec.read(data).redraw(16)  # decoding (when it gets that far) and a 16x16 render
    except codec.CodecError:
        pass
    finally:
        _, peak = tracemalloc.get_traced_memory()
        tracemalloc.stop()
    # Magnitudes of 1 or 2 over a few bytes pass the bytes-for-values bound (a near-certain zero
    # costs 2e-7 bits): the density bound (bitstream.most_latents) refuses them before decoding.
    assert time.perf_counter() - started < 10
    assert peak < 3 * channels * side * side  # under a single int32 grid of level 0


def _tall_learned():
    """A 32768x1 gray picture's one grid of sparse latents and a random context model over it:
    98,000 wavefronts of one latent, about 4 s to decode in Python from a file of a few hundred bytes."""
    from helpers import random_context
    from ironlearn.codec.model.latents import Pyramid

    pyramid = Pyramid(32768, 1, 1, 1, steps=np.full((1, 1), 0.05, np.float32))
    grid = np.zeros((1, 32768, 1), np.int32)
    grid[0, ::97, 0] = 1
    pyramid.latents[0] = grid
    return pyramid, random_context(pyramid, learned=(True,))


def test_the_writer_codes_a_grid_too_costly_for_the_context_model_under_its_two_numbers():
    pyramid, context = _tall_learned()
    data = bitstream.write(pyramid, None, context)
    header = bitstream.read_header(data)
    assert header.context == 0 or not any(flag for flag, in header.context_grids)
    np.testing.assert_array_equal(codec.read(data).pyramid.latents[0], pyramid.latents[0])


def test_a_file_holding_more_context_work_than_its_bytes_allow_is_refused(monkeypatch, tmp_path):
    pyramid, context = _tall_learned()
    monkeypatch.setattr(bitstream, "most_learned", lambda section_bytes: 1 << 60)  # a writer without the bound
    data = bitstream.write(pyramid, None, context)
    monkeypatch.undo()
    assert bitstream.read_fields(data).context_grids == ((1,),)
    path = tmp_path / "tall.ilc"
    path.write_bytes(data)
    done, _ = run_measured("info", path, memory_limit=ADDRESS_LIMIT)
    _refused_in_one_line(done, path, data)
    assert "work under its context model" in done.stderr
