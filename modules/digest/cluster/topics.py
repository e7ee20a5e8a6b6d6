"""TF-IDF features, DBSCAN (cosine, eps 0.4, min_samples 2) or agglomerative (k topics, Ward), labels, leads.

Features are step 5's: title ×2 + the first 200 words, lowercased, stop words removed, Porter-stemmed,
with the window itself as the IDF corpus. Labels show the most common surface word of each stem.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.sparse import csr_matrix
from sklearn import config_context
from sklearn.cluster import DBSCAN, AgglomerativeClustering
from sklearn.decomposition import TruncatedSVD
from sklearn.feature_extraction.text import TfidfTransformer

from modules.digest.cluster.labels import label as topic_label
from modules.digest.text import STOP_WORDS, stem, words

EPS = 0.4
MIN_SAMPLES = 2
WORKING_MEMORY_MB = (
    128  # sklearn computes distances in chunks of this size (its default, 1 GiB, doubled our peak)
)
WARD_DIMENSIONS = 100  # Ward needs dense vectors: reduce the sparse TF-IDF with truncated SVD first


class Terms(dict[str, int]):
    """word → term id in this window (−1: a stop word or one letter), filled on first sight: each distinct
    word is filtered and Porter-stemmed once per window, every other token is one dict lookup in C."""

    def __init__(self) -> None:
        super().__init__()
        self.ids: dict[str, int] = {}  # stem → term id
        self.surface: dict[str, str] = {}  # stem → the first word it came from

    def __missing__(self, word: str) -> int:
        i = -1
        if word not in STOP_WORDS and len(word) > 1:
            s = stem(word)
            i = self.ids.setdefault(s, len(self.ids))
            self.surface.setdefault(s, word)
        self[word] = i
        return i

    def known(self, word: str) -> int:
        """The id of a word's stem without adding terms (a profile is read in the window's vocabulary)."""
        if word in self:
            return self[word]
        return -1 if word in STOP_WORDS or len(word) < 2 else self.ids.get(stem(word), -1)


def _counts(rows: list[list[int]], column: np.ndarray) -> csr_matrix:
    """Term counts per document from term ids (−1 = no term), filtered and mapped to columns in numpy."""
    lengths = np.fromiter(map(len, rows), dtype=np.int64, count=len(rows))
    ids = np.fromiter(itertools.chain.from_iterable(rows), dtype=np.int64, count=int(lengths.sum()))
    keep = ids >= 0
    per_doc = np.bincount(np.repeat(np.arange(len(rows)), lengths)[keep], minlength=len(rows))
    indptr = np.concatenate(([0], np.cumsum(per_doc)))
    indices, width = column[ids[keep]], len(column)
    m = csr_matrix((np.ones(len(indices), dtype=np.float64), indices, indptr), shape=(len(rows), width))
    m.sum_duplicates()
    return m


@dataclass
class Tfidf:
    """The window's vocabulary (columns in alphabetical order of stems) and its IDF weights."""

    terms: Terms
    column: np.ndarray  # term id → column
    names: np.ndarray  # column → stem
    transformer: TfidfTransformer

    def ids(self, text: str, *, grow: bool = False) -> list[int]:
        """Term ids of a text's words, −1 for words without a term."""
        return list(map(self.terms.__getitem__ if grow else self.terms.known, words(text)))

    def transform(self, documents: Sequence[str]) -> csr_matrix:
        counts = _counts([self.ids(d) for d in documents], self.column)
        return self.transformer.transform(counts).astype(np.float32)

    def get_feature_names_out(self) -> np.ndarray:
        return self.names


@dataclass
class Vectors:
    matrix: csr_matrix
    vectorizer: Tfidf

    def term(self, stem_: str) -> str:
        return self.vectorizer.terms.surface.get(stem_, stem_)


