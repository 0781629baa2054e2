"""Test helpers: finite-difference gradient checks, small pictures (and compressed ones), the command run
in-process, polling."""

import json
import os
import pathlib
import re
import time

import numpy as np
from PIL import Image

from ironlearn.backend import Backend
from ironlearn.nn.sparse import RowGrad


def numeric_grad(f, array, eps=1e-6):
    """Central finite differences of scalar ``f()`` with respect to every entry of ``array`` (in place)."""
    grad = np.zeros_like(array)
    flat, gflat = array.reshape(-1), grad.reshape(-1)
    for i in range(flat.size):
        old = flat[i]
        flat[i] = old + eps
        up = f()
        flat[i] = old - eps
        down = f()
        flat[i] = old
        gflat[i] = (up - down) / (2 * eps)
    return grad


def check_layer_gradients(layer, x, rtol=1e-5, atol=1e-7):
    """float64 finite-difference check of a layer's input and parameter gradients."""
    layer.to(Backend("cpu", np.float64))
    x = x.astype(np.float64)
    out = layer.forward(x.copy())
    upstream = np.random.default_rng(0).normal(size=out.shape)

    def objective():
        return float((layer.forward(x.copy()) * upstream).sum())

    layer.forward(x.copy())
    grad_in = layer.backward(upstream.copy())
    analytic = {name: g.dense() if isinstance(g, RowGrad) else g.copy() for name, g in layer.grads.items()}
    if grad_in is not None:
        np.testing.assert_allclose(grad_in, numeric_grad(objective, x), rtol=rtol, atol=atol)
    for name, param in layer.params.items():
        np.testing.assert_allclose(analytic[name], numeric_grad(objective, param), rtol=rtol, atol=atol,
                                   err_msg=f"gradient of {name}")


def make_picture(path, size=32, colour=False):
    """A disc on a gradient: smooth and sharp parts, deterministic."""
    ys, xs = np.mgrid[0:size, 0:size] / (size - 1)
    disc = ((xs - 0.5) ** 2 + (ys - 0.55) ** 2) < 0.09
    gray = np.where(disc, 0.1, 0.3 + 0.6 * xs)
    if colour:
        array = np.stack([gray, np.where(disc, 0.8, ys), 1 - gray], axis=-1)
    else:
        array = gray
    Image.fromarray((array * 255).astype(np.uint8)).save(path)
    return path


def waves(height, width, channels, seed=0):
    """Waves and a little noise, uint8 ``(height, width, channels)``: what a compressed picture of a
    few hundred bytes still holds, with no symmetry that would hide a swapped axis."""
    y, x = np.mgrid[0:height, 0:width] / max(height, width)
    noise = np.random.default_rng(seed).normal(size=(channels, height, width))
    planes = [np.sin(7 * x + c) * np.cos(5 * y - c) * 0.4 + 0.5 + 0.05 * noise[c] for c in range(channels)]
    return np.clip(np.round(np.stack(planes, -1) * 255), 0, 255).astype(np.uint8)


def with_filters(decoded, seed=0):
    """``decoded`` (a ``codec.Decoded``) given random filters on its three finest levels (a small
    picture's file may keep none)."""
    from ironlearn.codec.shapes import FILTER_OFFSETS

    rng = np.random.default_rng(seed)
    for k in range(min(3, decoded.pyramid.levels)):
        decoded.pyramid.filters[k] = (rng.integers(-8, 9, size=(decoded.channels, len(FILTER_OFFSETS))), -6)
    return decoded


def with_mlp(decoded, seed=0, spread=0.1):
    """``decoded`` (a ``codec.Decoded``) given a random MLP of the codec's shape whose correction
    has standard deviation ``spread``: files of small pictures rarely keep one, and a fresh
    one's last layer is zero."""
    from ironlearn.codec.model.network import FEATURE_GAIN
    from ironlearn.codec.model.network import build

    pyramid = decoded.pyramid
    net = build(pyramid.levels * pyramid.channels, pyramid.channels, 16, 2, seed=seed)
    last = net.layers[-1].params["weight"]
    last[...] = np.random.default_rng(seed).normal(size=last.shape)
    features = pyramid.features(decoded.height, decoded.width) * np.float32(FEATURE_GAIN)
    last *= np.float32(spread / net.forward(features).std())
    decoded.net = net
    return decoded


