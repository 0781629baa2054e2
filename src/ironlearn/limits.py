"""Bounds that more than one layer enforces, kept below them all so that none imports upwards."""

#: The longest a job may be asked to run, in seconds (30 days): ``fit --time-budget`` and
#: ``compress --seconds``.  Past it, a number is a typo, not a plan.
MAX_SECONDS = 30 * 86400