def vectorize(documents: Sequence[str]) -> Vectors:
    """TF-IDF (sublinear tf, smooth idf, L2 rows) over `documents`: the digest window is the IDF corpus.
    Tokens become term ids through one dict per window (the Python analyzer sklearn's TfidfVectorizer
    calls per token took 4 s of a 10,000-article digest); sklearn's TfidfTransformer does the weighting."""
    terms = Terms()
    tfidf = Tfidf(
        terms, np.zeros(0, dtype=np.int64), np.array([], dtype=object), TfidfTransformer(sublinear_tf=True)
    )
    rows = [tfidf.ids(d, grow=True) for d in documents]
    stems = sorted(terms.ids)
    tfidf.names = np.array(stems, dtype=object)
    tfidf.column = np.empty(len(stems), dtype=np.int64)
    tfidf.column[[terms.ids[s] for s in stems]] = np.arange(len(stems))
    if not documents or not stems:
        return Vectors(csr_matrix((len(documents), len(stems)), dtype=np.float32), tfidf)
    counts = _counts(rows, tfidf.column)
    return Vectors(tfidf.transformer.fit_transform(counts).astype(np.float32), tfidf)


def dbscan(v: Vectors) -> list[int]:
    """Cluster ids per document; noise points (-1) become singleton topics with fresh ids."""
    n = v.matrix.shape[0]
    if n == 0:
        return []
    if n == 1:
        return [0]
    with config_context(working_memory=WORKING_MEMORY_MB):
        model = DBSCAN(eps=EPS, min_samples=MIN_SAMPLES, metric="cosine", algorithm="brute")
        labels = model.fit_predict(v.matrix)
    return _singletons(labels)


def agglomerative(v: Vectors, k: int) -> list[int]:
    n = v.matrix.shape[0]
    if n <= k:
        return list(range(n))
    dims = min(WARD_DIMENSIONS, v.matrix.shape[1] - 1, n - 1)
    dense = (
        TruncatedSVD(n_components=dims, random_state=0).fit_transform(v.matrix)
        if dims >= 2
        else v.matrix.toarray()
    )
    labels = AgglomerativeClustering(n_clusters=k, linkage="ward").fit_predict(dense)
    return [int(x) for x in labels]


def _singletons(labels: np.ndarray) -> list[int]:
    out = [int(x) for x in labels]
    next_id = max(out, default=-1) + 1
    for i, x in enumerate(out):
        if x == -1:
            out[i] = next_id
            next_id += 1
    return out


@dataclass(frozen=True, slots=True)
class Topic:
    members: tuple[int, ...]  # document indices
    lead: int
    terms: tuple[str, ...]  # top centroid terms (surface words), best first: what trends compare
    label: str  # labels.label: the lead's headline, led by the name the members share


def build(
    v: Vectors,
    labels: Sequence[int],
    *,
    importance: Sequence[float],
    tiers: Sequence[int],
    entities: Sequence[Sequence[str]],
    titles: Sequence[str],
    texts: Sequence[str],
    top_terms: int = 10,
) -> list[Topic]:
    """One Topic per cluster id: centroid terms, the lead article (closest to the centroid; ties → higher
    importance, then the better authority tier) and a label (`labels.label` from the lead's title, the
    members' entities and `texts`, their titles and leads)."""
    groups: dict[int, list[int]] = {}
    for i, cluster in enumerate(labels):
        groups.setdefault(cluster, []).append(i)
    names = v.vectorizer.get_feature_names_out() if v.matrix.shape[1] else np.array([])
    out = []
    m = v.matrix.tocsr()
    for members in groups.values():
        if len(members) == 1:  # most topics: read the row's own entries (slicing a sparse matrix is slow)
            start, stop = m.indptr[members[0]], m.indptr[members[0] + 1]
            cols, centroid = m.indices[start:stop], m.data[start:stop]
            sims = np.ones(1)
        else:
            rows = m[members]
            cols = np.unique(rows.indices)  # only the terms these articles use
            dense = rows[:, cols].toarray()
            centroid = dense.mean(axis=0)
            sims = dense @ centroid / (float(np.linalg.norm(centroid)) or 1.0)
        order = np.argsort(-centroid)[:top_terms]
        terms = tuple(v.term(str(names[cols[j]])) for j in order if centroid[j] > 0)
        lead = max(
            range(len(members)),
            key=lambda k: (round(float(sims[k]), 6), importance[members[k]], -tiers[members[k]]),
        )
        label = topic_label(
            titles[members[lead]], [entities[i] for i in members], [texts[i] for i in members]
        )
        out.append(Topic(tuple(members), members[lead], terms, label))
    return out
