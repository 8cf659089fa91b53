"""The pieces of a query sample's draw that the in-process and the distributed sampler share.

:mod:`curation.sample.sampling` draws from a log collapsed in this process and
:mod:`curation.sample.distributed` from one spread over a Dask cluster; both classify a query's
shape, order a stratum's queries by their seeded draw keys, seed each stratum's generator from its
label, and report the same facts of the pool, all from here, so neither imports the other's
private parts.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

import numpy as np

# --------------------------------------------------------------------------------------------
# Query shape


_WH = r"what|how|why|when|where|who|whom|whose|which"
_AUX = r"is|are|was|were|do|does|did|can|could|should|would|will|shall|may|might|must|has|have|had"
_SUBJECT = (r"i|you|we|they|he|she|it|there|the|a|an|my|your|our|their|his|her|its|this|that|these|those|"
            r"someone|anyone|anybody|people")
_QUESTION_START = rf"^(?:(?:{_WH})\b|(?:{_AUX})\s+(?:{_SUBJECT})\b)"
_QUESTION_END = r"\?\s*$"
QUESTION_PATTERN = rf"{_QUESTION_START}|{_QUESTION_END}"
"""A query is a ``question`` when it starts with a wh-word, or with an auxiliary verb followed by
a subject ("can i", "is the"), or ends with ``?``; otherwise a ``keyword`` query (English
heuristics, applied to the normalised text)."""


def query_shapes(texts: Iterable[str]) -> list[str]:
    """``"question"`` or ``"keyword"`` for each normalised query text.

    >>> query_shapes(["how do i reset my password", "password reset", "can opener", "can i return it"])
    ['question', 'keyword', 'keyword', 'question']
    """
    import pyarrow as pa

    values = texts if isinstance(texts, (pa.Array, pa.ChunkedArray)) else pa.array(list(texts), pa.string())
    return np.where(is_question(values), "question", "keyword").tolist()


def is_question(texts) -> np.ndarray:
    """Whether each text (a pyarrow string array) matches :data:`QUESTION_PATTERN`, as Python's ``re`` says.

    Texts of printable ASCII characters only (most queries) are matched in bulk by pyarrow's RE2:
    there Python's ``\\b`` and ``\\s`` mean what RE2's do (word characters ``[0-9A-Za-z_]``, and
    the only white space is the space, where RE2's ``$`` and Python's agree). The others, with
    any non-ASCII or control character, are matched by Python's ``re`` one by one.
    """
    import re

    import pyarrow as pa
    import pyarrow.compute as pc

    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    texts = texts.cast(pa.string())
    # Printable ASCII: no byte below 0x20 or above 0x7e (below 0x20 wraps round to above 0x5e).
    plain = ~by_bytes(texts, lambda data, offsets: strings_holding(
        offsets, np.flatnonzero((data - np.uint8(0x20)) > np.uint8(0x5e))))
    # The pattern's two alternatives apart (a text matches when either does): the anchored start
    # fails within a few bytes of most texts, and the end needs a "?", which few texts hold.
    out = pc.match_substring_regex(texts, _QUESTION_START).to_numpy(zero_copy_only=False).copy()
    asked = np.flatnonzero(by_bytes(texts, lambda data, offsets: strings_holding(
        offsets, np.flatnonzero(data == ord("?")))))
    if len(asked):
        ends = pc.match_substring_regex(texts.take(pa.array(asked)), _QUESTION_END)
        out[asked] |= ends.to_numpy(zero_copy_only=False)
    others = np.flatnonzero(~plain)
    if len(others):
        pattern = re.compile(QUESTION_PATTERN)
        out[others] = [pattern.search(t) is not None for t in texts.take(pa.array(others)).to_pylist()]
    return out


_BYTES_CHUNK = 1 << 20  # strings read at a time by by_bytes


def by_bytes(texts, test) -> np.ndarray:
    """``test(data, offsets)`` (a bool per string, from :func:`string_bytes`) over a pyarrow
    ``string`` array, :data:`_BYTES_CHUNK` strings at a time, so its temporaries (a byte or more
    per byte of text) stay some MB whatever the array's size."""
    out = np.zeros(len(texts), dtype=bool)
    for start in range(0, len(texts), _BYTES_CHUNK):
        part = texts.slice(start, _BYTES_CHUNK)
        out[start:start + len(part)] = test(*string_bytes(part))
    return out


