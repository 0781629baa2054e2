"""The image-fitting job behind ``ironlearn fit``: options -> plan -> build -> train -> outputs.

* :mod:`.options`: :class:`FitOptions`, what the command accepts, and the checks that need no file;
* :mod:`.presets`: the networks to fit with, their options and defaults, sized from the picture;
* :mod:`.plan`: the resume merge and :class:`RunPlan`, every setting resolved, frozen;
* :mod:`.folder`: the run folder's files, its checks and its lock;
* :mod:`.run`: :func:`fit` and its steps (build, train with rollback and Ctrl-C);
* :mod:`.outputs`: history, plots, pictures and metrics.
"""

from .options import FitOptions, UsageError
from .plan import RunPlan, make_plan, resume_options
from .presets import DEFAULT_PRESET, OPTIONS, PRESETS, Preset
from .run import Interrupted, calibrate, fit

__all__ = ["DEFAULT_PRESET", "FitOptions", "Interrupted", "OPTIONS", "PRESETS", "Preset", "RunPlan", "UsageError",
           "calibrate", "fit", "make_plan", "resume_options"]
