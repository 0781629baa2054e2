"""A picture's fingerprint: how a run, and the page that shows it, know the picture it was fitted on."""

from __future__ import annotations

import hashlib

FINGERPRINT_ROWS = 256  # rows hashed at a time: a band of float32, never the whole picture


def fingerprint(picture) -> str:
    """A digest of the pixels actually trained on (after resizing and mode conversion), as float32
    intensities, so that it does not depend on how the picture is stored."""
    digest = hashlib.sha256()
    for start in range(0, picture.height, FINGERPRINT_ROWS):
        digest.update(picture.band(slice(start, start + FINGERPRINT_ROWS)).tobytes())
    digest.update(f"{(picture.height, picture.width, picture.channels)}{picture.mode}".encode())
    return digest.hexdigest()[:16]