def string_bytes(texts) -> tuple[np.ndarray, np.ndarray]:
    """The UTF-8 bytes of a pyarrow ``string`` array (a read-only view, no copy) and the ``n + 1``
    offsets where each string starts and ends among them (from 0)."""
    offsets = np.frombuffer(texts.buffers()[1], dtype=np.int32, count=len(texts) + 1,
                            offset=texts.offset * 4).astype(np.int64)
    buf = texts.buffers()[2]
    data = np.frombuffer(buf, dtype=np.uint8) if buf is not None and len(buf) else np.zeros(0, np.uint8)
    return data[offsets[0]:offsets[-1]], offsets - offsets[0]


def strings_holding(offsets: np.ndarray, positions: np.ndarray) -> np.ndarray:
    """Whether each string (``offsets`` from :func:`string_bytes`) holds any of the byte ``positions``."""
    out = np.zeros(len(offsets) - 1, dtype=bool)
    if len(positions):
        out[np.searchsorted(offsets, positions, side="right") - 1] = True
    return out


# --------------------------------------------------------------------------------------------
# Drawing within a stratum


def stratum_rng(seed: int, label: str) -> np.random.Generator:
    """A generator for one stratum, from the seed and the stratum's label, so adding or removing
    another stratum never changes what this one draws."""
    words = np.frombuffer(hashlib.sha256(label.encode("utf-8")).digest()[:16], dtype="<u4")
    return np.random.default_rng(np.random.SeedSequence([seed, *words.tolist()]))


#: The rules of :func:`draw_keys`, by the name ``--draw-key`` takes; the value is what a sample's
#: stats record (``stats["draw_key"]``), so a sample says which rule ordered its draw. A sample drawn
#: with the same seed under another rule is another (equally valid) sample; ``v1`` reproduces the
#: samples of golden releases before ``v2``.
DRAW_KEY_RULES = {
    "v1": "v1-blake2b",  # the first 8 bytes, big-endian, of the text's BLAKE2b keyed by the seed
    "v2": "v2-splitmix64",  # splitmix64 of the text's 8-byte words, summed, mixed with the seed's keys
}
DEFAULT_DRAW_KEY = "v2"


def check_draw_key(rule: str) -> str:
    """``rule`` if it names a rule of :data:`DRAW_KEY_RULES`, else a ValueError naming them."""
    if rule not in DRAW_KEY_RULES:
        raise ValueError(f"draw_key must be one of {', '.join(DRAW_KEY_RULES)}, got {rule!r}")
    return rule


def draw_keys(seed: int, texts, rule: str = DEFAULT_DRAW_KEY) -> np.ndarray:
    """Each normalised query's draw key for ``seed`` under ``rule`` (:data:`DRAW_KEY_RULES`), as
    unsigned 64-bit integers. ``texts``: Python strings, or a pyarrow string array.

    ``v1``: the first 8 bytes, big-endian, of the query's BLAKE2b hash (:mod:`hashlib`) keyed by
    SHA-256 of ``golden sample draw {seed}``, one hash call per text. ``v2``
    (:func:`text_hashes` keyed by that digest): the same seeded, per-text order computed with numpy over the Arrow
    array's buffers, no Python object per text (a few times faster on millions of queries).

    A stratum's queries are drawn in the order of their keys (ties by text): a seeded random order
    in which a query's place needs no other query, so a log spread over a cluster is drawn without
    gathering its queries in one place (:mod:`curation.sample.distributed`), to the same result."""
    key = hashlib.sha256(f"golden sample draw {int(seed)}".encode("ascii")).digest()
    if check_draw_key(rule) == "v2":
        return text_hashes(texts, key)
    # The keyed hash's state after its key block, copied for each text (a copy is cheaper than keying
    # a new hash: half the work per text), and the digests gathered in one buffer read as big-endian
    # words: the same keys as int.from_bytes of each digest, in half the time (1.2 -> 0.6 s for 1.8M).
    keyed = hashlib.blake2b(digest_size=8, key=key).copy
    digests = bytearray()
    for data in _utf8(texts):
        h = keyed()
        h.update(data)
        digests += h.digest()
    return np.frombuffer(digests, dtype=">u8").astype(np.uint64)


