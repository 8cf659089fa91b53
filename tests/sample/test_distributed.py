"""The Dask collapse's user masses, step by step without a cluster, against one process's rule."""

from __future__ import annotations

import random

import numpy as np
import pandas as pd

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
