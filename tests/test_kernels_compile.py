"""Every CUDA source ironlearn carries, compiled on the CPU by NVRTC (no GPU, no driver): a typo in a
kernel fails here, on every submission, instead of costing minutes of a lent GPU.

The test walks the registry the launchers compile from (:data:`ironlearn.cuda.SOURCES`): every
source, every variant the runtime may ask for, with the options the launchers give CuPy, for
the oldest GPU CuPy 13 supports and for the H100/H200 the project runs on, where the float2
atomics apply (and without them, where a source falls back).  A new source or variant needs no
edit here.  NVRTC comes from NVIDIA's wheel ``nvidia-cuda-nvrtc-cu12`` (the test extra, on
Linux), reached through ctypes: five calls, no other binding.  CuPy's ElementwiseKernels (Adam's
update, the sine), registered in :data:`ironlearn.cuda.ELEMENTWISE`, are compiled in a loop close
to the one CuPy wraps them in.
"""

import ctypes
import glob
import os

import pytest

from ironlearn import cuda

#: GPU architectures compiled for: Volta (CuPy 13's oldest) and Hopper (float2 atomicAdd).
ARCHITECTURES = ("compute_70", "compute_90")


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


def _compiled_forms():
    for name, source in cuda.SOURCES.items():
        for fallback in (False, True) if source.scalar_fallback else (False,):
            yield pytest.param(name, fallback, id=f"{name}{'-scalar-atomics' if fallback else ''}")


@pytest.mark.parametrize("architecture", ARCHITECTURES)
@pytest.mark.parametrize("name, scalar_atomics", list(_compiled_forms()))
def test_every_source_compiles_in_every_variant(name, scalar_atomics, architecture):
    source = cuda.SOURCES[name]
    for variant in source.variants:
        options = [*source.options(scalar_atomics, **variant), f"--gpu-architecture={architecture}"]
        ptx = compile_cuda(source.text, options)
        for entry in source.entries:
            assert f".entry {entry}(" in ptx, (entry, variant)


@pytest.mark.parametrize("architecture", ARCHITECTURES)
@pytest.mark.parametrize("name", sorted(cuda.ELEMENTWISE))
def test_every_elementwise_body_compiles(name, architecture):
    """CuPy's ElementwiseKernels compile their bodies only when first run: each body, in the loop
    :meth:`ironlearn.cuda.Elementwise.source` puts it in, compiles here first."""
    ptx = compile_cuda(cuda.ELEMENTWISE[name].source(f"ironlearn_{name}"),
                       ["--std=c++14", f"--gpu-architecture={architecture}"])
    assert f".entry ironlearn_{name}(" in ptx


def test_the_registry_holds_every_source_in_the_package():
    """A ``.cu`` or ``.cuh`` file nobody registered would never be compiled by this test."""
    folder = os.path.dirname(cuda.__file__)
    assert sorted(source.file for source in cuda.SOURCES.values()) == sorted(
        name for name in os.listdir(folder) if name.endswith(".cu"))
    headers = {header for source in cuda.SOURCES.values() for header in source.headers}
    assert headers == {name for name in os.listdir(folder) if name.endswith(".cuh")}


def test_a_broken_source_is_caught_with_its_line():
    """The check can fail: a typo is refused, and NVRTC's log names the line."""
    broken = cuda.SOURCES["weighted"].text.replace("acc[f] += w * row[f];", "acc[f] += w * rwo[f];")
    assert broken != cuda.SOURCES["weighted"].text
    with pytest.raises(AssertionError, match=r"ironlearn\.cu\(\d+\).*rwo"):
        compile_cuda(broken, ["--std=c++14", "-DFEATURES=2"])


def test_the_samplers_variants_are_every_filter_and_type_it_launches():
    from ironlearn.image import batch_kernel

    variants = cuda.SOURCES["sampler"].variants
    assert {v["KIND"] for v in variants} == set(batch_kernel.SAMPLER_KINDS.values())
    assert {v["PIXEL"] for v in variants} == set(batch_kernel._C_TYPES.values())
    spline = batch_kernel.SAMPLER_KINDS["spline"]
    assert all(v["TAP"] == ("float" if v["KIND"] == spline else v["PIXEL"]) for v in variants)


def test_no_cuda_source_lives_outside_the_registry():
    """Every kernel is a ``.cu`` file under ``ironlearn/cuda`` and is compiled by
    :func:`ironlearn.cuda.functions`: no module elsewhere carries CUDA source or compiles its own
    (one retry block, one list of options, all of it compiled by the test above)."""
    import pathlib

    package = pathlib.Path(cuda.__file__).parent.parent
    found = [str(path.relative_to(package)) for path in package.rglob("*.py")
             if path.parent.name != "cuda" and any(mark in path.read_text(encoding="utf-8")
                                                 for mark in ("__global__", "RawModule("))]
    assert not found, f"CUDA source or compilation outside ironlearn/cuda: {found}"