def _utf8(texts):
    """The UTF-8 bytes of each text: a pyarrow string array's by slices of 64k (its buffers read as
    ``bytes``, no ``str`` made), else each Python string encoded."""
    import pyarrow as pa

    if not isinstance(texts, (pa.Array, pa.ChunkedArray)):
        for t in texts:
            yield t.encode("utf-8")
        return
    for start in range(0, len(texts), 1 << 16):
        yield from texts.slice(start, 1 << 16).cast(pa.binary()).to_pylist()


# splitmix64's increment and the multipliers of its finaliser (Steele, Lea & Flood 2014).
_GAMMA, _MIX1, _MIX2 = 0x9E3779B97F4A7C15, 0xBF58476D1CE4E5B9, 0x94D049BB133111EB
_LOW_BYTES = np.array([(1 << (8 * k)) - 1 for k in range(9)], dtype=np.uint64)  # masks of the k lowest bytes
_KEY_CHUNK = 1 << 18  # texts hashed at a time (the words of 262,144 short queries: a few MB of temporaries)


def text_hashes(texts, key: bytes) -> np.ndarray:
    """A 64-bit hash of each text (uint64), keyed by ``key`` (16 bytes or more); the ``v2`` draw
    keys are these hashes keyed by the seed's digest. With ``k0``, ``k1`` the first two
    little-endian 8-byte words of ``key``, a text's UTF-8 bytes are cut into 8-byte little-endian
    words (the last one zero-padded); word ``j`` plus ``k0`` plus ``j`` times splitmix64's gamma
    goes through splitmix64's finaliser, the mixed words are summed modulo 2**64, the sum is xored
    with (the byte length times the gamma plus ``k1``) and mixed again. A plain-Python statement
    of the rule is in the tests (tests/sample/test_distributed.py)."""
    import pyarrow as pa

    k0, k1 = (np.uint64(int.from_bytes(key[i:i + 8], "little")) for i in (0, 8))
    if isinstance(texts, pa.ChunkedArray):
        texts = texts.combine_chunks()
    if not isinstance(texts, pa.Array):
        texts = pa.array(list(texts), pa.string())
    if not pa.types.is_string(texts.type):  # large_string, string_view: the int32 offsets read below
        texts = texts.cast(pa.string())
    if texts.null_count:
        raise ValueError("text_hashes: a text is missing (null)")
    out = np.empty(len(texts), dtype=np.uint64)
    for start in range(0, len(texts), _KEY_CHUNK):
        part = texts.slice(start, _KEY_CHUNK)
        out[start:start + len(part)] = _text_keys(part, k0, k1)
    return out


def _mix(h: np.ndarray) -> np.ndarray:
    """splitmix64's finaliser, in place on uint64 values (a bijection: distinct in, distinct out)."""
    h ^= h >> np.uint64(30)
    h *= np.uint64(_MIX1)
    h ^= h >> np.uint64(27)
    h *= np.uint64(_MIX2)
    h ^= h >> np.uint64(31)
    return h


def _text_keys(texts, k0: np.uint64, k1: np.uint64) -> np.ndarray:
    """:func:`text_hashes` of one pyarrow string array (no nulls)."""
    n = len(texts)
    raw, off = string_bytes(texts)
    lengths = off[1:] - off[:-1]
    size = len(raw)
    padded = np.zeros(size + 8, dtype=np.uint8)  # 8 bytes past the end, so every word can be read
    padded[:size] = raw
    nwords = (lengths + 7) // 8
    total = int(nwords.sum())
    sums = np.zeros(n, dtype=np.uint64)
    if total:
        first = np.cumsum(nwords) - nwords  # where each text's words begin among all words
        j = np.arange(total, dtype=np.int64) - np.repeat(first, nwords)  # each word's number within its text
        at = np.repeat(off[:-1], nwords) + 8 * j
        # The 8 bytes at each word's start, gathered through an unaligned, byte-strided uint64 view.
        w = np.ndarray(shape=(size + 1,), dtype="<u8", buffer=padded, strides=(1,))[at]
        del at
        full = nwords > 0
        last = (first + nwords - 1)[full]  # only a text's last word runs past its end: its tail zeroed
        w[last] &= _LOW_BYTES[lengths[full] - 8 * (nwords[full] - 1)]
        w += k0
        w += j.view(np.uint64) * np.uint64(_GAMMA)
        del j
        _mix(w)
        sums[full] = np.add.reduceat(w, first[full])
    sums ^= lengths.astype(np.uint64) * np.uint64(_GAMMA) + k1
    return _mix(sums)


