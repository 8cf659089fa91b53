"""The Dask collapse's user masses, step by step without a cluster, against one process's rule."""

from __future__ import annotations

import random

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from curation.sample.distributed import _split, reduce_bucket, text_masses, user_shares


def _reference(pairs: pd.DataFrame) -> dict[str, float]:
    """One process's rule: per user 1 / its distinct queries; per query the shares summed in
    ascending order (np.bincount over a (query, share) lexsort), over the number of users."""
    q_codes, texts = pd.factorize(pairs["text"])
    u_codes, users = pd.factorize(pairs["user"])
    per_user = np.bincount(u_codes)
    share = 1.0 / per_user[u_codes]
    order = np.lexsort((share, q_codes))
    mass = np.bincount(q_codes[order], weights=share[order], minlength=len(texts)) / len(users)
    return dict(zip(texts, mass.tolist()))


def test_user_masses_by_two_shuffles_equal_one_process_to_the_bit():
    rng = random.Random(3)
    rows = [(f"q{int(rng.paretovariate(0.8)) % 200}", f"u{rng.randint(0, 150)}") for _ in range(4000)]
    pairs = pd.DataFrame(rows, columns=["text", "user"]).drop_duplicates(ignore_index=True)
    expected = _reference(pairs)
    for n in (1, 3, 7):
        # Pieces as the map step sends them: pairs cut by text; here two pieces per bucket, with repeats.
        first, second = (pairs.sample(frac=0.7, random_state=s) for s in (1, 2))
        halves = [first.reset_index(drop=True),
                  pd.concat([second, pairs[~pairs.index.isin(first.index)]], ignore_index=True)]
        cut = [_split(h, "text", n) for h in halves]
        traffic = pd.DataFrame({"text": pairs["text"].unique(), "stratum": "", "traffic": 1})
        t_cut = _split(traffic, "text", n)
        raw = _split(pd.DataFrame({"raw": pairs["text"].unique()}), "raw", n)
        reduced = [reduce_bucket([(t_cut[b], c[b], raw[b]) for c in cut], strata=(), has_users=True, n_buckets=n)
                   for b in range(n)]
        shared = [user_shares([r[2][u] for r in reduced], n_buckets=n) for u in range(n)]
        users = sum(s[0] for s in shared)
        masses = pd.concat([text_masses([s[1][t] for s in shared]) for t in range(n)], ignore_index=True)
        got = {t: m / users for t, m in zip(masses["text"], masses["mass"])}
        assert users == pairs["user"].nunique()
        assert got == expected  # to the bit


