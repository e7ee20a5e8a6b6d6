"""Layer 4: content fingerprints (pure) — 64-bit SimHash and MinHash (128 permutations, datasketch)
with LSH band keys (b=16 bands of r=8 rows) that PostgreSQL indexes with GIN for candidate lookup."""

from __future__ import annotations

import hashlib
import struct
from collections import Counter
from collections.abc import Sequence

import numpy as np
from datasketch import MinHash

from modules.digest.text import content_words

NUM_PERM = 128
BANDS = 16
ROWS = 8
SHINGLE = 2
_SEED = 17
_TEMPLATE = MinHash(num_perm=NUM_PERM, seed=_SEED)
_PERMS, _SCHEME = _TEMPLATE.permutations, _TEMPLATE.scheme  # generated once, shared by every signature


def _h64(data: bytes) -> int:
    """Signed 64-bit hash (PostgreSQL bigint)."""
    return struct.unpack("<q", hashlib.blake2b(data, digest_size=8).digest())[0]


def shingles(text: str) -> set[bytes]:
    """Word 2-grams of the content words (single words when the text is shorter). Not stemmed: the
    stemmer would cost more than everything else here, and copies keep their word forms."""
    ws = content_words(text)
    if len(ws) < SHINGLE:
        return {w.encode() for w in ws}
    return {" ".join(ws[i : i + SHINGLE]).encode() for i in range(len(ws) - SHINGLE + 1)}


def minhash(text: str) -> tuple[int, ...]:
    m = MinHash(num_perm=NUM_PERM, seed=_SEED, permutations=_PERMS, scheme=_SCHEME)
    sh = shingles(text)
    if sh:
        m.update_batch(list(sh))
    return tuple(int(v) for v in m.hashvalues)


def bands(signature: Sequence[int]) -> list[int]:
    """One key per band of `ROWS` values; two texts share a key when that whole band agrees."""
    arr = np.asarray(signature, dtype=np.uint64)
    return [_h64(bytes([b]) + arr[b * ROWS : (b + 1) * ROWS].tobytes()) for b in range(BANDS)]


def estimated_jaccard(a: Sequence[int], b: Sequence[int]) -> float:
    if len(a) != len(b) or not a:
        return 0.0
    return float(np.count_nonzero(np.asarray(a) == np.asarray(b))) / len(a)


def simhash(text: str) -> int:
    """64-bit SimHash over content words weighted by count (signed, to fit a bigint)."""
    counts = Counter(content_words(text))
    if not counts:
        return 0
    bits = np.unpackbits(
        np.frombuffer(
            b"".join(hashlib.blake2b(s.encode(), digest_size=8).digest() for s in counts), dtype=np.uint8
        )
    ).reshape(len(counts), 64)
    freq = np.fromiter(counts.values(), dtype=np.int64, count=len(counts))
    weights = (np.where(bits == 1, 1, -1) * freq[:, None]).sum(axis=0)
    value = 0
    for i, w in enumerate(weights):
        if w > 0:
            value |= 1 << (63 - i)
    return value - (1 << 64) if value >= 1 << 63 else value


def hamming(a: int, b: int) -> int:
    return ((a ^ b) & 0xFFFFFFFFFFFFFFFF).bit_count()
