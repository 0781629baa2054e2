"""The files of a run folder: what ``ironlearn fit`` writes there, and ``view``, ``render`` and ``info``
read (``fitting.folder`` checks and locks the folder).

| file | what it holds |
| --- | --- |
| ``checkpoint.npz`` | the latest state, written atomically; ``--resume`` continues from it (a finished run's holds its step and settings alone: its model is ``model.npz``'s) |
| ``model.npz`` | the final model with its architecture and metrics (for ``render``, ``info``, ``view``) |
| ``reconstruction.png`` | the model redrawn at the training size |
| ``timelapse.gif`` | the network learning, from static to the final picture |
| ``frames.npz`` | the time-lapse frames so far, kept beside the checkpoint so a resume continues them (removed once the run reaches its end) |
| ``loss.png``, ``history.csv`` | loss and PSNR against step |
| ``metrics.json`` | PSNR, steps, seconds, parameters, ... |
| ``.lock`` | held while a fit runs in the folder, removed when it ends (an advisory lock: a killed process leaves none) |
"""

CHECKPOINT, MODEL, FRAMES, HISTORY = "checkpoint.npz", "model.npz", "frames.npz", "history.csv"
RECONSTRUCTION, TIMELAPSE, LOSS_PLOT, METRICS = "reconstruction.png", "timelapse.gif", "loss.png", "metrics.json"
LOCK = ".lock"
VIEWER = "viewer.html"  # written by `ironlearn view`, not by the fit: the run's while ironlearn made it
FILES = (CHECKPOINT, MODEL, RECONSTRUCTION, TIMELAPSE, FRAMES, LOSS_PLOT, HISTORY, METRICS)
