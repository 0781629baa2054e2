"""The bitstream: a file's bytes around the model (:mod:`.container`), its :mod:`.header`, the
latents' entropy model (:mod:`.entropy`, with :mod:`.portable`'s ``exp`` and ``log``), and the
two sections both directions walk (:mod:`.sections`), with the entry points that write a model
as a file and read one back."""

from .sections import decode, least_bits, most_latents, read, read_header, read_header_path, read_path, write

__all__ = ["decode", "least_bits", "most_latents", "read", "read_header", "read_header_path", "read_path", "write"]
