"""Every CUDA source ironlearn compiles, in one place: the ``.cu`` files beside this module, and
:data:`SOURCES`, which says for each its kernels, its options and every variant the runtime may
ask for.  The launchers compile through :func:`functions`; ``tests/test_kernels_compile.py``
walks :data:`SOURCES` and compiles every variant with NVRTC on the CPU, so that a new source
or variant is checked on every submission without editing the test.

The launchers live beside the NumPy code they must agree with: :mod:`ironlearn.kernels` (a hash
grid's read and its transpose), :mod:`ironlearn.fused` (the grid's fused read, Adam on many
parameters, the squared error), :mod:`ironlearn.nn.fused_mlp` (a small MLP's passes) and
:mod:`ironlearn.image.batch_kernel` (a picture's batch).

CuPy's ElementwiseKernels (Adam's update, SIREN's sine each way) are registered here too, in
:data:`ELEMENTWISE`: their parameters and a statement an element, which :func:`elementwise`
makes into CuPy's kernel and :meth:`Elementwise.source` into a plain kernel that the test compiles.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from importlib import resources

#: The C types the sampler's pixels and filter taps may have.
C_TYPES = ("unsigned char", "float")
#: The feature counts a hash grid's row may have, and the vertices its levels read along an axis.
FEATURES, TAPS = (1, 2, 4, 8), (2, 4)
#: Defined where a compiler lacks ``float2`` atomics (before sm_90, or a header NVRTC does not
#: see): one atomic a feature.
SCALAR_ATOMICS = "-DIRONLEARN_SCALAR_ATOMICS"


@dataclass(frozen=True)
class Source:
    """One ``.cu`` file: its kernels (``entries``), every set of ``-D`` values the runtime may
    compile it with (``variants``), whether it keeps fused multiply-adds (``fmad``; off where a
    kernel must round as its NumPy twin does), whether it falls back to scalar atomics, and the
    ``.cuh`` files put before it (what several sources share)."""

    file: str
    entries: tuple
    variants: tuple = ({},)
    fmad: bool = False
    scalar_fallback: bool = False
    headers: tuple = ()

    @property
    def text(self) -> str:
        """The code compiled: its headers, then the file."""
        return "".join(_text(file) + "\n" for file in self.headers) + _text(self.file)

    def options(self, scalar_atomics: bool = False, **defines) -> tuple:
        """NVRTC's options for the variant ``defines``, as CuPy is given them."""
        return (("--std=c++14",) + (() if self.fmad else ("--fmad=false",))
                + tuple(f"-D{name}={value}" for name, value in defines.items())
                + ((SCALAR_ATOMICS,) if scalar_atomics else ()))


def _sampler_variants() -> tuple:
    """Every filter (``KIND``, :data:`~ironlearn.image.batch_kernel.SAMPLER_KINDS`) on either pixel
    type; the spline reads its float vertices, the others the picture."""
    return tuple({"KIND": kind, "PIXEL": pixel, "TAP": "float" if kind == 3 else pixel}
                 for kind in range(5) for pixel in C_TYPES)


SOURCES = {
    "weighted": Source("weighted.cu", ("gather_weighted", "scatter_weighted", "scatter_weighted_shared"),
                       tuple({"FEATURES": f} for f in FEATURES), scalar_fallback=True, headers=("common.cuh",)),
    "grid": Source("grid.cu", ("read_grid", "read_grid_backward", "read_lattice_backward"),
                   tuple({"FEATURES": f, "TAPS": t} for f in FEATURES for t in TAPS), scalar_fallback=True,
                   headers=("common.cuh",)),
    "sampler": Source("sampler.cu", ("picture_batch",), _sampler_variants(), headers=("common.cuh",)),
    # CuPy's own options (fused multiply-adds kept), as the ElementwiseKernel of one parameter compiles.
    "adam_many": Source("adam_many.cu", ("adam_many",), fmad=True),
    "squared_error": Source("squared_error.cu", ("squared_error",), fmad=True),
    # A shape a variant: the default models' heads (the pyramid's, the pixel spline's linear layer and
    # sigmoid, the codec's synthesis) and the largest the kernels take; another compiles at first use.
    "mlp": Source("mlp.cu", ("mlp_forward", "mlp_backward"), tuple(
        {"IN": i, "WIDTH": w, "OUT": o, "HIDDEN": h, "SIGMOID": s, "BLOCK": 128}
        for i, w, o, h, s in ((32, 32, 3, 2, 0), (8, 32, 1, 2, 0), (3, 1, 3, 0, 1), (21, 16, 3, 2, 0),
                              (64, 64, 64, 4, 1))), fmad=True),
}