def test_exact_units_round_once_as_fsum():
    """Per-bucket exact sums added on the driver round as one process's math.fsum of all the values."""
    import math

    from curation.sample.distributed import exact_units, units_to_float

    rng = np.random.default_rng(5)
    for trial in range(40):
        n = int(rng.integers(1, 3000))
        values = rng.random(n) ** rng.integers(1, 60) * 10.0 ** rng.integers(-300, 3)
        if trial % 5 == 0:  # below the normal floats, zeros and exact ties
            values[: n // 3] = 5e-324 * rng.integers(0, 1 << 40, size=n // 3)
            values[n // 3: n // 2] = 0.0
        cuts = np.sort(rng.integers(0, n + 1, size=int(rng.integers(0, 6))))
        units = sum(exact_units(part) for part in np.split(values, cuts))
        assert units_to_float(units) == math.fsum(values.tolist())
    assert exact_units(np.array([0.1, 0.2, 0.3])) == sum(exact_units(np.array([v])) for v in (0.1, 0.2, 0.3))
    assert units_to_float(exact_units(np.array([1e16, 1.0, -0.0, 1.0]))) == 1e16 + 2.0


def test_key_ranges_keep_the_key_order():
    from curation.sample.distributed import key_ranges
    from curation.sample.draw import draw_keys

    keys = draw_keys(3, [f"query {i}" for i in range(5000)])
    for n in (1, 2, 7, 64):
        b = key_ranges(keys, n)
        assert b.min() >= 0 and b.max() < n
        order = np.argsort(keys)
        assert (np.diff(b[order]) >= 0).all()  # bucket after bucket is key order
    assert key_ranges(np.array([0, 2**64 - 1], dtype=np.uint64), 5).tolist() == [0, 4]


@pytest.mark.parametrize("rule", ["v1", "v2"])
def test_draws_in_key_order_have_the_stated_inclusion_probabilities(rule):
    """Monte Carlo over seeds: the order-free rule (draw_keys order, one random start) keeps pi_i,
    under either rule of the keys."""
    from curation.sample.draw import draw_keys, stratum_rng
    from curation.sample.sampling import draw_stratum

    texts = [f"q{i}" for i in range(8)]
    t = np.array([60, 20, 10, 10, 5, 5, 4, 1])
    k = 3
    # 60 * 3 >= 115 -> certain; then k' = 2 over T' = 55: pi = 2 t / 55 for the rest.
    expected = np.r_[1.0, 2 * t[1:] / 55]
    runs = 3000
    hits, uniform_hits = np.zeros(len(t)), np.zeros(len(t))
    for seed in range(runs):
        keys = draw_keys(seed, texts, rule)
        idx, probs = draw_stratum(t, k, weighting="traffic", rng=stratum_rng(seed, "(all)"), keys=keys)
        assert np.allclose(probs, expected[idx])
        hits[idx] += 1
        idx, _ = draw_stratum(t, k, weighting="uniform", rng=stratum_rng(seed, "(all)"), keys=keys, head="drawn")
        uniform_hits[idx] += 1
    se = np.sqrt(expected * (1 - expected) / runs)
    assert np.all(np.abs(hits / runs - expected) <= 4 * se + 1e-9)
    assert np.all(np.abs(uniform_hits / runs - k / 8) <= 4 * np.sqrt((k / 8) * (1 - k / 8) / runs))


@pytest.mark.parametrize("rule", ["v1", "v2"])
def test_draw_keys_are_seeded_and_per_text(rule):
    from curation.sample.draw import draw_keys

    a = draw_keys(1, ["weather", "news", "café"], rule)
    assert a.dtype == np.uint64 and len(set(a.tolist())) == 3
    assert draw_keys(1, ["café"], rule).tolist() == a[2:].tolist()  # a text's key needs no other text
    assert draw_keys(2, ["weather", "news", "café"], rule).tolist() != a.tolist()
    assert draw_keys(1, ["weather", "news", "café"], "v2" if rule == "v1" else "v1").tolist() != a.tolist()


def _key_v1(seed: int, text: str) -> int:
    """A v1 draw key computed from the rule the docs state: BLAKE2b keyed by SHA-256 of the seed's phrase."""
    import hashlib

    key = hashlib.sha256(f"golden sample draw {seed}".encode()).digest()
    return int.from_bytes(hashlib.blake2b(text.encode("utf-8"), digest_size=8, key=key).digest(), "big")


def _key_v2(seed: int, text: str) -> int:
    """A v2 draw key computed in plain Python from the rule the docs state, to pin the numpy version."""
    import hashlib

    mask = (1 << 64) - 1

    def mix(h):
        h ^= h >> 30
        h = h * 0xBF58476D1CE4E5B9 & mask
        h ^= h >> 27
        h = h * 0x94D049BB133111EB & mask
        return h ^ h >> 31

    digest = hashlib.sha256(f"golden sample draw {seed}".encode()).digest()
    k0, k1 = int.from_bytes(digest[:8], "little"), int.from_bytes(digest[8:16], "little")
    data = text.encode("utf-8")
    total = 0
    for j in range(0, len(data), 8):
        word = int.from_bytes(data[j:j + 8], "little")
        total = total + mix((word + k0 + (j // 8) * 0x9E3779B97F4A7C15) & mask) & mask
    return mix(total ^ ((len(data) * 0x9E3779B97F4A7C15 + k1) & mask))


_KEY_TEXTS = ["", "a", "weather", "exactly8", "nine char", "café au lait", "x" * 200, "日本語の質問",
              "a b c d e f g h i", "sixteen bytes!!!", "\x00nul inside"]


@pytest.mark.parametrize("rule,reference", [("v1", _key_v1), ("v2", _key_v2)])
def test_draw_keys_follow_the_stated_rule_for_any_array(rule, reference):
    import pyarrow as pa

    from curation.sample.draw import draw_keys

    for seed in (0, 11, 2**40):
        expected = [reference(seed, t) for t in _KEY_TEXTS]
        assert draw_keys(seed, _KEY_TEXTS, rule).tolist() == expected
    arr = pa.array(["pad", *_KEY_TEXTS, "tail"])
    assert draw_keys(seed, arr.slice(1, len(_KEY_TEXTS)), rule).tolist() == expected  # an offset into the buffers
    chunked = pa.chunked_array([arr.slice(1, 3), arr.slice(4, len(_KEY_TEXTS) - 3)])
    assert draw_keys(seed, chunked, rule).tolist() == expected
    assert draw_keys(seed, pa.array(_KEY_TEXTS, pa.large_string()), rule).tolist() == expected
    assert draw_keys(seed, [], rule).tolist() == []


@settings(max_examples=60, deadline=None)
@given(st.lists(st.text(max_size=40), max_size=30), st.integers(0, 2**32))
def test_v2_draw_keys_equal_the_plain_python_rule(texts, seed):
    from curation.sample.draw import draw_keys

    assert draw_keys(seed, texts, "v2").tolist() == [_key_v2(seed, t) for t in texts]


def test_draw_key_rule_is_checked():
    from curation.sample.draw import draw_keys

    with pytest.raises(ValueError, match="draw_key must be one of v1, v2"):
        draw_keys(1, ["a"], "v3")
