"""The file's bytes: one walk over its two sections that encodes a picture or decodes it.

A file is :mod:`.container`'s: a :mod:`.header`, then two range-coded sections (constriction's
range coder under quantised Laplace models):

1. **latents**: every grid, coarsest level first, each latent's distribution predicted from what
   the decoder already has: row by row under the grid's two numbers (:func:`.entropy.code`), or
   wavefront by wavefront under the file's learned context model (:func:`.context.code`); a grid
   of zeros takes no bits;
2. **weights**: each MLP tensor (a layer's weight, then its bias), then each filterable level's
   filter, then each of the context model's tensors, under one Laplace a tensor; a tensor of
   zeros takes no bits.  The decoder reads this section first: the latents need the context model.

:func:`walk` is the one path both directions take (``mode="encode"|"decode"``): the encoder
computes every probability exactly as the decoder will, and the decoder appends again what it
decodes, so that a section which is not exactly the coding of its values is refused.
"""

from __future__ import annotations

import copy
import dataclasses
import math

import numpy as np

from ..model import network
from ..model.decoded import Decoded
from ..model.latents import CUBIC, CUBIC_BEFORE_5, Pyramid
from ..shapes import FILTER_LEVELS, FILTER_OFFSETS, level_shape
from . import container, context as learned, entropy, portable
from .container import CodecError
from .entropy import best_log_scale
from .header import Header, read_fields, refuse, write_header

#: constriction's range coder: every symbol of a model keeps a probability of at least
#: ``2**-CODER_PRECISION``, and a decoder holds ``CODER_STATE_BITS`` bits beyond the words it read.
CODER_PRECISION, CODER_STATE_BITS = 24, 64
#: The latents a file may code for each bit of its latents section, beyond the first
#: ``FREE_LATENTS``: what decoding costs (about 0.15 us and 12 bytes a latent) follows the file's
#: size.  The coder's floor alone lets a near-certain zero cost 2e-7 bits, so that 352 bytes could
#: declare 268 million latents (8192x8192 RGB); at 256 a bit (formats 3 to 6, before this bound), a
#: 99.8 KB file coded 201 million and took 45 s and 2.4 GB to draw at 64x64.  Now the costliest
#: file under 100 KB codes 17 million: 3.6 s and 257 MB.  Photographs code 4 to 15 latents a bit
#: at 0.003 to 0.1 bpp, and any picture of 4 million latents or fewer (1 MP RGB, 3 MP gray) is
#: free; flat pictures with one dot code 57 to 1,560 at 0.005 to 0.05 bpp, and ``compress`` empties
#: their sparsest grids rather than write a file over the bound (measured: docs/reliability.md, 'How a
#: run stays safe'; the old bound's: docs/benchmark-log.md, 'reliability.md: what it held before it
#: became documentation').
LATENTS_PER_BIT, FREE_LATENTS = 16, 1 << 22
#: Latents coded under the context model cost more to decode: about 0.55 us each, and 40 us a
#: wavefront (:mod:`.context`; measured: docs/compression.md, 'The file format (version 7)'); a
#: wavefront is counted as ``LEARNED_STEP_WORK`` latents.  A latents section may hold at most
#: ``FREE_LEARNED + LEARNED_PER_BIT`` a bit of such work, so that the costliest file under 100 KB
#: decodes in about 4 s, as under the two-number model; a 768x512 photograph's (1.5 million latents, 14,000
#: wavefronts) is within it at any rate, and the writer drops the costliest grids from the model
#: where a larger picture's is not.
LEARNED_STEP_WORK, LEARNED_PER_BIT, FREE_LEARNED = 80, 4, 1 << 22


def _constriction():
    try:
        import constriction
    except ImportError:  # a dependency: only a broken install lacks it
        raise CodecError("the entropy coder `constriction` is not installed; reinstall ironlearn") from None
    return constriction


