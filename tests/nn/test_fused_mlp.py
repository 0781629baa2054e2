"""The fused MLP (ironlearn.nn.fused_mlp) against the layers it replaces, which run one by one.

Its kernels run here on the CPU, compiled as C++ and launched a thread at a time
(tests/cuda_on_cpu.py), through the launcher itself: the kernels' indexing, the products that
take their outputs, and the way ``Sequential`` hands the chain's gradient back to the layers
before it are all checked without a GPU.  On a GPU the same comparison runs on CuPy."""

import numpy as np
import pytest

from cuda_on_cpu import compiler, functions
from ironlearn import cuda
from ironlearn.backend import Backend, cuda_available
from ironlearn.nn import Linear, ReLU, Tanh, fused_mlp, hashgrid, mlp, siren

needs_compiler = pytest.mark.skipif(compiler() is None, reason="no C++ compiler to run the kernels on the CPU")

#: (inputs, width, outputs, hidden layers, sigmoid): the default heads, and the largest taken.
SHAPES = [(32, 32, 3, 2, False), (21, 16, 3, 2, False), (3, 1, 3, 0, True), (8, 32, 1, 2, True),
          (64, 64, 64, 4, True), (5, 12, 2, 1, False)]


def _chain(inputs, width, outputs, hidden, sigmoid, seed=0):
    rng = np.random.default_rng(seed)
    net = mlp(inputs, outputs, width=width, depth=hidden, final_activation="sigmoid" if sigmoid else None, rng=rng)
    for layer in net.layers[::2]:  # the Linears
        layer.params["bias"][...] = rng.normal(0, 0.3, layer.out_features)  # not zero: the bias's path must show
    return net


def _gradients(net):
    return {name: grad.dense() if hasattr(grad, "dense") else grad.copy()
            for name, grad in net.named_gradients().items()}


def _fused_then_layers(net, x, grad_out, monkeypatch):
    """``net``'s output and gradients run fused, then layer by layer: ``(fused, layers)``, each
    ``(output, gradients by name)``."""
    passes = []
    for fused in (True, False):
        if not fused:
            monkeypatch.setattr(fused_mlp, "applies", lambda x, layers: False)
        y = net.forward(x)
        assert net._fused == fused
        net.backward(grad_out)
        passes.append((y, _gradients(net)))
    return passes


@pytest.fixture
def kernels_on_the_cpu(monkeypatch):
    """The launcher's kernels are the CPU's, and a ``Sequential`` given NumPy float32 takes them."""
    monkeypatch.setattr(cuda, "functions", functions)
    monkeypatch.setattr(fused_mlp, "applies", lambda x, layers: x.dtype == np.float32)