def random_context(pyramid, seed=0, hidden=8, learned=None):
    """A random context model (``codec/bitstream/context.py``) for ``pyramid``'s grids: integers
    within +-60 times 2**-8, shifts that keep most inputs within its clip (and some past it), and
    ``learned`` (a grid's flag, level-major; default: every grid but each fourth)."""
    from ironlearn.codec.bitstream import context

    rng = np.random.default_rng(seed)
    tensors = []
    for fan_in, fan_out in context.layer_shapes(hidden):
        tensors.append((rng.integers(-60, 61, (fan_in, fan_out)).astype(np.int32), -8))
        tensors.append((rng.integers(-60, 61, fan_out).astype(np.int32), -8))
    shifts = tuple(int(shift) for shift in rng.integers(0, 4, context.INPUTS - 1)) + (10,)  # today's units last
    grids = pyramid.levels * pyramid.channels
    flags = tuple(index % 4 != 3 for index in range(grids)) if learned is None else tuple(learned)
    return context.ContextModel(shifts, tuple(tensors), flags)


def with_everything(data: bytes, context: bool = True) -> bytes:
    """The file of ``data``'s picture (a file of ``codec.encode``) given filters on three levels,
    a random MLP, its weights rounded to steps of 2**-7, and (``context``) a random context model
    (:func:`random_context`) for its latents: a small picture's file rarely keeps any of them; a
    file with every section and field in use."""
    from ironlearn import codec
    from ironlearn.codec.bitstream import sections as bitstream

    decoded = with_mlp(with_filters(codec.read(data)))
    return bitstream.write(decoded.pyramid, rounded_network(decoded.net),
                           random_context(decoded.pyramid) if context else None)


def rounded_network(net):
    """``net`` as a file holds it: each tensor rounded to steps of 2**-7, with its model."""
    from ironlearn.codec.quantise import weight_code

    return net, [(q, -7, log_scale) for q, log_scale in (weight_code(p, -7) for p in net.named_parameters().values())]


#: Options that make a test's fit quick: a small network on the CPU, nothing printed but the result.
FAST = ["--device", "cpu", "--quiet", "--width", "16", "--depth", "1"]


def run_cli(capsys, *args):
    """``ironlearn ARGS`` in this process; returns (exit code, stdout, stderr)."""
    from ironlearn.cli import main  # imported here, so engine tests do not depend on the command

    try:
        code = main([str(a) for a in args])
    except SystemExit as exc:  # argparse's own errors
        code = exc.code
    out, err = capsys.readouterr()
    return code, out, err


def rewrite_meta(path, change):
    """Edit a saved checkpoint's metadata in place: ``change(meta, arrays)``."""
    with np.load(path) as archive:
        arrays = {k: archive[k] for k in archive.files}
    meta = json.loads(arrays["meta"].tobytes())
    change(meta, arrays)
    arrays["meta"] = np.frombuffer(json.dumps(meta).encode(), np.uint8)
    with open(path, "wb") as file:
        np.savez(file, **arrays)


def patience(seconds: float) -> float:
    """``seconds`` stretched by how busy the machine is now (its load per core, when above one): a
    fit that takes 10 s alone takes 100 s at load 20 on two cores, where a fixed wait failed."""
    try:
        load = os.getloadavg()[0] / (os.cpu_count() or 1)
    except (AttributeError, OSError):  # no load average (Windows)
        load = 1.0
    return seconds * max(1.0, load)


def wait_for(condition, timeout=60.0, what="the condition", every=0.02):
    """The first true value ``condition()`` returns, polled every ``every`` seconds for up to
    ``timeout`` seconds, stretched by the machine's load (:func:`patience`)."""
    started = time.monotonic()
    while not (value := condition()):
        if time.monotonic() - started > patience(timeout):
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(every)
    return value


def children_of(pid: int) -> list[int]:
    """Every descendant of process ``pid`` (Linux /proc)."""
    parents = {}
    for entry in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{entry}/stat") as file:
                parents[int(entry)] = int(file.read().rsplit(")", 1)[1].split()[1])
        except (OSError, IndexError, ValueError):
            continue
    found, todo = [], [pid]
    while todo:
        parent = todo.pop()
        for child in [p for p, pp in parents.items() if pp == parent]:
            found.append(child)
            todo.append(child)
    return found


