"""Layer 4: content fingerprints (pure) — 64-bit SimHash and MinHash (128 permutations, datasketch)
with LSH band keys (b=16 bands of r=8 rows) that intake stores as btree rows for candidate lookup.

MinHash signatures are datasketch's (scheme affine32: SHA-1's first 4 bytes, the MurmurHash3 finalizer,
`a·h + b` mod 2³²) computed here as one numpy operation over all shingles × permutations: the stored
signatures must stay comparable, and datasketch's update_batch hashes through a Python call per shingle."""

from __future__ import annotations

import hashlib
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
assert _TEMPLATE.scheme == "affine32", "minhash() reproduces datasketch's affine32 scheme only"
_A, _B = (np.asarray(p, dtype=np.uint32) for p in _TEMPLATE.permutations)  # generated once
_EMPTY = tuple(int(v) for v in _TEMPLATE.hashvalues)  # the signature of no shingles


def _h64(data: bytes) -> int:
    """Signed 64-bit hash (PostgreSQL bigint)."""
    return int.from_bytes(hashlib.blake2b(data, digest_size=8).digest(), "little", signed=True)


def _words(text: str | Sequence[str]) -> Sequence[str]:
    """Content words of a text, or the list itself (features computes them once for both signatures)."""
    return content_words(text) if isinstance(text, str) else text


def shingles(text: str | Sequence[str]) -> set[bytes]:
    """Word 2-grams of the content words (single words when the text is shorter). Not stemmed: the
    stemmer would cost more than everything else here, and copies keep their word forms."""
    ws = _words(text)
    if len(ws) < SHINGLE:
        return {w.encode() for w in ws}
    return {" ".join(g).encode() for g in zip(*(ws[i:] for i in range(SHINGLE)), strict=False)}


def _fmix32(h: np.ndarray) -> np.ndarray:
    """MurmurHash3's 32-bit finalizer (what datasketch applies before its permutations)."""
    h = h ^ (h >> np.uint32(16))
    h = h * np.uint32(0x85EBCA6B)
    h = h ^ (h >> np.uint32(13))
    h = h * np.uint32(0xC2B2AE35)
    return h ^ (h >> np.uint32(16))


def minhash(text: str | Sequence[str]) -> tuple[int, ...]:
    """The 128 minima, equal to datasketch's MinHash(num_perm=128, seed=17).update_batch(shingles)."""
    sh = shingles(text)
    if not sh:
        return _EMPTY
    digests = b"".join([hashlib.sha1(s).digest()[:4] for s in sh])
    h = _fmix32(np.frombuffer(digests, dtype="<u4").astype(np.uint32))
    return tuple((h[:, None] * _A + _B).min(axis=0).tolist())  # uint32 arithmetic wraps: mod 2³²


def bands(signature: Sequence[int]) -> list[int]:
    """One key per band of `ROWS` values; two texts share a key when that whole band agrees."""
    raw = np.asarray(signature, dtype=np.uint64).tobytes()
    size = ROWS * 8
    return [_h64(bytes([b]) + raw[b * size : (b + 1) * size]) for b in range(BANDS)]


def lead_key(lead: str) -> int:
    """The lookup key of a body's first content words (stored and probed with the band keys)."""
    return _h64(b"lead\x1f" + lead.encode())


def estimated_jaccard(a: Sequence[int], b: Sequence[int]) -> float:
    if len(a) != len(b) or not a:
        return 0.0
    return float(np.count_nonzero(np.asarray(a) == np.asarray(b))) / len(a)


@lru_cache(maxsize=100_000)
def _word_hash(word: str) -> bytes:
    """A word's 64 SimHash bits (words recur across articles: hashing each once per process is cheaper)."""
    return hashlib.blake2b(word.encode(), digest_size=8).digest()


def simhash(text: str | Sequence[str]) -> int:
    """64-bit SimHash over content words weighted by count (signed, to fit a bigint): bit i is set when
    the words with bit i set outweigh the others, i.e. 2·(their count) > all words."""
    counts = Counter(_words(text))
    if not counts:
        return 0
    bits = np.unpackbits(np.frombuffer(b"".join([_word_hash(s) for s in counts]), dtype=np.uint8))
    freq = np.fromiter(counts.values(), dtype=np.int64, count=len(counts))
    ones = freq @ bits.reshape(len(counts), 64)
    value = int.from_bytes(np.packbits(2 * ones > freq.sum()).tobytes(), "big")
    return value - (1 << 64) if value >= 1 << 63 else value


def hamming(a: int, b: int) -> int:
    return ((a ^ b) & 0xFFFFFFFFFFFFFFFF).bit_count()