def laplace(magnitude: int, log_scale: float | None = None, exp=portable.exp):
    """constriction's quantised Laplace on ``-magnitude..magnitude``: with mean 0 and scale
    ``exp(log_scale)`` (the file's ``exp``: :func:`.portable.for_version`), or (no
    ``log_scale``) the family whose scale each symbol gives."""
    model = _constriction().stream.model.QuantizedLaplace
    return model(-magnitude, magnitude) if log_scale is None else model(-magnitude, magnitude, 0.0, exp(log_scale))


class RangeCoder:
    """constriction's range coder in one direction, a context for one section.

    Called as ``coder(symbols, model, *params)`` it codes ``symbols`` (int32) under ``model``
    (with the family's ``means, scales`` as ``params``) and returns them: encoding, it appends
    them; decoding, ``symbols`` only says how many, and it returns the symbols it decodes after
    appending them again to an encoder of its own.  Decoding, any failure becomes one
    :class:`CodecError`, and so does a section that is not exactly the coding of what was
    decoded: words missing, left over, or another section's."""

    def __init__(self, mode: str, section: bytes = b"", what: str = "latents"):
        if mode not in ("encode", "decode"):
            raise ValueError(f"mode must be 'encode' or 'decode', not {mode!r}")
        self.mode, self.what = mode, what
        constriction = _constriction()
        self.encoder = constriction.stream.queue.RangeEncoder()
        if mode == "decode":
            if len(section) % 4:
                raise CodecError(f"the {what} section is damaged (its length is not whole words); "
                                 "compress the picture again")
            self.words = np.frombuffer(section, dtype="<u4").astype(np.uint32)
            self.decoder = constriction.stream.queue.RangeDecoder(self.words)

    def __call__(self, symbols, model, *params):
        if self.mode == "decode":
            symbols = self.decoder.decode(model, *params) if params else self.decoder.decode(model, symbols.size)
        self.encoder.encode(symbols, model, *params)
        return symbols

    def section(self) -> bytes:
        """The words encoded, little-endian: the section."""
        return self.encoder.get_compressed().astype("<u4").tobytes()

    def __enter__(self):
        return self

    def __exit__(self, kind, error, traceback):
        if self.mode == "encode" or isinstance(error, (KeyboardInterrupt, SystemExit, GeneratorExit)):
            return False
        if error is not None:  # constriction reports some damage as a Rust panic (a BaseException)
            raise CodecError(f"the {self.what} section cannot be decoded ({type(error).__name__}); "
                             "compress the picture again") from None
        if not np.array_equal(self.encoder.get_compressed(), self.words):
            raise CodecError(f"the {self.what} section does not hold what its header declares (words are missing, "
                             "left over or out of place); compress the picture again")
        return False


def least_bits(count: int, magnitude: int) -> float:
    """The fewest bits in which the range coder can code any ``count`` symbols of a model on
    ``-magnitude..magnitude``: each of its symbols keeps a probability of at least
    ``2**-CODER_PRECISION``, so none has more than ``1 - 2 magnitude 2**-CODER_PRECISION``, and
    each costs at least -log2 of that (0 for magnitude 0: such a group is not coded).  A
    Laplace's own mode could come arbitrarily close to certain; only this floor bounds a
    section's values by its bytes."""
    if not magnitude:
        return 0.0
    return count * -math.log2(1 - 2 * magnitude / 2 ** CODER_PRECISION)


def _check_room(section: bytes, groups, what: str) -> None:
    """Refuse a ``section`` too short for ``[(count, magnitude)]``, before decoding anything:
    a header's values cannot come from fewer bytes than :func:`least_bits` says."""
    needed = sum(least_bits(count, magnitude) for count, magnitude in groups)
    if needed > 8 * len(section) + CODER_STATE_BITS:
        raise CodecError(f"the {what} section has {len(section):,} bytes, fewer than the {math.ceil(needed / 8):,} "
                         "that the values its header declares take at least; compress the picture again")


