"""How stored blobs are compressed (pure): zstd at level 3 when it saves bytes, the bytes as they are
otherwise. The codec's name is stored beside the bytes, so rows written before compression (and
bodies zstd cannot shrink) stay readable as "identity".

Level 3 stores the fixture corpus 4.6× smaller for 0.21 ms of host CPU per 69.6 KB body, against 2.9×
for PostgreSQL's own TOAST compression (pglz) at 1.2 ms of server CPU (bench/raw_compression.py)."""

from __future__ import annotations

from typing import Literal

import zstandard

Codec = Literal["identity", "zstd"]

_compressor = zstandard.ZstdCompressor(level=3)  # one event loop thread uses it; parse workers do not
_decompressor = zstandard.ZstdDecompressor()


def encode(data: bytes) -> tuple[Codec, bytes]:
    """The codec and the bytes to store: zstd unless it would not be smaller."""
    packed = _compressor.compress(data)
    return ("zstd", packed) if len(packed) < len(data) else ("identity", data)


def decode(codec: str, stored: bytes) -> bytes:
    """The original bytes of a stored blob."""
    if codec == "identity":
        return stored
    if codec == "zstd":
        return _decompressor.decompress(stored)
    raise ValueError(f"unknown blob codec {codec!r}")
