"""Encode a picture as a small file that decodes at any size, and decode it.

The encoder fits the codec's network (:mod:`.pyramid`) to the picture, minimising
``distortion + lambda * rate``:

* distortion: the mean squared error over every pixel and channel, in [0, 1] units;
* rate: the bits that coding the latents would take under the entropy model, a Laplace of mean
  0 a level whose scale is learned with the rest, per pixel.

Training is quantisation-aware, as in Cool-chic and C3: for the first :data:`NOISE_SHARE` of the
steps the network reads the latents plus uniform noise in [-0.5, 0.5) (a differentiable stand-in
for rounding), then the rounded latents, the gradient passing straight through the rounding.
With a rate target (``bpp``), lambda follows the rate of the rounded latents to the target as
the fit goes.

Then the latents are rounded to integers, each MLP weight tensor is rounded to a step ``2**e``
chosen by the same rate-distortion trade, and both are entropy-coded by ``constriction``'s range
coder under quantised Laplace models.  The file format is in ``docs/compression.md``.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass

import numpy as np

from ..image.metrics import psnr_from_mse
from ..image.render import render_size
from ..nn.model import Sequential
from ..optim import Adam
from ..optim.schedules import warmup_cosine
from . import container
from .container import CodecError
from .pyramid import MAX_LEVELS, LatentPyramid, laplace_bits, level_shape, synthesis

#: The share of the steps that read the latents plus noise; the rest read them rounded.
NOISE_SHARE = 0.75
#: Adam's peak learning rates.  The latents move in units of their quantisation step (1), and a
#: CPU fit has a few hundred steps, where Cool-chic's take 10**5 at 1e-2: theirs is twenty times
#: higher.  (At 1.0, every latent moves by about 1 a step whatever its gradient, and the rate
#: overshoots its target threefold before lambda can catch it: kodim23, 0.25 bpp, 30 s.)
LATENT_LR, NETWORK_LR = 0.2, 1e-2
#: Where a rate target may drive lambda (distortion in [0, 1] units, rate in bits per pixel).
LAMBDA_RANGE = (1e-6, 1e-1)
#: The synthesis MLP: hidden width and layers.
WIDTH, DEPTH = 24, 2
#: Pictures the decoder accepts: sides and pixels (bounds every allocation a header can ask for).
MAX_SIDE, MAX_PIXELS = 1 << 15, 1 << 26
#: Largest latent or weight magnitude a file may hold.
MAX_SYMBOL = 1 << 15
#: Log-scales of the Laplace models, and the exponents of the weights' steps.
LOG_SCALE_RANGE = (-12.0, 12.0)
STEP_EXPONENTS = range(-14, 1)
MODES = {1: "gray", 3: "rgb"}


@dataclass(frozen=True)
class Compressed:
    """What :func:`compress_array` made and measured.

    Attributes
    ----------
    data : bytes
        The whole file.
    bpp : float
        Its bits per pixel, every byte counted.
    psnr : float
        The decoded picture against the original at its own size, in dB (8-bit pixels).
    seconds : float
        The encode's time.
    steps : int
        Training steps taken.
    """

    data: bytes
    bpp: float
    psnr: float
    seconds: float
    steps: int


def _as_unit(values) -> np.ndarray:
    values = np.asarray(values)
    if values.ndim == 2:
        values = values[:, :, None]
    if values.ndim != 3 or values.shape[2] not in MODES:
        raise ValueError(f"need a picture (H, W), (H, W, 1) or (H, W, 3) (got shape {values.shape})")
    if values.dtype == np.uint8:
        return values.astype(np.float32) / 255
    return np.clip(values, 0, 1).astype(np.float32)


def compress_array(values, *, bpp: float | None = None, lmbda: float | None = None, seconds: float = 60.0,
                   levels: int = MAX_LEVELS, seed: int = 0, progress=None) -> Compressed:
    """Compress a picture: ``values`` ``(H, W)`` or ``(H, W, C)``, ``C`` 1 or 3, uint8 or floats
    in [0, 1].

    Give a rate target ``bpp`` (bits per pixel of the whole file) or a rate-distortion weight
    ``lmbda`` (higher: smaller files), not both; neither means ``bpp=0.5``.  ``seconds`` is the
    training time.  ``progress``, if given, is called as ``progress(step, steps, psnr, bpp)``
    about every second.
    """
    if bpp is not None and lmbda is not None:
        raise ValueError("give a rate target (bpp) or a rate-distortion weight (lmbda), not both")
    if bpp is None and lmbda is None:
        bpp = 0.5
    if bpp is not None and not 0 < bpp <= 24:
        raise ValueError(f"bpp must lie in (0, 24] (got {bpp})")
    if lmbda is not None and not lmbda > 0:
        raise ValueError(f"lmbda must be above 0 (got {lmbda})")
    if not seconds > 0:
        raise ValueError(f"seconds must be above 0 (got {seconds})")
    target = _as_unit(values)
    height, width, channels = target.shape
    if max(height, width) > MAX_SIDE or height * width > MAX_PIXELS:
        raise ValueError(f"pictures up to {MAX_SIDE} pixels a side and {MAX_PIXELS} pixels compress "
                         f"(got {width}x{height})")
    levels = max(1, min(levels, MAX_LEVELS))
    started = time.perf_counter()
    model, lam, steps = _fit(target, bpp, lmbda, seconds, levels, seed, progress)
    pyramid = model.layers[0]
    pixels = height * width
    latents = [np.clip(np.round(g), -MAX_SYMBOL, MAX_SYMBOL).astype(np.int32) for g in pyramid.grids()]
    pyramid.values = [q.astype(np.float32) for q in latents]
    log_scales = [_best_log_scale(q) for q in latents]
    weights = _quantise_weights(model, target.reshape(-1, channels), lam, pixels)
    data = _write(height, width, channels, levels, latents, log_scales, weights)
    decoded = _synthesise(model, height, width, channels)
    mse = float(np.mean((np.round(decoded * 255) / 255 - np.round(target * 255) / 255) ** 2))
    return Compressed(data, 8 * len(data) / pixels, psnr_from_mse(mse), time.perf_counter() - started, steps)


def encode(values, *, bpp: float | None = None, lmbda: float | None = None, seconds: float = 60.0,
           seed: int = 0) -> bytes:
    """The bytes of :func:`compress_array`'s file."""
    return compress_array(values, bpp=bpp, lmbda=lmbda, seconds=seconds, seed=seed).data


