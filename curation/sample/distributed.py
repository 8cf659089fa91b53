"""Sampling a search log on a Dask cluster (``golden sample queries --dask``), to the same file as one process.

The log's files are the map step's pieces: each piece is read and collapsed by the single-process
code (:func:`curation.sample.logs.collapse_piece`: the same readers, checks, normalisation and
errors naming ``file:line``), giving per (normalised query, stratum) its searches, and the
distinct (normalised query, user) and raw query strings. Each piece's rows are then cut into
buckets by the query's draw key (:func:`curation.sample.draw.draw_keys`, a seeded hash of the
normalised text, the same in every process): bucket ``b`` takes the ``b``-th of ``n`` equal
ranges of keys, so every row of one query lands in one bucket whichever file it came from, and
the buckets in turn hold the queries in the order the draw goes through them. One reduce task
per bucket merges its rows from all pieces and decides each query exactly as one process does
(:func:`curation.sample.logs.resolve_queries`); the user masses take a second shuffle, by user
and back (:func:`user_shares`, :func:`text_masses`).

The queries then stay on the workers (:class:`DaskPool`, the cluster's
:class:`curation.sample.sampling.LogPool`). Each bucket drops the excluded and hand-written
queries and sends the driver its per-stratum totals (queries, traffic, user mass as an exact
integer, :func:`exact_units`); the driver allocates (:func:`curation.sample.sampling.allocate`)
and draws with the single-process rule (:func:`curation.sample.sampling.draw_stratum`) spread
over the buckets: for a traffic-weighted stratum of ``k`` draws each bucket sends its ``k``
heaviest queries, from which the driver finds the certainty units; the systematic points of the
rest, whose cumulated traffic runs through the buckets in key order, go to the bucket whose
range of cumulated traffic holds them (:func:`bucket_draw`); a uniform draw takes the ``k``
first queries in key order, bucket after bucket. So the same input and seed give the same file,
byte for byte, and the driver holds per-stratum and per-bucket totals and about ``k`` queries per
stratum and bucket: bounded by the strata and the sample size, never by the log's queries.

``ADDRESS`` is a scheduler (``tcp://host:8786``) or ``local`` / ``local:N`` for a local cluster of
N worker processes (default: one per core), made for the command and closed after it.

One module: the collapse's shuffles and the draw's rounds share one bucketing
(ranges of draw keys), which is only right when both are read together.
"""

from __future__ import annotations

import operator
import os
from collections.abc import Sequence

import numpy as np
import pandas as pd

from curation.sample.draw import DEFAULT_DRAW_KEY


def parse_address(address: str) -> tuple[str, int | None] | None:
    """``local`` / ``local:N`` -> ("local", N or None); a scheduler address -> None."""
    if address == "local" or address.startswith("local:"):
        _, _, n = address.partition(":")
        if n and (not n.isdigit() or int(n) < 1):
            raise ValueError(f"dask: {address!r}: write local or local:N with N a number of workers >= 1")
        return "local", int(n) if n else None
    return None


class cluster_client:  # noqa: N801 - used as a context manager, named like one
    """A ``distributed.Client`` for ``address`` (see the module docstring), closed on exit."""

    def __init__(self, address):
        self.address = address
        self.client = self.cluster = None

    def __enter__(self):
        try:
            from distributed import Client, LocalCluster
        except ImportError:
            raise ValueError("dask: sampling on Dask needs dask.distributed: pip install 'golden[dask]'") from None
        if not isinstance(self.address, str):  # a Client already
            return self.address
        local = parse_address(self.address)
        if local is not None:
            n = local[1] or (os.cpu_count() or 1)
            self.cluster = LocalCluster(n_workers=n, threads_per_worker=1, processes=True, dashboard_address=None)
            self.client = Client(self.cluster)
        else:
            try:
                self.client = Client(self.address, timeout="20s")
            except (OSError, TimeoutError) as exc:
                raise ValueError(f"dask: cannot reach the scheduler at {self.address!r} ({exc})") from None
        return self.client

    def __exit__(self, *exc):
        if self.client is not None:
            self.client.close()
        if self.cluster is not None:
            self.cluster.close()


