"""The query index: the queries' n-grams as integer-keyed lookup tables, built once and shipped to
every worker, with the fewest shared n-grams a chunk needs to be a candidate for each query."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pyarrow as pa

from curation.formats.normalize import normalize_text
from curation.leak.ngrams import ngram_set

_MASK64 = (1 << 64) - 1
_POSITIONAL_LIMIT = 2**62  # keys below this are exact positional numbers, else 64-bit hashes
_PREFIX_TABLE_LIMIT = 16 << 20  # entries (int32) of the word-by-word tables, in all
HASH_MUL = 0x9E3779B97F4A7C15  # odd 64-bit multiplier (golden ratio), for keys that do not fit


class QueryIndex:
    """The queries' n-grams as lookup tables, small enough to ship to every worker.

    ``grams`` lists the distinct query n-grams (``g`` = position); ``q_ptr``/``q_list`` give the
    queries holding each (CSR); ``need[q]`` is the fewest shared n-grams a chunk must hold to be
    a candidate for query ``q``. Keys: for word n-grams, the words' ids in ``vocab`` combined
    positionally (exact) or by a 64-bit multiplicative hash when ``len(vocab) ** n`` does not fit
    (collisions checked absent among the query n-grams; elsewhere they can only add candidates);
    for character n-grams of ASCII text, the bytes packed into an integer (n <= 8) or hashed.
    """

    def __init__(self, queries, *, spec, modes, threshold, skip=frozenset(), count_only=False):
        self.spec = spec
        self.modes = tuple(modes)
        self.threshold = threshold
        self.skip = frozenset(skip)
        self.count_only = count_only
        self.qids = [q for q, _ in queries]
        self.texts = [t for _, t in queries]
        self.norms = [normalize_text(t) for t in self.texts]
        qsets = [ngram_set(n, spec) - self.skip for n in self.norms]
        self.sizes = np.array([len(s) for s in qsets], dtype=np.int64)
        grams: dict = {}
        pairs: list[tuple[int, int]] = []
        for qi, s in enumerate(qsets):
            for g in s:
                gi = grams.setdefault(g, len(grams))
                pairs.append((gi, qi))
        self.grams = list(grams)
        self.gram_ids = grams
        self.G = len(self.grams)
        pairs.sort()
        counts = np.bincount([g for g, _ in pairs], minlength=self.G) if pairs else np.zeros(self.G, np.int64)
        self.q_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        self.q_list = np.array([q for _, q in pairs], dtype=np.int64)
        self.need = np.array([_needed(int(s), threshold, self.modes) for s in self.sizes], dtype=np.int64)
        # Queries with no n-gram can still equal a whole (short) chunk: exact mode checks those.
        self.short_exact: dict[str, list[int]] = {}
        if "exact" in self.modes and not count_only:
            for qi, (norm, size) in enumerate(zip(self.norms, self.sizes)):
                if size == 0 and norm and not ngram_set(norm, spec):
                    self.short_exact.setdefault(norm, []).append(qi)
        self._build_keys()

    def vocab_array(self) -> pa.Array:
        cached = self.__dict__.get("_vocab_array")
        if cached is None:
            cached = self.__dict__["_vocab_array"] = arrow_strings(self.vocab)
        return cached

    def prefix_tables(self) -> list[np.ndarray] | None:
        """For word n-grams (n >= 2), one table a word after the first: ``tables[j-1][p * V + w]``
        is the prefix of j+1 words that prefix ``p`` of j words (the first word's id for j = 1)
        followed by word ``w`` starts among the query n-grams, or -1; the last table gives the
        n-gram's number ``g``. None when the tables would be too large (the keys are used then).
        Built once in each process that scans (not shipped)."""
        if "_prefix_tables" in self.__dict__:
            return self.__dict__["_prefix_tables"]
        tables = None
        n, V = self.spec.n, len(self.vocab)
        if self.spec.unit == "word" and n >= 2 and self.G:
            words = np.array([[self.vocab_ids[w] for w in g] for g in self.grams], dtype=np.int64)
            state, states, tables = words[:, 0], V, []
            for j in range(1, n):
                cell = state * V + words[:, j]
                if j == n - 1:
                    nxt, count = np.arange(self.G, dtype=np.int64), self.G
                else:
                    cells, nxt = np.unique(cell, return_inverse=True)
                    count = len(cells)
                if sum(len(t) for t in tables) + states * V > _PREFIX_TABLE_LIMIT:
                    tables = None
                    break
                table = np.full(states * V, -1, dtype=np.int32)
                table[cell] = nxt
                tables.append(table)
                state, states = nxt, count
        self.__dict__["_prefix_tables"] = tables
        return tables

    def __getstate__(self):
        state = dict(self.__dict__)
        state.pop("_prefix_tables", None)
        state.pop("_vocab_array", None)
        state.pop("_qset_cache", None)
        return state

    # keys -------------------------------------------------------------------------------
    def _build_keys(self):
        n = self.spec.n
        if self.spec.unit == "word":
            vocab = sorted({w for g in self.grams for w in g})
            self.vocab = vocab
            self.vocab_ids = {w: i for i, w in enumerate(vocab)}
            V = max(len(vocab), 1)
            self.positional = V**n < _POSITIONAL_LIMIT
            self.base = V
            keys = [self._word_key([self.vocab_ids[w] for w in g]) for g in self.grams]
            key_gram = {}
        else:
            self.vocab, self.vocab_ids = [], {}
            self.positional = 256**n < _POSITIONAL_LIMIT  # n <= 7 bytes
            keys, key_gram = [], {}
            for gi, g in enumerate(self.grams):
                raw = g.encode("utf-8")
                if len(raw) != n:  # non-ASCII n-gram: never in an ASCII chunk, looked up in Python
                    continue
                keys.append(self._char_key(raw))
                key_gram[len(keys) - 1] = gi
        keys = np.array(keys, dtype=np.uint64)
        gram_of = (
            np.arange(len(keys), dtype=np.int64)
            if self.spec.unit == "word"
            else np.array([key_gram[i] for i in range(len(keys))], dtype=np.int64)
        )
        order = np.argsort(keys, kind="stable")
        self.keys = keys[order]
        self.key_gram = gram_of[order]
        if len(self.keys) > 1 and np.any(self.keys[1:] == self.keys[:-1]):
            raise RuntimeError("hash collision among the queries' n-grams; use a shorter n")  # pragma: no cover

    def _word_key(self, ids: Sequence[int]) -> int:
        key = 0
        for i in ids:
            key = key * self.base + i if self.positional else ((key ^ (i + 1)) * HASH_MUL) & _MASK64
        return key

    def _char_key(self, raw: bytes) -> int:
        key = 0
        for b in raw:
            key = (key << 8) | b if self.positional else ((key ^ (b + 1)) * HASH_MUL) & _MASK64
        return key


def _needed(size: int, threshold: float, modes: Sequence[str]) -> int:
    """Fewest shared n-grams for a candidate: the least k with k / size >= threshold (as floats,
    exactly as the verified score is compared), or ``size`` when only ``exact`` is asked."""
    if size == 0:
        return 1 << 62  # nothing to share: never a candidate through n-grams
    if not any(m in ("jaccard", "containment") for m in modes):
        return size
    k = max(0, math.floor(threshold * size) - 1)
    while k < size and k / size < threshold:
        k += 1
    return max(k, 1)


def arrow_strings(values: list[str], type_=None) -> pa.Array:
    """A list of strings as an arrow (large) string array."""
    raw = [v.encode("utf-8") for v in values]
    offsets = np.zeros(len(raw) + 1, dtype=np.int64)
    np.cumsum([len(b) for b in raw], out=offsets[1:])
    arr = pa.LargeStringArray.from_buffers(len(raw), pa.py_buffer(offsets), pa.py_buffer(b"".join(raw)))
    return arr if type_ is None else arr.cast(type_)
