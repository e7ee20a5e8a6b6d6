"""Layer 4: content fingerprints (pure) — 64-bit SimHash and MinHash (128 permutations, datasketch)
with LSH band keys (b=16 bands of r=8 rows) that intake stores as btree rows for candidate lookup."""

from __future__ import annotations

import hashlib
import struct
from collections import Counter
from collections.abc import Sequence
from functools import lru_cache

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


def _words(text: str | Sequence[str]) -> Sequence[str]:
    """Content words of a text, or the list itself (features computes them once for both signatures)."""
    return content_words(text) if isinstance(text, str) else text


def shingles(text: str | Sequence[str]) -> set[bytes]:
    """Word 2-grams of the content words (single words when the text is shorter). Not stemmed: the
    stemmer would cost more than everything else here, and copies keep their word forms."""
    ws = _words(text)
    if len(ws) < SHINGLE:
        return {w.encode() for w in ws}
    return {" ".join(ws[i : i + SHINGLE]).encode() for i in range(len(ws) - SHINGLE + 1)}


def minhash(text: str | Sequence[str]) -> tuple[int, ...]:
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


@lru_cache(maxsize=100_000)
def _word_hash(word: str) -> bytes:
    """A word's 64 SimHash bits (words recur across articles: hashing each once per process is cheaper)."""
    return hashlib.blake2b(word.encode(), digest_size=8).digest()


def simhash(text: str | Sequence[str]) -> int:
    """64-bit SimHash over content words weighted by count (signed, to fit a bigint)."""
    counts = Counter(_words(text))
    if not counts:
        return 0
    bits = np.unpackbits(np.frombuffer(b"".join(_word_hash(s) for s in counts), dtype=np.uint8)).reshape(
        len(counts), 64
    )
    freq = np.fromiter(counts.values(), dtype=np.int64, count=len(counts))
    weights = (np.where(bits == 1, 1, -1) * freq[:, None]).sum(axis=0)
    value = int.from_bytes(np.packbits(weights > 0).tobytes(), "big")
    return value - (1 << 64) if value >= 1 << 63 else value


def hamming(a: int, b: int) -> int:
    return ((a ^ b) & 0xFFFFFFFFFFFFFFFF).bit_count()
