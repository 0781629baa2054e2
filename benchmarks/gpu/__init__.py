"""The GPU check: one command that runs the tests on CuPy, the step and quality benchmarks and
writes a report, run from the repository's root as ``python benchmarks/gpu --out DIR``.

``__main__.py`` is that command (it only sets up the import path); :mod:`gpu.harness` the sizes,
the table of parts and the budget; the parts are :mod:`gpu.checks`, :mod:`gpu.fused`,
:mod:`gpu.speed`, :mod:`gpu.quality` and :mod:`gpu.profiling`, over what they share in
:mod:`gpu.device`; :mod:`gpu.report` writes the report.
"""
