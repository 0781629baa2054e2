"""Bounds that more than one layer enforces, kept below them all so that none imports upwards."""

#: The longest a job may be asked to run, in seconds (30 days): ``fit --time-budget`` and
#: ``compress --seconds``.  Past it, a number is a typo, not a plan.
MAX_SECONDS = 30 * 86400

#: The most pixels ``ironlearn render`` draws unasked (268 MP, 16384x16384); ``--max-pixels`` raises
#: it.  Past it a size is likelier a typo than a plan: ``--scale 100`` for 10 drew for 6 minutes
#: and wrote a PNG of hundreds of megabytes without a word (measured: docs/benchmark-log.md,
#: 'reliability.md: what it held before it became documentation').
MAX_RENDER_PIXELS = 1 << 28
