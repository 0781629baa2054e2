"""CUDA kernels run on the CPU: a source of :data:`ironlearn.cuda.SOURCES` compiled as C++ and
launched a thread at a time (a grid of one or two dimensions), with CuPy's calling convention, on
NumPy arrays.

A kernel of one thread a point, which shares nothing between threads (no ``__shared__``, no
``__syncthreads``, no atomics, no warp shuffles), computes the same thing whichever order its
threads run in, so running them one after another shows whether its indexing and arithmetic
agree with its NumPy twin, on a machine without a GPU.  It runs slowly (a call a thread): keep
the arrays to a few hundred points.

:func:`functions` stands in for :func:`ironlearn.cuda.functions`.  A kernel's arguments are
passed as CuPy passes them: arrays as pointers to their data (C-contiguous), ``np.uint64`` as a
``unsigned long long`` (a pointer, where 0 is null), ``np.int32`` as ``int``, other integers as
``long long``, ``np.float32`` as ``float`` and other floats as ``double``, as CuPy passes them.
"""

from __future__ import annotations

import ctypes
import functools
import hashlib
import os
import shutil
import subprocess
import tempfile

import numpy as np

from ironlearn import cuda

#: What the C++ compiler reads before a source: CUDA's words for a kernel and a thread's indices.
SHIM = r"""
#include <cmath>
#include <cstdint>
using namespace std;  // sin, cos, sqrt, exp of a float in float, as CUDA's overloads
struct ironlearn_dim3 { unsigned x, y, z; };
static ironlearn_dim3 threadIdx, blockIdx, blockDim, gridDim;
#define __global__
#define __device__ static inline
#define __forceinline__
#define __shared__ static
#define __syncthreads()  // compiles; a kernel that needs the barrier cannot run here
template <typename T> static inline T atomicAdd(T* at, T value) { T old = *at; *at += value; return old; }
extern "C" void ironlearn_at(unsigned block, unsigned row, unsigned thread, unsigned threads, unsigned blocks,
                             unsigned rows) {
    blockIdx = {block, row, 0}; threadIdx = {thread, 0, 0}; blockDim = {threads, 1, 1}; gridDim = {blocks, rows, 1};
}
"""


def compiler() -> str | None:
    """The C++ compiler found on the path, or None."""
    return shutil.which("g++") or shutil.which("c++") or shutil.which("clang++")


@functools.cache
def _library(code: str, what: str) -> ctypes.CDLL:
    """``code`` compiled as C++ after :data:`SHIM` into a shared library (kept in the temporary
    folder by a hash of the code); ``what`` names it in a compiler's refusal."""
    # A block's shared memory sized at launch: a fixed size here (kernels using it do not run here).
    text = SHIM + code.replace("extern __shared__ float sums[];", "static float sums[1 << 16];")
    folder = os.path.join(tempfile.gettempdir(), "ironlearn-cuda-on-cpu")
    os.makedirs(folder, exist_ok=True)
    stem = os.path.join(folder, hashlib.sha256(text.encode()).hexdigest()[:16])
    if not os.path.exists(stem + ".so"):
        mine = f"{stem}.{os.getpid()}"  # test workers may build the same source at once
        with open(mine + ".cpp", "w", encoding="utf-8") as file:
            file.write(text)
        done = subprocess.run([compiler(), "-O1", "-shared", "-fPIC", "-Wno-unknown-pragmas", "-o", mine + ".so",
                               mine + ".cpp"], capture_output=True, text=True)
        if done.returncode:
            raise RuntimeError(f"{what} does not compile as C++ ({mine}.cpp):\n{done.stderr}")
        os.replace(mine + ".so", stem + ".so")
    return ctypes.CDLL(stem + ".so")


def _argument(value):
    if isinstance(value, np.ndarray):
        assert value.flags.c_contiguous, "a kernel reads its arrays as C-contiguous"
        return ctypes.c_void_p(value.ctypes.data)
    for kind, c_type in ((np.uint64, ctypes.c_uint64), (np.int32, ctypes.c_int32), (np.float32, ctypes.c_float),
                         (np.float64, ctypes.c_double), (float, ctypes.c_double), (int, ctypes.c_longlong),
                         (np.integer, ctypes.c_longlong)):
        if isinstance(value, kind):
            return c_type(value)
    raise TypeError(f"no C type for a kernel argument of type {type(value).__name__}")


def functions(name: str, **defines) -> dict:
    """The kernels of source ``name`` for ``defines``, each called as a CuPy kernel is:
    ``kernel(grid, block, arguments)`` (a one-dimensional grid of blocks of threads)."""
    code = "".join(f"#define {key} {value}\n" for key, value in sorted(defines.items())) + cuda.SOURCES[name].text
    library = _library(code, f"{name} {defines}")

    def launcher(entry):
        kernel = getattr(library, entry)

        def launch(grid, block, arguments, **_):
            (blocks, rows), (threads,) = (tuple(grid) + (1,))[:2], block
            converted = [_argument(value) for value in arguments]
            for row in range(rows):
                for b in range(blocks):
                    for t in range(threads):
                        library.ironlearn_at(b, row, t, threads, blocks, rows)
                        kernel(*converted)
        return launch

    return {entry: launcher(entry) for entry in cuda.SOURCES[name].entries}


def elementwise(name: str):
    """:data:`ironlearn.cuda.ELEMENTWISE` ``name`` as ``kernel(*arrays)``: every parameter an array
    of one length (a scalar repeated), inputs then outputs as the kernel lists them, the
    outputs written in place."""
    entry = f"ironlearn_{name}"
    library = _library(cuda.ELEMENTWISE[name].source(entry), name)

    def run(*arrays):
        library.ironlearn_at(0, 0, 0, 1, 1, 1)  # one thread, whose loop walks every element
        getattr(library, entry)(*[_argument(array) for array in arrays], ctypes.c_longlong(len(arrays[0])))
    return run