# -- fitting --------------------------------------------------------------------------------
def _fit(target, bpp, lmbda, seconds, levels, seed, progress):
    """Train the pyramid and its MLP; returns ``(model, lambda at the end, steps)``."""
    height, width, channels = target.shape
    pixels = height * width
    flat = target.reshape(-1, channels)
    pyramid = LatentPyramid(height, width, levels)
    net = synthesis(levels, channels, WIDTH, DEPTH, seed)
    for layer in net.layers[:-1]:  # hidden units start active: latents of zero then still learn
        if "bias" in layer.params:
            layer.params["bias"][...] = 0.1
    model = Sequential(pyramid, *net.layers)
    log_scales = np.zeros(levels, np.float32)
    params = {**model.named_parameters(), "log_scales": log_scales}
    rng = np.random.default_rng(seed)
    # The rate budget of the latents: the file's, less the header and the weights (estimated).
    overhead_bits = 8 * (64 + 2 * levels * 6) + 8 * sum(p.size for p in net.named_parameters().values())
    budget = None if bpp is None else max(bpp * pixels - overhead_bits, 0.02 * pixels) / pixels
    lam = 1e-2 if lmbda is None else lmbda

    def train_step(noisy: bool):
        """Forward and backward at the latents plus noise (or rounded); returns (grads, mse, rate)."""
        pyramid.values = [g + rng.uniform(-0.5, 0.5, g.shape).astype(np.float32) if noisy else np.round(g)
                          for g in pyramid.grids()]
        error = model.forward(None) - flat
        model.backward(error * np.float32(2 / error.size))
        grads = {**model.named_gradients(), "log_scales": np.zeros(levels, np.float32)}
        bits = 0.0
        for k, values in enumerate(pyramid.values):
            level_bits, d_values, d_scale = laplace_bits(values, float(log_scales[k]))
            bits += float(level_bits.sum())
            grads[f"layers.0.level{k}"] += (lam / pixels) * d_values.astype(np.float32)
            grads["log_scales"][k] = lam / pixels * d_scale
        return grads, float(np.mean(error * error)), bits / pixels

    for _ in range(3):  # times a step (its gradients are dropped) to fit the steps to the time
        clock = time.perf_counter()
        train_step(True)
    steps = max(10, int(seconds / (1.1 * (time.perf_counter() - clock))))
    latents = {name: p for name, p in params.items() if name.startswith("layers.0.")}
    others = {name: p for name, p in params.items() if name not in latents}
    optimizers = [Adam(latents, lr=warmup_cosine(LATENT_LR, LATENT_LR / 100, steps)),
                  Adam(others, lr=warmup_cosine(NETWORK_LR, NETWORK_LR / 100, steps))]
    last_report = time.perf_counter()
    for step in range(1, steps + 1):
        grads, mse, rate = train_step(step <= NOISE_SHARE * steps)
        for optimizer in optimizers:
            optimizer.step({name: grads[name] for name in optimizer.params})
        np.clip(log_scales, *LOG_SCALE_RANGE, out=log_scales)
        if budget is not None and step % 2 == 0:  # lambda follows the rounded latents' rate to its budget
            real = _real_rate(pyramid.grids()) / pixels
            lam = min(max(lam * math.exp(0.3 * max(-1.0, min(1.0, real / budget - 1))), LAMBDA_RANGE[0]),
                      LAMBDA_RANGE[1])
        if progress is not None and time.perf_counter() - last_report > 1.0:
            last_report = time.perf_counter()
            progress(step, steps, psnr_from_mse(mse), rate)
    pyramid.values = None
    return model, lam, steps


