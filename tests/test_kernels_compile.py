"""Every CUDA source ironlearn carries, compiled on the CPU by NVRTC (no GPU, no driver): a typo in a
kernel fails here, on every submission, instead of costing minutes of a lent GPU (issue 52).

NVRTC comes from NVIDIA's wheel ``nvidia-cuda-nvrtc-cu12`` (the test extra, on Linux), reached
through ctypes: five calls, no other binding.  The sources are compiled as CuPy compiles them
(``kernels._functions``'s options), for the oldest GPU CuPy 13 supports and for the H100/H200 the
project runs on, where the float2 atomics apply.  CuPy's ElementwiseKernels (Adam's update, the
sine) are one-line bodies that CuPy wraps in code of its own; they are not compiled here.
"""

import ctypes
import glob
import os

import pytest

from ironlearn import fused, kernels

#: GPU architectures compiled for: Volta (CuPy 13's oldest) and Hopper (float2 atomicAdd).
ARCHITECTURES = ("compute_70", "compute_90")
FEATURES = (1, 2, 4, 8)


def _nvrtc():
    try:
        import nvidia.cuda_nvrtc
    except ImportError:
        pytest.skip("NVIDIA's NVRTC wheel is not installed (the test extra has it on Linux: "
                    "pip install nvidia-cuda-nvrtc-cu12)")
    found = [path for folder in nvidia.cuda_nvrtc.__path__ for path in glob.glob(os.path.join(folder, "lib", "libnvrtc.so*"))
             if "builtins" not in path and ".alt." not in path]
    if not found:
        pytest.skip("the NVRTC wheel holds no libnvrtc.so for this system")
    return ctypes.CDLL(found[0])


def compile_cuda(source: str, options) -> str:
    """PTX of ``source`` compiled with ``options``; AssertionError holding NVRTC's log if it fails."""
    nvrtc = _nvrtc()
    program = ctypes.c_void_p()
    assert nvrtc.nvrtcCreateProgram(ctypes.byref(program), source.encode(), b"ironlearn.cu", 0, None, None) == 0
    try:
        flags = (ctypes.c_char_p * len(options))(*[option.encode() for option in options])
        status = nvrtc.nvrtcCompileProgram(program, len(options), flags)
        size = ctypes.c_size_t()
        nvrtc.nvrtcGetProgramLogSize(program, ctypes.byref(size))
        log = ctypes.create_string_buffer(size.value)
        nvrtc.nvrtcGetProgramLog(program, log)
        assert status == 0, f"NVRTC refused the source with {options}:\n{log.value.decode(errors='replace')}"
        nvrtc.nvrtcGetPTXSize(program, ctypes.byref(size))
        ptx = ctypes.create_string_buffer(size.value)
        nvrtc.nvrtcGetPTX(program, ptx)
        return ptx.value.decode()
    finally:
        nvrtc.nvrtcDestroyProgram(ctypes.byref(program))


@pytest.mark.parametrize("architecture", ARCHITECTURES)
@pytest.mark.parametrize("scalar_atomics", [False, True], ids=["float2 atomics", "scalar atomics"])
def test_the_hash_grid_kernels_compile(architecture, scalar_atomics):
    for features in FEATURES:
        options = ["--std=c++14", "--fmad=false", f"-DFEATURES={features}", f"--gpu-architecture={architecture}"]
        if scalar_atomics:
            options.append("-DIRONLEARN_SCALAR_ATOMICS")
        ptx = compile_cuda(kernels._SOURCE, options)
        for name in kernels._KERNEL_NAMES:
            assert f".entry {name}(" in ptx, name


def test_a_broken_source_is_caught_with_its_line():
    """The check can fail: a typo is refused, and NVRTC's log names the line."""
    broken = kernels._SOURCE.replace("acc[f] += w * row[f];", "acc[f] += w * rwo[f];")
    with pytest.raises(AssertionError, match=r"ironlearn\.cu\(\d+\).*rwo"):
        compile_cuda(broken, ["--std=c++14", "-DFEATURES=2"])


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_the_fused_grid_kernels_compile(architecture):
    for features in FEATURES:
        for taps in (2, 4):
            for extra in ((), ("-DIRONLEARN_SCALAR_ATOMICS",)):
                options = [*fused.grid_options(features, taps), *extra, f"--gpu-architecture={architecture}"]
                ptx = compile_cuda(fused._GRID_SOURCE, options)
                for name in fused._GRID_KERNELS:
                    assert f".entry {name}(" in ptx, name


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_the_fused_sampler_compiles_for_every_filter_and_type(architecture):
    import numpy as np

    from ironlearn.image import batch_kernel

    for kind in batch_kernel.SAMPLER_KINDS:
        for pixel in (np.uint8, np.float32):
            options = [*batch_kernel.sampler_options(kind, pixel, np.float32 if kind == "spline" else pixel),
                       f"--gpu-architecture={architecture}"]
            assert ".entry picture_batch(" in compile_cuda(batch_kernel._SAMPLER_SOURCE, options)


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_the_many_parameter_adam_compiles(architecture):
    ptx = compile_cuda(fused._ADAM_MANY, ["--std=c++14", f"--gpu-architecture={architecture}"])
    assert ".entry adam_many(" in ptx


@pytest.mark.parametrize("architecture", ARCHITECTURES)
def test_the_squared_error_compiles(architecture):
    ptx = compile_cuda(fused._SQUARED_ERROR, ["--std=c++14", f"--gpu-architecture={architecture}"])
    assert ".entry squared_error(" in ptx