def _buckets_of(texts: pd.Series, n: int, seed: int | None = None, draw_key: str = DEFAULT_DRAW_KEY) -> np.ndarray:
    """The bucket of each value: with ``seed``, the range of its draw key (:func:`draw_keys`, rule ``draw_key``) it
    falls in, n equal ranges in key order, so bucket after bucket holds the queries in the order
    the draw goes through them; else a keyed hash (``pandas.util.hash_array``). Both are the same
    in every process."""
    if len(texts) == 0:
        return np.zeros(0, dtype=np.int64)
    if seed is None:
        return (pd.util.hash_array(texts.to_numpy(dtype=object)) % np.uint64(n)).astype(np.int64)
    from curation.sample.draw import draw_keys

    codes, uniques = pd.factorize(texts)  # each distinct text hashed once
    return key_ranges(draw_keys(seed, uniques.tolist(), draw_key), n)[codes]


def key_ranges(keys: np.ndarray, n: int) -> np.ndarray:
    """The range of ``n`` equal ranges of unsigned 64-bit keys that each key falls in (increasing with the key)."""
    if n == 1:
        return np.zeros(len(keys), dtype=np.int64)
    width = np.uint64((2**64 - 1) // n + 1)  # ceil(2**64 / n)
    return (np.asarray(keys, dtype=np.uint64) // width).astype(np.int64)


def _split(frame: pd.DataFrame, column: str, n: int, seed: int | None = None,
           draw_key: str = DEFAULT_DRAW_KEY) -> list[pd.DataFrame]:
    b = _buckets_of(frame[column], n, seed, draw_key)
    order = np.argsort(b, kind="stable")
    cuts = np.searchsorted(b[order], np.arange(n + 1))
    return [frame.iloc[order[cuts[i]:cuts[i + 1]]].reset_index(drop=True) for i in range(n)]


def map_piece(path: str, *, query_col, count_col, user_col, strata, n_buckets: int, seed: int | None = None,
              draw_key: str = DEFAULT_DRAW_KEY):
    """The map step: one file collapsed, its rows cut into ``n_buckets`` by the normalised text
    (by its draw key's range with ``seed`` and rule ``draw_key``, see :func:`_buckets_of`).

    Returns (counts, [(traffic, pairs, raw) per bucket]): ``counts`` are the piece's rows,
    searches and empty rows; ``traffic`` has text, stratum (the values joined by ``\\x1f``) and
    traffic; ``pairs`` the distinct (text, user) of non-blank users; ``raw`` the distinct raw
    query strings (bucketed by their own hash, for the count of distinct raw strings)."""
    from curation.sample.logs import collapse_piece

    part = collapse_piece(path, query_col=query_col, count_col=count_col, user_col=user_col, strata=strata)
    traffic = _split(part.traffic, "text", n_buckets, seed, draw_key)
    pairs = _split(part.pairs, "text", n_buckets, seed, draw_key) if part.pairs is not None else [None] * n_buckets
    raw = _split(part.raw, "raw", n_buckets)
    return part.counts, list(zip(traffic, pairs, raw))


def reduce_bucket(parts: list, *, strata: Sequence[str], has_users: bool, n_buckets: int = 1):
    """The reduce step: one bucket's rows from every piece -> its distinct queries, decided, and
    (with users) the bucket's distinct (text, user) pairs cut into ``n_buckets`` by the user's
    hash, for :func:`user_shares`."""
    from curation.sample.logs import resolve_queries

    traffic = pd.concat([p[0] for p in parts], ignore_index=True)
    traffic = traffic.groupby(["text", "stratum"], sort=False, as_index=False)["traffic"].sum()
    pairs = None
    if has_users:
        pairs = pd.concat([p[1] for p in parts], ignore_index=True).drop_duplicates(ignore_index=True)
    raw = pd.concat([p[2] for p in parts], ignore_index=True)["raw"].nunique()
    queries, facts = resolve_queries(traffic, pairs, strata=strata)
    by_user = _split(pairs, "user", n_buckets) if pairs is not None else None
    return queries, {**facts, "distinct_raw": int(raw)}, by_user


# A query's user mass (for the user-weighted mean): every user counts once and their distinct
# queries share that unit, so query i gets sum over its users u of 1 / |Q_u|, over the number of
# users. |Q_u| needs all of a user's pairs: a second shuffle, by user, then back by text.


def user_shares(parts: list, *, n_buckets: int, seed: int | None = None, draw_key: str = DEFAULT_DRAW_KEY):
    """One user bucket's pairs from every text bucket -> (its number of users, [(text, share) per
    text bucket]), share = 1 / the user's number of distinct queries."""
    pairs = pd.concat(parts, ignore_index=True)
    per_user = pairs["user"].map(pairs["user"].value_counts())
    shares = pd.DataFrame({"text": pairs["text"], "share": 1.0 / per_user.to_numpy(dtype=np.float64)})
    return int(pairs["user"].nunique()), _split(shares, "text", n_buckets, seed, draw_key)


def text_masses(parts: list) -> pd.DataFrame:
    """One text bucket's shares from every user bucket -> (text, summed share), each query's shares
    added in ascending order one after the other, as one process adds them (np.bincount), so the
    sums are the same to the bit."""
    shares = pd.concat(parts, ignore_index=True)
    codes, texts = pd.factorize(shares["text"])
    share = shares["share"].to_numpy(dtype=np.float64)
    order = np.lexsort((share, codes))
    return pd.DataFrame({"text": np.asarray(texts, dtype=object),
                         "mass": np.bincount(codes[order], weights=share[order], minlength=len(texts))})


def _collapse(client, paths, *, query_col, count_col, user_col, strata, n: int, seed: int | None,
              draw_key: str = DEFAULT_DRAW_KEY):
    """The collapse's task graph: (per-piece counts, per text bucket (queries, facts), per text
    bucket (text, mass) or None, the number of users or None), futures all, left on the cluster."""
    kw = dict(query_col=query_col, count_col=count_col, user_col=user_col, strata=strata, n_buckets=n, seed=seed,
              draw_key=draw_key)
    mapped = [client.submit(map_piece, p, key=f"golden-sample-map-{i}-{os.getpid()}-{seed}-{draw_key}", **kw)
              for i, p in enumerate(paths)]
    # The first failing file, in the order given, is the error reported (as in one process).
    for fut in mapped:
        if fut.status == "error" or fut.exception() is not None:
            fut.result()
    counts = [client.submit(operator.getitem, m, 0) for m in mapped]
    per_piece = [client.submit(operator.getitem, m, 1) for m in mapped]
    reduced = []
    for b in range(n):
        parts = [client.submit(_bucket, pp, b) for pp in per_piece]
        reduced.append(client.submit(reduce_bucket, parts, strata=strata, has_users=user_col is not None,
                                     n_buckets=n))
    decided = [client.submit(_first_two, r) for r in reduced]
    masses = n_users = None
    if user_col is not None:
        by_user = [client.submit(operator.getitem, r, 2) for r in reduced]
        shared = [client.submit(user_shares, [client.submit(_bucket, bu, u) for bu in by_user], n_buckets=n,
                                seed=seed, draw_key=draw_key) for u in range(n)]
        n_users = client.submit(sum, [client.submit(operator.getitem, s, 0) for s in shared])
        back = [client.submit(operator.getitem, s, 1) for s in shared]
        masses = [client.submit(text_masses, [client.submit(_bucket, bk, t) for bk in back]) for t in range(n)]
    return counts, decided, masses, n_users


def _log_stats(counts: list[dict], facts: list[dict]):
    from curation.sample.logs import LogStats

    return LogStats(rows=sum(c["rows"] for c in counts), searches=sum(c["searches"] for c in counts),
                    distinct_raw=sum(f["distinct_raw"] for f in facts),
                    empty_rows=sum(c["empty_rows"] for c in counts),
                    zero_traffic=sum(f["zero_traffic"] for f in facts),
                    multi_stratum=sum(f["multi_stratum"] for f in facts), moved_searches=sum(f["moved"] for f in facts))


def collapse_log_dask(
    paths: Sequence[str],
    *,
    query_col: str,
    count_col: str | None,
    user_col: str | None,
    strata: Sequence[str],
    dask,
    buckets: int | None = None,
):
    """:func:`curation.sample.logs.collapse_log` with the files read and grouped on a Dask cluster,
    every distinct query gathered on the driver (``golden sample queries --dask`` does not: see
    :class:`DaskPool`). Returns the same :class:`curation.sample.logs.CollapsedLog`."""
    from curation.sample.logs import CollapsedLog, check_log_request

    paths, strata = check_log_request(paths, query_col, count_col, user_col, strata)
    with cluster_client(dask) as client:
        n = buckets or max(1, 2 * len(client.scheduler_info().get("workers", {})))
        counts, decided, masses, n_users = _collapse(client, paths, query_col=query_col, count_col=count_col,
                                                     user_col=user_col, strata=strata, n=n, seed=None)
        counts, results = client.gather(counts), client.gather(decided)
        masses = client.gather(masses) if masses is not None else None
        total = n_users.result() if n_users is not None else 0
    queries = pd.concat([q for q, _ in results], ignore_index=True)
    queries = queries.sort_values("text", kind="stable").reset_index(drop=True)
    mass = None
    if masses is not None:  # as one process: each query's mass over the number of users, 0 without users
        mass = pd.concat(masses, ignore_index=True).set_index("text")["mass"]
        mass = mass.reindex(queries["text"].to_numpy(dtype=object)).fillna(0.0).to_numpy(dtype=np.float64)
        mass = mass / total if total else np.zeros(len(queries))
    stats = _log_stats(counts, [f for _, f in results])
    return CollapsedLog(queries=queries, has_users=user_col is not None, stats=stats, user_mass=mass)


# --------------------------------------------------------------------------------------------
# golden sample queries --dask: the queries stay on the workers, bucket b holding the b-th range of draw
# keys; the driver gathers per-stratum totals, allocates, and asks each bucket for its part of
# each stratum's draw (curation.sample.sampling.draw_stratum, the same rule, spread over buckets).


def exact_units(values: np.ndarray) -> int:
    """The exact sum of finite floats >= 0 as a whole number of 2**-1074 (the smallest float), so
    sums from several processes add up exactly; ``units / 2**1074`` rounds it once, as
    :func:`math.fsum` rounds the same sum in one process."""
    v = np.asarray(values, dtype=np.float64)
    if not len(v):
        return 0
    frac, exp = np.frexp(v)  # v = frac * 2**exp, 0.5 <= frac < 1 (or 0)
    mant = np.ldexp(frac, 53).astype(np.int64)  # exact: 53 bits
    shift = exp.astype(np.int64) + 1021  # v = mant * 2**(shift - 1074)
    low = shift < 0  # below the normal floats: mant has that many trailing zeros, so this is exact
    mant[low] >>= -shift[low]
    shift[low] = 0
    total = 0
    order = np.argsort(shift, kind="stable")
    s, mant = shift[order], mant[order]
    starts = np.flatnonzero(np.r_[True, s[1:] != s[:-1]])
    hi = np.add.reduceat(mant >> 26, starts)  # each < 2**27: sums of up to 2**36 floats fit in int64
    lo = np.add.reduceat(mant & ((1 << 26) - 1), starts)
    for sh, h, lw in zip(s[starts].tolist(), hi.tolist(), lo.tolist()):
        total += ((h << 26) + lw) << sh
    return total


def units_to_float(units: int) -> float:
    return units / (1 << 1074)  # Python's int division rounds correctly (to nearest, ties to even)


def bucket_pool(decided, masses, n_users, excluded, hand, *, dims, shape: bool, seed: int,
                draw_key: str = DEFAULT_DRAW_KEY):
    """One text bucket's queries -> (its pool, summary). The pool (left on the worker): per
    stratum key, the queries not excluded nor hand-written as arrays sorted by (draw key, text).
    The summary (to the driver): the counts of :class:`curation.sample.draw.PoolFacts` and,
    per stratum, (queries, traffic, exact user mass units or None)."""
    from curation.sample.draw import draw_keys, query_shapes, stratum_key

    q, _ = decided
    mass = None
    if masses is not None:
        m = masses.set_index("text")["mass"].reindex(q["text"].to_numpy(dtype=object)).fillna(0.0)
        mass = m.to_numpy(dtype=np.float64) / n_users if n_users else np.zeros(len(q))
    in_hand = q["text"].isin(hand).to_numpy() if hand else np.zeros(len(q), dtype=bool)
    in_excluded = q["text"].isin(excluded).to_numpy() if len(excluded) else np.zeros(len(q), dtype=bool)
    has_users = "users" in q
    found = q.loc[in_hand]
    hand_found = dict(zip(found["text"].tolist(), zip(found["traffic"].tolist(), (
        found["users"].tolist() if has_users else [None] * len(found)))))
    keep = ~(in_hand | in_excluded)
    pool = q.loc[keep].reset_index(drop=True)
    if shape:
        pool = pool.assign(shape=pd.array(query_shapes(pool["text"].tolist()), dtype="string"))
    texts = pool["text"].to_numpy(dtype=object)
    traffic = pool["traffic"].to_numpy(dtype=np.int64)
    users = pool["users"].to_numpy(dtype=np.int64) if has_users else None
    pmass = mass[keep] if mass is not None else None
    keys = draw_keys(seed, texts.tolist(), draw_key)
    groups = pool.groupby(list(dims), sort=False).indices.items() if dims else [((), np.arange(len(pool)))]
    strata, totals = {}, {}
    for k, idx in groups:
        idx = idx[np.lexsort((texts[idx], keys[idx]))]  # the draw's order: key, then text
        skey = stratum_key(k) if dims else ()
        strata[skey] = {"text": texts[idx], "traffic": traffic[idx], "users": None if users is None else users[idx],
                        "mass": None if pmass is None else pmass[idx]}
        totals[skey] = (len(idx), int(traffic[idx].sum()), None if pmass is None else exact_units(pmass[idx]))
    summary = {"distinct": len(q), "logged_traffic": int(q["traffic"].sum()), "excluded": int(in_excluded.sum()),
               "excluded_traffic": int(q.loc[in_excluded, "traffic"].sum()),
               "hand_in_log": int((in_hand & ~in_excluded).sum()), "hand_found": hand_found, "strata": totals}
    return strata, summary


def bucket_top(pool, wants: dict) -> dict:
    """Per stratum key -> k of ``wants``: the bucket's k queries of most traffic (ties by text), as
    (texts, traffic), the candidates for the draw's certainty units."""
    out = {}
    for skey, k in wants.items():
        s = pool.get(skey)
        if s is None:
            continue
        top = np.lexsort((s["text"], -s["traffic"]))[:k]
        out[skey] = (s["text"][top].tolist(), s["traffic"][top].tolist())
    return out


def bucket_traffic_counts(pool, keys) -> dict:
    """Per stratum key of ``keys``: the bucket's distinct traffic values and their counts."""
    from curation.sample.draw import traffic_counts

    return {skey: traffic_counts(pool[skey]["traffic"]) for skey in keys if skey in pool}


def bucket_draw(pool, specs: dict) -> dict:
    """Per stratum key -> spec: the bucket's drawn queries as column arrays plus ``certain``.
    Specs: ("all",) every query; ("first", c, certain texts) the certain ones and the c first of
    the others in key order (uniform draw);
    ("pps", certain texts, offset, points) the certain ones, and for each point the query whose
    cumulated traffic (from ``offset``, over the other queries in key order) first exceeds it."""
    out = {}
    for skey, spec in specs.items():
        s = pool.get(skey)
        if s is None:
            continue
        n = len(s["text"])
        certain = np.zeros(n, dtype=bool)
        if spec[0] == "all":
            take = np.arange(n)
        elif spec[0] == "first":
            _, count, sure = spec
            certain = np.isin(s["text"], np.asarray(sure, dtype=object)) if sure else certain
            rest = np.flatnonzero(~certain)
            take = np.concatenate([np.flatnonzero(certain), rest[:count]])
        else:
            _, sure, offset, points = spec
            certain = np.isin(s["text"], np.asarray(sure, dtype=object)) if sure else certain
            rest = np.flatnonzero(~certain)
            cum = offset + np.cumsum(s["traffic"][rest])
            picks = rest[np.searchsorted(cum, np.asarray(points, dtype=np.float64), side="right")]
            take = np.concatenate([np.flatnonzero(certain), picks])
        out[skey] = {c: (None if v is None else v[take]) for c, v in s.items()} | {"certain": certain[take]}
    return out


class DaskPool:
    """:class:`curation.sample.sampling.LogPool` on a Dask cluster (a context manager, holding the
    client): the same facts and draws, while the distinct queries stay on the workers. The
    driver holds per-stratum, per-bucket totals and the sample's candidates: its memory grows
    with the strata, the buckets and the sample size, not with the log's queries."""

    def __init__(self, log, *, query_col, count_col, user_col, strata, seed: int, dask, buckets: int | None = None,
                 draw_key: str = DEFAULT_DRAW_KEY):
        from curation.sample.draw import check_draw_key
        from curation.sample.logs import check_log_request

        self.paths, self.strata = check_log_request(log, query_col, count_col, user_col, strata)
        self.cols = dict(query_col=query_col, count_col=count_col, user_col=user_col)
        self.seed, self.dask, self.buckets = seed, dask, buckets
        self.draw_key = check_draw_key(draw_key)  # the rule of the keys that order the buckets and the draw
        self.has_users = user_col is not None

    def __enter__(self):
        self._cluster = cluster_client(self.dask)
        self.client = self._cluster.__enter__()
        try:
            self.n = self.buckets or max(1, 2 * len(self.client.scheduler_info().get("workers", {})))
            counts, self._decided, self._masses, self._users = _collapse(
                self.client, self.paths, **self.cols, strata=self.strata, n=self.n, seed=self.seed,
                draw_key=self.draw_key)
            facts = [self.client.submit(operator.getitem, d, 1) for d in self._decided]
            self.stats = _log_stats(self.client.gather(counts), self.client.gather(facts))
        except BaseException:
            self._cluster.__exit__(None, None, None)
            raise
        return self

    def __exit__(self, *exc):
        self.pools = self._decided = self._masses = self._users = None
        self._cluster.__exit__(*exc)

    def select(self, *, excluded, hand, dims, shape):
        from curation.sample.draw import PoolFacts

        c = self.client
        ex = c.scatter(sorted(excluded), broadcast=True) if excluded else []
        masses = self._masses or [None] * self.n
        built = [c.submit(bucket_pool, d, m, self._users, ex, list(hand), dims=tuple(dims), shape=shape,
                          seed=self.seed, draw_key=self.draw_key) for d, m in zip(self._decided, masses)]
        self.pools = [c.submit(operator.getitem, b, 0) for b in built]
        summaries = c.gather([c.submit(operator.getitem, b, 1) for b in built])
        del built
        self._decided = self._masses = None  # the pools hold what the draw needs; the rest can go
        self.per_bucket = [s["strata"] for s in summaries]  # stratum key -> (n, traffic, mass units)
        keys = sorted({k for s in self.per_bucket for k in s})
        self.keys = keys
        strata, mass_units = [], 0
        for key in keys:
            parts = [s[key] for s in self.per_bucket if key in s]
            units = None if not self.has_users else sum(p[2] for p in parts)
            mass_units += units or 0
            strata.append((key, sum(p[0] for p in parts), sum(p[1] for p in parts),
                           None if units is None else units_to_float(units)))
        hand_found = {}
        for s in summaries:
            hand_found.update(s["hand_found"])
        total = lambda name: sum(s[name] for s in summaries)  # noqa: E731 - a short local helper
        return PoolFacts(distinct=total("distinct"), logged_traffic=total("logged_traffic"),
                         excluded=total("excluded"), excluded_traffic=total("excluded_traffic"),
                         hand_in_log=total("hand_in_log"), hand_found=hand_found,
                         size=sum(s[1] for s in strata), traffic=sum(s[2] for s in strata),
                         mass=units_to_float(mass_units) if self.has_users else None, strata=strata)

    def _traffic_counts(self, keys) -> dict:
        """Per stratum key: its distinct traffic values and their counts, merged over the buckets."""
        counts: dict = {}
        for part in self.client.gather([self.client.submit(bucket_traffic_counts, p, keys) for p in self.pools]):
            for key, hist in part.items():
                merged = counts.setdefault(key, {})
                for t, n_t in hist.items():
                    merged[t] = merged.get(t, 0) + n_t
        return counts

    def draw(self, plans, *, weighting: str, seed: int, head: str = "certain"):
        """:meth:`curation.sample.sampling.LogPool.draw`, in two rounds over the buckets: their
        candidates for the certainty units, then their part of each draw."""
        from curation.sample.draw import (
            Drawn,
            certain_units,
            head_units,
            stratum_rng,
            systematic_points,
            traffic_moments,
        )

        c = self.client
        sizes = {self.keys[h]: n for h, n in ((h, sum(b.get(self.keys[h], (0,))[0] for b in self.per_bucket))
                                              for h, _, _ in plans)}
        pps = {self.keys[h]: k for h, _, k in plans
               if (weighting == "traffic" or head == "certain") and k < sizes[self.keys[h]]}
        tops = c.gather([c.submit(bucket_top, p, pps) for p in self.pools]) if pps else [{}] * self.n
        counts = self._traffic_counts([self.keys[h] for h, _, _ in plans]) if weighting == "uniform" else {}
        specs: list[dict] = [{} for _ in range(self.n)]
        rates = {}
        for h, label, k in plans:
            key = self.keys[h]
            n = sizes[key]
            per = [b.get(key, (0, 0, None)) for b in self.per_bucket]
            if k == n:
                for b in range(self.n):
                    specs[b][key] = ("all",)
            elif weighting == "uniform":
                cands = sorted(((-t, text, b) for b in range(self.n) for text, t in zip(*tops[b].get(key, ([], []))))
                               )[:k]
                certain = head_units([-t for t, _, _ in cands], k, sum(p[1] for p in per))[0] if cands else 0
                left = k - certain
                for b in range(self.n):
                    sure = [text for _, text, bb in cands[:certain] if bb == b]
                    specs[b][key] = ("first", min(left, per[b][0] - len(sure)), sure)
                    left -= specs[b][key][1]
                rates[key] = (k - certain, n - certain)
            else:
                cands = sorted(((-t, text, b) for b in range(self.n) for text, t in zip(*tops[b].get(key, ([], []))))
                               )[:k]
                total = sum(p[1] for p in per)
                certain, rest_total = certain_units([-t for t, _, _ in cands], k, total)
                m = k - certain
                points = systematic_points(m, rest_total, stratum_rng(seed, label)) if m else np.zeros(0)
                offset = 0
                for b in range(self.n):
                    sure = [text for _, text, bb in cands[:certain] if bb == b]
                    rest_b = per[b][1] - sum(-t for t, _, bb in cands[:certain] if bb == b)
                    mine = points[(points >= offset) & (points < offset + rest_b)]
                    specs[b][key] = ("pps", sure, offset, mine.tolist())
                    offset += rest_b
                rates[key] = (m, rest_total)
        got = c.gather([c.submit(bucket_draw, p, sp) for p, sp in zip(self.pools, specs)])
        out = []
        for h, _, k in plans:
            key = self.keys[h]
            parts = [g[key] for g in got if key in g]
            col = {name: (None if parts[0][name] is None else np.concatenate([p[name] for p in parts]))
                   for name in parts[0]}
            if len(col["text"]) != k or len(set(col["text"].tolist())) != k:
                raise AssertionError(f"the draw in stratum {self.keys[h]} took {len(col['text'])} queries, not {k}")
            if k == sizes[key] or (weighting == "traffic" and rates[key][0] == 0):
                probs = np.ones(k)
            elif weighting == "uniform":
                m, rest_n = rates[key]
                probs = np.where(col["certain"], 1.0, m / rest_n)
            else:
                m, rest_total = rates[key]
                probs = np.where(col["certain"], 1.0, col["traffic"] * m / rest_total)
            out.append(Drawn(texts=col["text"], traffic=col["traffic"], users=col["users"], mass=col["mass"],
                             inclusion=probs,
                             moments=traffic_moments(counts[key]) if weighting == "uniform" else None))
        return out


def _bucket(per_piece, b):
    return per_piece[b]


def _first_two(result):
    return result[0], result[1]


def dask_map(address, fn, arguments):
    """``fn(*args)`` for each of ``arguments`` on the Dask cluster at ``address`` (see
    :class:`cluster_client`), yielded in the order given, so the first failing call in that order
    is the error raised (``golden sample corpus --dask``)."""
    with cluster_client(address) as client:
        futures = [client.submit(fn, *args, pure=False) for args in arguments]
        for fut in futures:
            yield fut.result()