def find_workers():
    """This process's worker children of fit-many and compress-many, by their command line (Linux /proc)."""
    found = []
    for pid in filter(str.isdigit, os.listdir("/proc")):
        try:
            with open(f"/proc/{pid}/stat") as file:
                parent = int(file.read().rsplit(")", 1)[1].split()[1])
            with open(f"/proc/{pid}/cmdline", "rb") as file:
                command = file.read()
        except (OSError, IndexError, ValueError):
            continue
        if parent == os.getpid() and b"ironlearn.fitting.many.worker" in command:
            found.append(int(pid))
    return found


DOCS = pathlib.Path(__file__).resolve().parents[1] / "docs"


def run_page(name: str, at_least: int) -> dict:
    """Run every ``python`` block of ``docs/<name>`` in order, in one namespace, in the current
    folder, and return the namespace; the page must have ``at_least`` blocks."""
    blocks = re.findall(r"```python\n(.*?)```", (DOCS / name).read_text(), re.S)
    assert len(blocks) >= at_least
    namespace = {}
    for number, code in enumerate(blocks, start=1):
        exec(compile(code, f"docs/{name}, block {number}", "exec"), namespace)
    return namespace


def run_measured(*args, timeout=120, memory_limit=None):
    """``ironlearn ARGS`` in a fresh process; returns (CompletedProcess, peak resident bytes).

    Linux carries a process's peak across ``exec`` from the process that forked it, so a command
    started straight from a test worker (hundreds of MB by then) would report the worker's peak.
    A small Python process starts the command instead and reads its peak as its child's
    (``RUSAGE_CHILDREN``).  ``memory_limit`` (bytes) also caps the command's address space, so
    that a regression fails fast instead of filling the machine."""
    import subprocess
    import sys

    wrapper = ("import resource, subprocess, sys\n"
               "limit = int(sys.argv[1])\n"
               "def cap():\n"
               "    if limit: resource.setrlimit(resource.RLIMIT_AS, (limit, limit))\n"
               "code = subprocess.call([sys.executable, '-m', 'ironlearn', *sys.argv[2:]], preexec_fn=cap)\n"
               "peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss * 1024\n"
               "sys.stderr.write(f'\\n@@peak {peak}\\n')\n"
               "sys.exit(code)\n")
    done = subprocess.run([sys.executable, "-c", wrapper, str(memory_limit or 0), *map(str, args)],
                          capture_output=True, text=True, timeout=timeout)
    err, _, peak = done.stderr.rpartition("\n@@peak ")
    done.stderr = err.rstrip("\n") + ("\n" if err.strip() else "")
    return done, int(peak.strip() or 0)


class WorkClock:
    """A clock that moves only when a network steps: each forward pass takes ``per_step`` seconds,
    ``slower`` times as long after ``until`` of them (a machine that slows down part-way), and
    no one waits for it.  :meth:`timing` makes a network built by ``build`` step it."""

    def __init__(self, per_step, until=None, slower=1.0):
        self.now, self.steps = 0.0, 0
        self.per_step, self.until, self.slower = per_step, until, slower

    def __call__(self):
        return self.now

    def work(self):
        self.steps += 1
        late = self.until is not None and self.steps > self.until
        self.now += self.per_step * (self.slower if late else 1.0)

    def timing(self, build):
        """``build``, its networks' forward passes counted on this clock."""
        def timed_build(*args, **kwargs):
            net = build(*args, **kwargs)
            forward = net.forward
            net.forward = lambda x: (self.work(), forward(x))[1]
            return net
        return timed_build


def stop_after(monkeypatch, steps: int) -> None:
    """Make a fit in this process stop as Ctrl-C stops it once its trainer reaches ``steps``: it
    saves its full checkpoint and exits 130, a run that has not reached its end."""
    import signal

    from ironlearn.train import Checkpointer, Trainer

    real_step = Trainer.train_step

    def step(self):
        real_step(self)
        # The fit's own trainer, not the throwaway steps that measure its pace or thread count.
        if self.step == steps and any(isinstance(c, Checkpointer) for c in self.callbacks):
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(Trainer, "train_step", step)
