"""The package version: one home, below every module that reads it (the page records it, `--version` prints it)."""

__version__ = "0.1.0"
