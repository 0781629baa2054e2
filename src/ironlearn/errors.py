"""The error every layer may raise for a request that cannot work, and the command maps to exit code 2."""


class UsageError(ValueError):
    """Options that cannot work together, or a file that may not be written; the message says
    which and what to do."""