def most_latents(section_bytes: int) -> int:
    """The most latents a latents section of ``section_bytes`` may code (:data:`LATENTS_PER_BIT`)."""
    return FREE_LATENTS + LATENTS_PER_BIT * 8 * section_bytes


def _check_density(section: bytes, count: int) -> None:
    """Refuse a latents ``section`` that codes ``count`` latents, more than :func:`most_latents`:
    a model that makes them almost free is no picture's, and decoding them would cost time and
    memory out of all proportion to the file."""
    if count > most_latents(len(section)):
        raise refuse(f"the latents section has {len(section):,} bytes for {count:,} latents, more than the "
                     f"{most_latents(len(section)):,} a section of that size may code")


def most_learned(section_bytes: int) -> int:
    """The most work under the context model a latents section of ``section_bytes`` may hold
    (:data:`LEARNED_PER_BIT`)."""
    return FREE_LEARNED + LEARNED_PER_BIT * 8 * section_bytes


def grid_work(shape) -> int:
    """What decoding a grid of ``shape`` under the context model costs, in latents' worth."""
    h, w = shape
    return h * w + LEARNED_STEP_WORK * (learned.WAVE * (h - 1) + w)


def _learned_work(shapes, grids, flags) -> int:
    """The work of the grids of ``shapes`` coded under the context model (``flags``, a grid's
    ``(learned,)`` level-major as ``grids``; those of magnitude above 0)."""
    return sum(grid_work(shape) for shape, grid, (flag,) in zip(shapes, grids, flags) if flag and grid[3])


def _check_work(section: bytes, work: int) -> None:
    """Refuse a latents ``section`` whose grids under the context model take more :func:`grid_work`
    than :func:`most_learned` allows it."""
    if work > most_learned(len(section)):
        raise refuse(f"the latents section has {len(section):,} bytes for {work:,} latents' worth of work under its "
                     f"context model, more than the {most_learned(len(section)):,} a section of that size may hold")


def _coded_latents(shapes, grids) -> int:
    """How many latents the grids of ``shapes`` (level-major, as ``grids``) code: those of
    magnitude above 0."""
    return sum(h * w for (h, w), grid in zip(shapes, grids) if grid[3])


def grids(pyramid: Pyramid):
    """``(level, channel, grid, its parent)`` for every grid, coarsest level first (the order
    the decoder needs: a grid's model reads its parent, the coarser level's grid)."""
    for k in reversed(range(pyramid.levels)):
        for c in range(pyramid.channels):
            parent = pyramid.latents[k + 1][c] if k + 1 < pyramid.levels else None
            yield k, c, pyramid.latents[k][c], parent


def latent_models(pyramid: Pyramid) -> dict:
    """``{(level, channel): (entropy.Model, bits)}``: each grid's best model and what the grid
    costs under it (the range coder spends about this, plus a few words a section; measured:
    docs/compression.md, 'The codec');
    None for a grid of zeros, which costs nothing."""
    return {(k, c): entropy.fit(q, parent) if np.any(q) else None for k, c, q, parent in grids(pyramid)}


def code_latents(coder: RangeCoder, pyramid: Pyramid, grids, arithmetic=portable.CURRENT, context=None) -> None:
    """Code ``pyramid``'s grids, coarsest level first, under ``grids`` (the header's, level-major
    ``(step, a, slope, magnitude)``), the file's ``arithmetic`` and its ``context`` model (a
    :class:`.context.ContextModel` or None); decoding fills them.  A level whose grids are all
    empty (magnitude 0) is skipped, and stays :func:`~..model.latents.zeros` in a decoded
    pyramid, which takes no memory; an empty parent says what none does."""
    models = {(k, c): (entropy.Model(a, slope), magnitude)
              for (k, c), (_, a, slope, magnitude) in zip(np.ndindex(pyramid.levels, pyramid.channels), grids)}
    uses_context = {(k, c): bool(context is not None and context.learned[k * pyramid.channels + c])
                    for k, c in models}
    for k in reversed(range(pyramid.levels)):
        if not any(models[k, c][1] for c in range(pyramid.channels)):
            continue
        if coder.mode == "decode":
            pyramid.latents[k] = np.zeros(pyramid.latents[k].shape, np.int32)
        above = k + 1 < pyramid.levels and not pyramid.is_empty(k + 1)
        for c in range(pyramid.channels):
            model, magnitude = models[k, c]
            if not magnitude:
                continue
            grid = pyramid.latents[k][c] if coder.mode == "decode" else pyramid.latents[k][c].astype(np.int32)
            parent = pyramid.latents[k + 1][c] if above else None
            if uses_context[k, c]:
                learned.code(coder, grid, parent, model, context, laplace(magnitude), magnitude, arithmetic,
                             known=coder.mode == "encode")
            else:
                entropy.code(coder, grid, parent, model, laplace(magnitude), arithmetic)


