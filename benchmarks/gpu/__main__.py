"""``python benchmarks/gpu --out DIR``: the GPU check (:mod:`gpu.harness`; ``--help`` lists its parts)."""

import os
import sys

PACKAGE = os.path.dirname(os.path.abspath(__file__))
BENCHMARKS = os.path.dirname(PACKAGE)
# Python puts the folder it runs first on the path; its modules are reached as the package's
# (gpu.profiling, gpu.report), never as top-level ones that could shadow the standard library's.
# benchmarks/ holds common.py, torch_peer.py and make_photo.py; a GPU machine may have CuPy and
# PyTorch but no installed ironlearn, hence src/.
sys.path[:] = [path for path in sys.path if os.path.abspath(path or os.curdir) != PACKAGE]
sys.path[0:0] = [BENCHMARKS, os.path.join(os.path.dirname(BENCHMARKS), "src")]

from gpu.harness import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
