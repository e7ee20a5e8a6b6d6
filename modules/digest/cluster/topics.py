"""TF-IDF features, DBSCAN (cosine, eps 0.4, min_samples 2) or agglomerative (k topics, Ward), labels, leads.

Features are step 5's: title ×2 + the first 200 words, lowercased, stop words removed, Porter-stemmed,
with the window itself as the IDF corpus. Labels show the most common surface word of each stem.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from scipy.sparse import csr_matrix
from sklearn import config_context
from sklearn.cluster import DBSCAN, AgglomerativeClustering
from sklearn.decomposition import TruncatedSVD
from sklearn.feature_extraction.text import TfidfVectorizer

from modules.digest.dedup.entities import most_frequent
from modules.digest.text import content_words, stem

EPS = 0.4
MIN_SAMPLES = 2
WORKING_MEMORY_MB = (
    128  # sklearn computes distances in chunks of this size (its default, 1 GiB, doubled our peak)
)
WARD_DIMENSIONS = 100  # Ward needs dense vectors: reduce the sparse TF-IDF with truncated SVD first


@dataclass
class Vectors:
    matrix: csr_matrix
    vectorizer: TfidfVectorizer
    surface: dict[str, str] = field(default_factory=dict)  # stem → the first word it came from

    def term(self, stem_: str) -> str:
        return self.surface.get(stem_, stem_)


def vectorize(documents: Sequence[str]) -> Vectors:
    """TF-IDF over `documents`: the digest window is the IDF corpus."""
    surface: dict[str, str] = {}
    stems: dict[str, str] = {}  # word → stem, for this window (cheaper than a global LRU per token)

    def analyze(text: str) -> list[str]:
        out = []
        for w in content_words(text):
            s = stems.get(w)
            if s is None:
                s = stems[w] = stem(w)
                surface.setdefault(s, w)
            out.append(s)
        return out

    vectorizer = TfidfVectorizer(analyzer=analyze, sublinear_tf=True, dtype=np.float32)
    matrix = vectorizer.fit_transform(list(documents)) if documents else csr_matrix((0, 0))
    return Vectors(matrix=matrix, vectorizer=vectorizer, surface=surface)


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
    terms: tuple[str, ...]  # top centroid terms (surface words), best first
    entity: str | None

    @property
    def label(self) -> str:
        terms = ", ".join(self.terms[:3])
        return f"{_title_case(self.entity)}: {terms}" if self.entity else terms.title()


def _title_case(entity: str) -> str:
    return " ".join(
        w.upper() if len(w) <= 3 and w.isalpha() and w not in ("of", "de", "and", "la") else w.title()
        for w in entity.split()
    )


def build(
    v: Vectors,
    labels: Sequence[int],
    *,
    importance: Sequence[float],
    tiers: Sequence[int],
    entities: Sequence[Sequence[str]],
    top_terms: int = 10,
) -> list[Topic]:
    """One Topic per cluster id: centroid terms, the most frequent entity, and the lead article
    (closest to the centroid; ties → higher importance, then the better authority tier)."""
    groups: dict[int, list[int]] = {}
    for i, label in enumerate(labels):
        groups.setdefault(label, []).append(i)
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
        entity = most_frequent([list(entities[i]) for i in members])
        out.append(Topic(tuple(members), members[lead], terms, entity))
    return out