@needs_compiler
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s[:4])) + ("-sigmoid" if s[4] else ""))
def test_the_kernels_agree_with_the_layers(shape, kernels_on_the_cpu):
    net = _chain(*shape)
    rng = np.random.default_rng(1)
    x = rng.uniform(-1, 1, (300, shape[0])).astype(np.float32)  # three blocks, the last part-full
    grad_out = rng.normal(0, 1, (300, shape[2])).astype(np.float32)
    assert fused_mlp.chain_start(net.layers) == 0

    head = fused_mlp.FusedMLP(net.layers)
    y_fused = head.forward(x)
    grad_in_fused = head.backward(grad_out)
    fused_grads = _gradients(net)

    y = x
    for layer in net.layers:
        y = layer.forward(y)
    grad = grad_out
    for layer in reversed(net.layers):
        grad = layer.backward(grad)
    np.testing.assert_allclose(y_fused, y, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(grad_in_fused, grad, rtol=1e-4, atol=1e-5)
    for name, expected in _gradients(net).items():
        np.testing.assert_allclose(fused_grads[name], expected, rtol=1e-4, atol=1e-4, err_msg=name)


@needs_compiler
def test_a_sequential_hands_the_chains_gradient_to_the_grid_before_it(kernels_on_the_cpu, monkeypatch):
    """The hash grid's head runs fused inside ``Sequential``; the grid's table gets the same gradient."""
    net = hashgrid(2, 3, levels=4, log2_table_size=8, coarsest=4, finest=16, width=16, rng=0)
    x = np.random.default_rng(2).uniform(-1, 1, (200, 2)).astype(np.float32)
    grad_out = np.random.default_rng(3).normal(0, 1, (200, 3)).astype(np.float32)
    (y_fused, fused_grads), (y, grads) = _fused_then_layers(net, x, grad_out, monkeypatch)
    np.testing.assert_allclose(y_fused, y, rtol=1e-5, atol=1e-6)
    for name, expected in grads.items():
        np.testing.assert_allclose(fused_grads[name], expected, rtol=1e-4, atol=1e-5, err_msg=name)


@needs_compiler
@pytest.mark.parametrize("depth", [0, 2])
def test_a_grid_read_on_a_lattice_hands_its_features_to_the_fused_chain(kernels_on_the_cpu, monkeypatch, depth):
    """A tile of pixels comes as a Lattice, not an array: the chain is chosen from what reaches
    it, the grid's features, so that fit's tiles (the pixel spline's) take the kernels too."""
    from ironlearn.nn.lattice import Lattice

    net = hashgrid(2, 3, levels=3, log2_table_size=8, coarsest=4, finest=16, width=16, depth=depth, rng=0)
    lattice = Lattice(np.linspace(-0.9, 0.9, 12), np.linspace(-0.8, 0.8, 10))
    grad_out = np.random.default_rng(4).normal(0, 1, (len(lattice), 3)).astype(np.float32)
    (y_fused, fused_grads), (y, grads) = _fused_then_layers(net, lattice, grad_out, monkeypatch)
    np.testing.assert_allclose(y_fused, y, rtol=1e-5, atol=1e-6)
    for name, expected in grads.items():
        np.testing.assert_allclose(fused_grads[name], expected, rtol=1e-4, atol=1e-5, err_msg=name)


def test_the_chain_is_the_small_relu_mlp_that_ends_a_model():
    rng = np.random.default_rng(0)
    assert fused_mlp.chain_start(hashgrid(2, 3, rng=0).layers) == 1  # after the grid
    assert fused_mlp.chain_start(hashgrid(2, 3, depth=0, rng=0).layers) == 1  # a linear layer and a sigmoid
    assert fused_mlp.chain_start(mlp(2, 3, width=64, depth=6, rng=rng).layers) == 4  # four hidden layers at most
    assert fused_mlp.chain_start(mlp(2, 3, width=128, rng=rng).layers) is None  # too wide
    assert fused_mlp.chain_start(siren(2, 3, width=32, rng=rng).layers) == 6  # after the sines: the last alone
    assert fused_mlp.chain_start(siren(2, 3, rng=rng).layers) is None  # 256 wide
    assert fused_mlp.chain_start(mlp(2, 3, width=32, final_activation="tanh", rng=rng).layers) is None
    assert fused_mlp.chain_start([Linear(4, 8, rng=rng), Tanh(), Linear(8, 2, rng=rng)]) == 2  # the last alone
    assert fused_mlp.chain_start([Linear(40, 8, rng=rng), ReLU(), Linear(8, 2, rng=rng)]) == 0  # 40 inputs


def test_the_registry_compiles_the_block_the_launcher_uses():
    assert {variant["BLOCK"] for variant in cuda.SOURCES["mlp"].variants} == {fused_mlp.BLOCK}


@pytest.mark.skipif(not cuda_available(), reason="no GPU with CuPy here: the CUDA kernels run on one")
@pytest.mark.parametrize("shape", SHAPES[:3])
def test_cuda_fused_mlp_agrees_with_the_layers(shape, monkeypatch):
    backend = Backend("cuda")
    net = _chain(*shape).to(backend)
    rng = np.random.default_rng(1)
    x = backend.asarray(rng.uniform(-1, 1, (5000, shape[0])))
    grad_out = backend.asarray(rng.normal(0, 1, (5000, shape[2])))
    (y_fused, fused_grads), (y, grads) = _fused_then_layers(net, x, grad_out, monkeypatch)
    np.testing.assert_allclose(backend.to_host(y_fused), backend.to_host(y), rtol=1e-4, atol=1e-5)
    for name, expected in grads.items():
        np.testing.assert_allclose(backend.to_host(fused_grads[name]), backend.to_host(expected), rtol=1e-3,
                                   atol=1e-3, err_msg=name)