def code_symbols(coder: RangeCoder, groups, exp=portable.exp) -> list:
    """Code ``[(symbols, magnitude, log_scale)]``, each group under one Laplace (decoding,
    ``symbols`` holds zeros of its size; the file's ``exp``): the symbols, int32, flat.  A group
    of magnitude 0 (all zeros) takes no bits."""
    return [coder(symbols.reshape(-1).astype(np.int32), laplace(magnitude, log_scale, exp)) if magnitude
            else np.zeros(symbols.size, np.int32) for symbols, magnitude, log_scale in groups]


def walk(mode: str, header, pyramid: Pyramid, symbols: list, sections, version: int) -> tuple[list, list]:
    """The two sections that ``header`` (its fields ``grids``, ``weights``, ``filters`` and the
    context model's, as :mod:`.header` declares them) describes, for ``pyramid`` and ``symbols``
    (each MLP tensor, then each filter, then each of the context model's tensors; zeros to
    decode into): ``(sections, symbols)``, each coded in ``mode`` (decoding, from ``sections``;
    encoding, two empty ones) with the arithmetic of format ``version``.  The weights come
    first: the latents are coded under the context model they hold."""
    arithmetic = portable.for_version(version)
    records = header["weights"] + header["filters"] + header["context_weights"]
    with RangeCoder(mode, sections[1], "weights") as coder:
        values = code_symbols(coder, [(q, m, s) for q, (_, s, m) in zip(symbols, records)], arithmetic[0])
    weights = coder.section()
    context = context_model(header, values[len(values) - len(header["context_weights"]):])
    with RangeCoder(mode, sections[0], "latents") as coder:
        code_latents(coder, pyramid, header["grids"], arithmetic, context)
    return [coder.section(), weights], values


def context_model(header, values) -> learned.ContextModel | None:
    """The context model of ``header``'s fields and its tensors' integers ``values`` (flat, as
    coded), or None where it has none."""
    if not header["context"]:
        return None
    shapes = [shape for fan_in, fan_out in learned.layer_shapes(header["context"]) for shape in ((fan_in, fan_out), (fan_out,))]
    tensors = tuple((q.reshape(shape), exponent) for q, shape, (exponent, _, _) in
                    zip(values, shapes, header["context_weights"]))
    return learned.ContextModel(tuple(shift for shift, in header["context_shifts"]), tensors,
                                tuple(bool(flag) for flag, in header["context_grids"]))


def _context_fields(context: learned.ContextModel | None) -> dict:
    """The header's fields for ``context`` (None: no context model)."""
    if context is None:
        return dict(context=0, context_shifts=(), context_weights=(), context_grids=())
    records = tuple((exponent, best_log_scale(q) if q.any() else 0.0, int(np.abs(q).max()))
                    for q, exponent in context.tensors)
    return dict(context=context.hidden, context_shifts=tuple((shift,) for shift in context.shifts),
                context_weights=records, context_grids=tuple((int(flag),) for flag in context.learned))