#: One Adam step of an element: its moments, then the parameter (the NumPy twin:
#: ``ironlearn.kernels._adam_step``).
_ADAM = "m += (grad - m) * one_minus_b1; v += (grad * grad - v) * one_minus_b2; " \
        "param -= m / (sqrt(v) + eps_hat) * step_size;"
_ADAM_SCALARS = "T one_minus_b1, T one_minus_b2, T step_size, T eps_hat"


@dataclass(frozen=True)
class Elementwise:
    """A CuPy ElementwiseKernel: its inputs and outputs as CuPy lists them (``T``, the arrays'
    type), and its body, a statement an element."""

    inputs: str
    outputs: str
    body: str

    def source(self, name: str) -> str:
        """The body as a plain kernel of ``n`` float elements, every parameter an array (a scalar
        too): the compile test's form of it, close to the loop CuPy wraps it in."""
        def declared(params: str, role: str) -> list:
            return [(kind.replace("T", "float"), param, role) for kind, param in
                    (item.split() for item in params.split(","))]

        params = declared(self.inputs, "in") + declared(self.outputs, "out")
        arguments = ", ".join(f"{'const ' if role == 'in' else ''}{kind}* {param}_" for kind, param, role in params)
        elements = " ".join(f"{'const ' if role == 'in' else ''}{kind}{'' if role == 'in' else '&'} {param} = "
                            f"{param}_[i];" for kind, param, role in params)
        return (f'extern "C" __global__ void {name}({arguments}, const long long n) {{\n'
                f"    for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; i < n;"
                f" i += (long long)gridDim.x * blockDim.x) {{\n        {elements}\n        {self.body}\n    }}\n}}\n")


ELEMENTWISE = {
    "adam": Elementwise(f"T grad, {_ADAM_SCALARS}", "T param, T m, T v", _ADAM),
    "adam_masked": Elementwise(f"T grad, bool touched, {_ADAM_SCALARS}", "T param, T m, T v",
                               f"if (touched) {{ {_ADAM} }}"),
    # The reference's float32 operations in its order, one pass each way (``kernels.sine``).
    "sine": Elementwise("T x, T w0", "T y", "y = sin(x * w0);"),
    "sine_backward": Elementwise("T x, T g, T w0", "T dx", "dx = cos(x * w0) * g * w0;"),
}


@functools.cache
def elementwise(name: str):
    """CuPy's ElementwiseKernel of :data:`ELEMENTWISE` ``name``, made once."""
    from ..backend import cuda_module

    kernel = ELEMENTWISE[name]
    return cuda_module().ElementwiseKernel(kernel.inputs, kernel.outputs, kernel.body, f"ironlearn_{name}")


@functools.cache
def _text(file: str) -> str:
    return resources.files(__name__).joinpath(file).read_text(encoding="utf-8")


@functools.cache
def functions(name: str, **defines) -> dict:
    """The kernels of source ``name`` compiled for ``defines``, by their names (once a variant).
    Where the compiler refuses ``float2`` atomics, a source that allows it is compiled again
    with :data:`SCALAR_ATOMICS`."""
    from ..backend import cuda_module

    source, cupy = SOURCES[name], cuda_module()
    try:
        module = cupy.RawModule(code=source.text, options=source.options(**defines))
        return {entry: module.get_function(entry) for entry in source.entries}
    except Exception:  # CompileException
        if not source.scalar_fallback:
            raise
        module = cupy.RawModule(code=source.text, options=source.options(scalar_atomics=True, **defines))
        return {entry: module.get_function(entry) for entry in source.entries}