def _synthesise(model, height, width, channels) -> np.ndarray:
    return np.clip(model.forward(None), 0, 1).reshape(height, width, channels)


def _header_float(value: float, bounds) -> float:
    """``value`` as the header stores it: float32, within ``bounds``."""
    return float(np.float32(min(max(float(value), bounds[0]), bounds[1])))


def _laplace_size(symbols, log_scale) -> float:
    return float(laplace_bits(symbols.astype(np.float64), log_scale)[0].sum())


def _mean_log_scale(symbols) -> float:
    """The continuous Laplace's estimate of ``symbols``' log-scale: ``log mean |q|``."""
    return math.log(max(float(np.mean(np.abs(symbols))), 1e-3))


def _best_log_scale(symbols) -> float:
    """The log-scale (as the header stores it) under which ``symbols`` take the fewest bits: a
    search from :func:`_mean_log_scale`, in steps of 1/16."""
    guess = _mean_log_scale(symbols)
    candidates = [_header_float(guess + d / 16, LOG_SCALE_RANGE) for d in range(-48, 17)]
    sample = symbols.reshape(-1)[:: max(1, symbols.size // 20000)]  # a fixed subsample: the search is cheap
    return min(candidates, key=lambda s: _laplace_size(sample, s))


def _real_rate(grids) -> float:
    """The bits of ``grids`` rounded, each level under the Laplace whose scale is its mean
    magnitude (the continuous estimate: cheap, and close to the best scale's bits)."""
    rounded = [np.round(g) for g in grids]
    return sum(_laplace_size(q, _mean_log_scale(q)) for q in rounded)


def _weight_code(weight, exponent):
    """A tensor rounded to steps of ``2**exponent``: its integers and their model's log-scale."""
    q = np.clip(np.round(weight / 2.0 ** exponent), -MAX_SYMBOL, MAX_SYMBOL).astype(np.int32)
    return q, _best_log_scale(q)


def _quantise_weights(model, flat, lam, pixels, sample: int = 1 << 15, seed: int = 0) -> list:
    """Each MLP tensor's step, chosen in turn to minimise distortion + lambda * rate with the
    latents rounded (the distortion measured on ``sample`` random pixels):
    ``[(name, integers, exponent, log_scale)]``.  The model is left holding the rounded weights."""
    pyramid, net = model.layers[0], Sequential(*model.layers[1:])
    chosen_pixels = np.random.default_rng(seed).choice(len(flat), min(sample, len(flat)), replace=False)
    inputs, targets = pyramid.forward()[chosen_pixels], flat[chosen_pixels]
    chosen = []
    for name, weight in net.named_parameters().items():
        original = weight.copy()
        best = None
        for exponent in STEP_EXPONENTS:
            q, log_scale = _weight_code(original, exponent)
            weight[...] = q * np.float32(2.0 ** exponent)
            error = net.forward(inputs) - targets
            cost = float(np.mean(error * error)) + lam * _laplace_size(q, log_scale) / pixels
            if best is None or cost < best[0]:
                best = (cost, q, exponent, log_scale)
        _, q, exponent, log_scale = best
        weight[...] = q * np.float32(2.0 ** exponent)
        chosen.append((name, q, exponent, log_scale))
    return chosen


# -- the bitstream ------------------------------------------------------------------------------
def _constriction():
    try:
        import constriction
    except ImportError:  # a dependency: only a broken install lacks it
        raise CodecError("the entropy coder `constriction` is not installed; reinstall ironlearn") from None
    return constriction


def _laplace(magnitude: int, log_scale: float):
    return _constriction().stream.model.QuantizedLaplace(-magnitude, magnitude, 0.0, math.exp(log_scale))


def _encode_symbols(groups) -> bytes:
    """One range-coded stream of ``[(symbols, magnitude, log_scale)]``; groups whose magnitude is
    0 (all zeros) take no bits."""
    encoder = _constriction().stream.queue.RangeEncoder()
    for symbols, magnitude, log_scale in groups:
        if magnitude:
            encoder.encode(symbols.reshape(-1).astype(np.int32), _laplace(magnitude, log_scale))
    return encoder.get_compressed().astype("<u4").tobytes()


def _decode_symbols(section: bytes, groups, what: str) -> list:
    """The symbols of ``[(count, magnitude, log_scale)]`` from a stream of :func:`_encode_symbols`."""
    if len(section) % 4:
        raise CodecError(f"the {what} section is damaged (its length is not whole words); "
                         "compress the picture again")
    constriction = _constriction()
    decoder = constriction.stream.queue.RangeDecoder(np.frombuffer(section, dtype="<u4").astype(np.uint32))
    out = []
    try:
        for count, magnitude, log_scale in groups:
            out.append(decoder.decode(_laplace(magnitude, log_scale), count) if magnitude
                       else np.zeros(count, np.int32))
    except BaseException as error:  # constriction reports some damage as a Rust panic (a BaseException)
        if isinstance(error, (KeyboardInterrupt, SystemExit)):
            raise
        raise CodecError(f"the {what} section cannot be decoded ({type(error).__name__}); "
                         "compress the picture again") from None
    return out


def _write(height, width, channels, levels, latents, log_scales, weights) -> bytes:
    latent_groups = [(q, int(np.abs(q).max()), s) for q, s in zip(latents, log_scales)]
    weight_groups = [(q, int(np.abs(q).max()), s) for _, q, _, s in weights]
    header = container.Writer()
    header.uint(height).uint(width).uint(channels).uint(levels).uint(WIDTH).uint(DEPTH)
    for _, magnitude, log_scale in latent_groups:
        header.float32(log_scale).uint(magnitude)
    for (_, _, exponent, _), (_, magnitude, log_scale) in zip(weights, weight_groups):
        header.sint(exponent).float32(log_scale).uint(magnitude)
    return container.pack(header.getvalue(), [_encode_symbols(latent_groups), _encode_symbols(weight_groups)])


@dataclass
class Decoded:
    """A compressed file read back: the picture's size and mode, and its network."""

    height: int
    width: int
    channels: int
    model: Sequential

    @property
    def mode(self) -> str:
        return MODES[self.channels]

    def render(self, height: int | None = None, width: int | None = None) -> np.ndarray:
        """The picture at ``height x width`` (its own size by default): float32 in [0, 1],
        ``(height, width, channels)``."""
        height, width = height or self.height, width or self.width
        pyramid = self.model.layers[0]
        pyramid.resize(height, width)
        return _synthesise(self.model, height, width, self.channels)

    def redraw(self, size=None, scale: float | None = None) -> np.ndarray:
        """:meth:`render` at ``size`` (N for the longest side, or ``(W, H)``), at ``scale`` times
        the picture's size, or (neither given) at its own; ``ValueError`` for a size beyond
        what renders."""
        if size is not None or scale is not None:
            width, height = render_size((self.width, self.height), size, scale)
            return self.render(height, width)
        return self.render()


def read(data: bytes) -> Decoded:
    """The network a compressed file holds; :class:`CodecError` for anything else."""
    header_bytes, sections = container.unpack(data)
    header = container.Reader(header_bytes)
    height = header.uint(1, MAX_SIDE, "the height")
    width = header.uint(1, MAX_SIDE, "the width")
    if height * width > MAX_PIXELS:
        raise CodecError(f"the header claims {width}x{height} pixels, more than {MAX_PIXELS}; "
                         "give a file that `ironlearn compress` wrote")
    channels = header.uint(1, 3, "the channels")
    if channels not in MODES:
        raise CodecError(f"the header claims {channels} channels (1 or 3); give a file that `ironlearn compress` wrote")
    levels = header.uint(1, MAX_LEVELS, "the levels")
    hidden = header.uint(1, 256, "the MLP's width")
    depth = header.uint(1, 8, "the MLP's depth")
    latent_models = [(header.float32("a level's scale"), header.uint(0, MAX_SYMBOL, "a level's largest value"))
                     for _ in range(levels)]
    pyramid = LatentPyramid(height, width, levels)
    net = synthesis(levels, channels, hidden, depth)
    model = Sequential(pyramid, *net.layers)
    tensors = {name: p for name, p in model.named_parameters().items() if not name.startswith("layers.0.")}
    weight_models = [(header.sint(STEP_EXPONENTS[0], STEP_EXPONENTS[-1], "a weight step"),
                      header.float32("a weight scale"), header.uint(0, MAX_SYMBOL, "a weight's largest value"))
                     for _ in tensors]
    header.done()
    if len(sections) != 2:
        raise CodecError(f"the file has {len(sections)} sections, not 2; give a file that `ironlearn compress` wrote")
    for log_scale, _ in latent_models + [m[1:] for m in weight_models]:
        if not LOG_SCALE_RANGE[0] <= log_scale <= LOG_SCALE_RANGE[1]:
            raise CodecError("a scale in the header is out of range; give a file that `ironlearn compress` wrote")
    grids = pyramid.grids()
    latents = _decode_symbols(sections[0], [(g.size, m, s) for g, (s, m) in zip(grids, latent_models)], "latents")
    pyramid.values = [q.reshape(g.shape).astype(np.float32) for q, g in zip(latents, grids)]
    values = _decode_symbols(sections[1], [(p.size, m, s) for p, (_, s, m) in zip(tensors.values(), weight_models)],
                             "weights")
    for (name, param), q, (exponent, _, _) in zip(tensors.items(), values, weight_models):
        param[...] = q.reshape(param.shape) * np.float32(2.0 ** exponent)
    return Decoded(height, width, channels, model)


def decode(data: bytes, height: int | None = None, width: int | None = None) -> np.ndarray:
    """A compressed file's picture as uint8 ``(H, W, C)``, at its own size or ``height x width``."""
    picture = read(data).render(height, width)
    return np.round(picture * 255).astype(np.uint8)


__all__ = ["Compressed", "Decoded", "CodecError", "compress_array", "encode", "decode", "read", "level_shape"]