def _filter_codes(pyramid: Pyramid) -> list:
    """``(integers, exponent, log_scale)`` of each filterable level's filter (zeros for none)."""
    codes = []
    for k in range(min(pyramid.levels, FILTER_LEVELS)):
        q, exponent = pyramid.filters[k] or (np.zeros((pyramid.channels, len(FILTER_OFFSETS)), np.int32), 0)
        codes.append((q, exponent, best_log_scale(q) if q.any() else 0.0))
    return codes


def _fields(pyramid: Pyramid, mlp, coded, context=None) -> dict:
    """The header's fields for ``pyramid``, ``mlp``, ``coded`` (the MLP's tensors, then the
    filters: ``[(integers, exponent, log_scale)]``) and ``context`` (or None)."""
    models = latent_models(pyramid)
    grids = []
    for k in range(pyramid.levels):
        for c in range(pyramid.channels):
            model = models[k, c][0] if models[k, c] is not None else entropy.Model(0.0, 0)
            grids.append((pyramid.steps[k, c], model.a, model.slope, int(np.abs(pyramid.latents[k][c]).max())))
    tensors = [(exponent, log_scale, int(np.abs(q).max())) for q, exponent, log_scale in coded]
    tensors_of_mlp = len(coded) - min(pyramid.levels, FILTER_LEVELS)
    return dict(height=pyramid.height, width=pyramid.width, channels=pyramid.channels, levels=pyramid.levels,
                hidden=network.WIDTH if mlp else 0, depth=network.DEPTH if mlp else 0, grids=tuple(grids),
                weights=tuple(tensors[:tensors_of_mlp]), filters=tuple(tensors[tensors_of_mlp:]),
                **_context_fields(context))


def _emptied_sparsest(pyramid: Pyramid) -> Pyramid:
    """``pyramid`` (a copy; its filters and steps shared) with its sparsest coded grid, the one
    with the fewest nonzero latents a latent, emptied."""
    coded = [(np.count_nonzero(pyramid.latents[k][c]) / pyramid.latents[k][c].size, k, c)
             for k in range(pyramid.levels) for c in range(pyramid.channels) if pyramid.latents[k][c].any()]
    _, k, c = min(coded)
    thinner = copy.copy(pyramid)
    thinner.latents = list(pyramid.latents)
    thinner.latents[k] = np.array(pyramid.latents[k])
    thinner.latents[k][c] = 0
    return thinner


def _without_costliest(context: learned.ContextModel, shapes) -> learned.ContextModel | None:
    """``context`` with its costliest grid to decode (:func:`grid_work`) coded under its two
    numbers instead; None where none is left under it."""
    flags = list(context.learned)
    flags[max((i for i, flag in enumerate(flags) if flag), key=lambda i: grid_work(shapes[i]))] = False
    return dataclasses.replace(context, learned=tuple(flags)) if any(flags) else None


def write(pyramid: Pyramid, mlp, context: learned.ContextModel | None = None) -> bytes:
    """The file of ``pyramid``, ``mlp`` (``(net, [(integers, exponent, log_scale)])``, or
    None for no MLP) and ``context`` (the latents' learned model, or None).  Grids too sparse for
    their bits (:data:`LATENTS_PER_BIT`) are emptied, the sparsest first, and the costliest to
    decode under the context model coded under their two numbers where they hold more work
    than the section may (:data:`LEARNED_PER_BIT`), so that the file is one :func:`read_header` accepts."""
    coded = ([] if mlp is None else mlp[1]) + _filter_codes(pyramid)
    symbols = [q for q, _, _ in coded] + ([] if context is None else [q for q, _ in context.tensors])
    shapes = [level_shape(pyramid.height, pyramid.width, k) for k in range(pyramid.levels)
              for _ in range(pyramid.channels)]  # level-major, as the header's grids
    while True:
        fields = _fields(pyramid, mlp, coded, context)
        sections, _ = walk("encode", fields, pyramid, symbols, (b"", b""), container.VERSION)
        if _coded_latents(shapes, fields["grids"]) > most_latents(len(sections[0])):
            pyramid = _emptied_sparsest(pyramid)
        elif _learned_work(shapes, fields["grids"], fields["context_grids"]) > most_learned(len(sections[0])):
            context = _without_costliest(context, shapes)
        else:
            return container.pack(write_header(fields), sections)