def certain_units(top: Sequence[int], k: int, total: int) -> tuple[int, int]:
    """How many of a stratum's largest queries a draw of ``k`` takes with certainty, and the traffic
    left to the others: ``top`` holds the ``k`` largest traffics, descending (ties by text), and
    ``total`` the stratum's traffic. A query is certain when ``k' * t_i >= T'`` over the queries
    not yet taken for certain (see :func:`draw_stratum`)."""
    certain = 0
    while certain < k and int(top[certain]) * (k - certain) >= total:
        total -= int(top[certain])
        certain += 1
    return certain, total


def head_units(top: Sequence[int], k: int, total: int) -> tuple[int, int]:
    """How many of a stratum's largest queries a uniform draw of ``k`` takes with certainty (its
    take-all head), and the traffic left to the others: ``top`` holds the ``k`` largest traffics,
    descending (ties by text), and ``total`` the stratum's traffic. A query is certain when its
    traffic is at least half of what one of the remaining draws stands for, ``2 k' t_i >= T'`` over
    the queries not yet taken for certain, while at least two draws are left to the others (so the
    rest of the stratum still has a variance). The head is a take-all (self-representing) stratum and
    the tail is drawn with equal probabilities (Hidiroglou, "The construction of a self-representing
    stratum of large units in survey design", *The American Statistician* 40, 1986)."""
    certain = 0
    while certain < k - 2 and 2 * int(top[certain]) * (k - certain) >= total:
        total -= int(top[certain])
        certain += 1
    return certain, total


def traffic_counts(traffic) -> dict[int, int]:
    """A stratum's distinct traffic values and how many queries have each (few: a log's traffic
    takes far fewer values than it has queries), which :func:`traffic_moments` reads."""
    values, counts = np.unique(np.asarray(traffic, dtype=np.int64), return_counts=True)
    return dict(zip(values.tolist(), counts.tolist()))


def traffic_moments(counts: dict[int, int]) -> tuple[int, float]:
    """From :func:`traffic_counts` (or several merged): the stratum's sum of squared traffic (an exact
    integer) and its sum of ``t ln t`` (``math.fsum``: rounded once, whatever the order)."""
    square = sum(t * t * c for t, c in counts.items())
    return square, math.fsum(c * (t * math.log(t)) for t, c in counts.items() if t > 0)


def systematic_points(m: int, total: int, rng: np.random.Generator) -> np.ndarray:
    """The ``m`` points of a systematic draw over a cumulated traffic of ``total``: one random start
    in the first interval of ``total / m``, then every ``total / m``."""
    return (rng.random() + np.arange(m)) * (total / m)


@dataclass(frozen=True)
class PoolFacts:
    """What :func:`sample_queries` needs to know of the queries it samples from (see :class:`LogPool`)."""

    distinct: int  # distinct queries of the log
    logged_traffic: int  # their searches
    excluded: int  # logged queries in the --exclude set
    excluded_traffic: int
    hand_in_log: int  # hand-written queries (not excluded) that occur in the log
    hand_found: dict  # hand-written text -> (traffic, users) of the ones in the log (users None without)
    size: int  # queries sampled from: not excluded, not hand-written
    traffic: int  # their searches
    mass: float | None  # their user mass (math.fsum: the exact sum, rounded once); None without users
    strata: list  # (stratum key: tuple of values as strings, distinct, traffic, user mass or None), by key


@dataclass(frozen=True)
class Drawn:
    """The queries drawn in one stratum: parallel arrays, in any order."""

    texts: np.ndarray
    traffic: np.ndarray  # int64
    users: np.ndarray | None  # int64; None without a user column
    mass: np.ndarray | None  # user mass; None without a user column
    inclusion: np.ndarray
    moments: tuple | None = None  # uniform draws: the stratum's (sum of t^2, sum of t ln t); else None


def stratum_key(k) -> tuple[str, ...]:
    """A stratum's key as a tuple of strings (a single column's value made a 1-tuple)."""
    return tuple(str(v) for v in (k if isinstance(k, tuple) else (k,)))