def read_header(data: bytes) -> Header:
    """A compressed file's :class:`~.header.Header`, every field and bound checked and nothing
    decoded; :class:`CodecError` for anything else.  Refused here too: sections too short for
    the values their header declares (:func:`least_bits`), and latents coded too thinly for any
    picture's (:func:`most_latents`)."""
    found = read_fields(data)
    shapes = [shape for shape in found.grid_shapes for _ in range(found.channels)]  # level-major, as grids
    _check_room(found.sections[0], [(h * w, grid[3]) for (h, w), grid in zip(shapes, found.grids)], "latents")
    _check_density(found.sections[0], _coded_latents(shapes, found.grids))
    _check_work(found.sections[0], _learned_work(shapes, found.grids, found.context_grids))
    _check_room(found.sections[1], [(size, m) for size, (_, _, m) in zip(found.tensor_sizes, found.weights)]
                + [(found.channels * len(FILTER_OFFSETS), m) for _, _, m in found.filters]
                + [(size, m) for size, (_, _, m) in zip(found.context_sizes, found.context_weights)], "weights")
    return found


def decode_header(header: Header) -> Decoded:
    """The picture whose :class:`~.header.Header` :func:`read_header` read: its sections decoded,
    and checked to hold exactly the coding of what they decode to (:class:`CodecError` if not)."""
    channels, levels = header.channels, header.levels
    net = network.build(levels * channels, channels, header.hidden, header.depth) if header.depth else None
    tensors = [] if net is None else list(net.named_parameters().values())
    steps = np.array([grid[0] for grid in header.grids], np.float32).reshape(levels, channels)
    pyramid = Pyramid(header.height, header.width, channels, levels, steps,
                      CUBIC if header.version >= 5 else CUBIC_BEFORE_5)
    taps = channels * len(FILTER_OFFSETS)
    zeros = ([np.zeros(p.size, np.int32) for p in tensors] + [np.zeros(taps, np.int32) for _ in header.filters]
             + [np.zeros(size, np.int32) for size in header.context_sizes])
    fields = {name: getattr(header, name) for name in ("grids", "weights", "filters", "context", "context_shifts",
                                                       "context_weights", "context_grids")}
    _, values = walk("decode", fields, pyramid, zeros, header.sections, header.version)
    for param, q, (exponent, _, _) in zip(tensors, values, header.weights):
        param[...] = q.reshape(param.shape) * np.float32(2.0 ** exponent)
    for k, (q, (exponent, _, magnitude)) in enumerate(zip(values[len(tensors):], header.filters)):
        if magnitude:
            pyramid.filters[k] = (q.reshape(channels, -1), exponent)
    return Decoded(header.height, header.width, channels, pyramid, net)


def read(data: bytes) -> Decoded:
    """The picture a compressed file holds; :class:`CodecError` for anything else."""
    return decode_header(read_header(data))


def _from_path(path, reader):
    data = container.read_file(path)  # its messages name the file
    try:
        return data, reader(data)
    except CodecError as exc:
        raise CodecError(f"{path}: {exc}") from None


def read_path(path) -> tuple[bytes, Decoded]:
    """The bytes of the compressed file at ``path`` and the picture they hold; one
    :class:`CodecError` naming the file once for anything that cannot be read."""
    return _from_path(path, read)


def read_header_path(path) -> tuple[bytes, Header]:
    """The bytes of the compressed file at ``path`` and its :class:`~.header.Header`, nothing
    decoded; errors as :func:`read_path`'s."""
    return _from_path(path, read_header)


def decode(data: bytes, height: int | None = None, width: int | None = None) -> np.ndarray:
    """A compressed file's picture as uint8 ``(H, W, C)``, at its own size or ``height x width``."""
    return np.round(read(data).render(height, width) * 255).astype(np.uint8)
