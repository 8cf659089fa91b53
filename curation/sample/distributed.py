"""Collapsing a search log on a Dask cluster (``golden sample --dask``), to the same result as one process.

The log's files are the map step's pieces: each piece is read and collapsed by the single-process
code (:func:`curation.sample.logs.collapse_piece`: the same readers, checks, normalisation and
errors naming ``file:line``), giving per (normalised query, stratum) its searches, and the
distinct (normalised query, user) and raw query strings. Each piece's rows are then cut into
buckets by a hash of the normalised text (``pandas.util.hash_array``, the same in every process),
so every row of one query lands in one bucket whichever file it came from. One reduce task per
bucket merges its rows from all pieces and decides each query exactly as one process does
(:func:`curation.sample.logs.resolve_queries`: traffic and users over all its searches, the
stratum where it has most traffic, ties to the stratum whose values sort first). The driver only
concatenates the buckets' distinct queries and sorts them by text: from there, allocation and the
seeded draw are the single-process code itself, so the same input and seed give the same file,
byte for byte.

What the driver holds is the log's distinct queries (as one process holds after collapsing), not
its rows: reading, normalising and grouping the rows, the part that grows with the log, is spread
over the cluster's workers.

``ADDRESS`` is a scheduler (``tcp://host:8786``) or ``local`` / ``local:N`` for a local cluster of
N worker processes (default: one per core), made for the command and closed after it.
"""

from __future__ import annotations

import operator
import os
from collections.abc import Sequence

import numpy as np
import pandas as pd


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


def _buckets_of(texts: pd.Series, n: int) -> np.ndarray:
    """The bucket of each normalised text: a keyed hash that is the same in every process."""
    if len(texts) == 0:
        return np.zeros(0, dtype=np.int64)
    return (pd.util.hash_array(texts.to_numpy(dtype=object)) % np.uint64(n)).astype(np.int64)


def _split(frame: pd.DataFrame, column: str, n: int) -> list[pd.DataFrame]:
    b = _buckets_of(frame[column], n)
    order = np.argsort(b, kind="stable")
    cuts = np.searchsorted(b[order], np.arange(n + 1))
    return [frame.iloc[order[cuts[i]:cuts[i + 1]]].reset_index(drop=True) for i in range(n)]


def map_piece(path: str, *, query_col, count_col, user_col, strata, n_buckets: int):
    """The map step: one file collapsed, its rows cut into ``n_buckets`` by the normalised text's hash.

    Returns (counts, [(traffic, pairs, raw) per bucket]): ``counts`` are the piece's rows,
    searches and empty rows; ``traffic`` has text, stratum (the values joined by ``\\x1f``) and
    traffic; ``pairs`` the distinct (text, user) of non-blank users; ``raw`` the distinct raw
    query strings (bucketed by their own hash, for the count of distinct raw strings)."""
    from curation.sample.logs import collapse_piece

    part = collapse_piece(path, query_col=query_col, count_col=count_col, user_col=user_col, strata=strata)
    traffic = _split(part.traffic, "text", n_buckets)
    pairs = _split(part.pairs, "text", n_buckets) if part.pairs is not None else [None] * n_buckets
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


# A query's user mass (issue 13's user-weighted mean): every user counts once and their distinct
# queries share that unit, so query i gets sum over its users u of 1 / |Q_u|, over the number of
# users. |Q_u| needs all of a user's pairs: a second shuffle, by user, then back by text.


def user_shares(parts: list, *, n_buckets: int):
    """One user bucket's pairs from every text bucket -> (its number of users, [(text, share) per
    text bucket]), share = 1 / the user's number of distinct queries."""
    pairs = pd.concat(parts, ignore_index=True)
    per_user = pairs["user"].map(pairs["user"].value_counts())
    shares = pd.DataFrame({"text": pairs["text"], "share": 1.0 / per_user.to_numpy(dtype=np.float64)})
    return int(pairs["user"].nunique()), _split(shares, "text", n_buckets)


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
    """:func:`curation.sample.logs.collapse_log` with the files read and grouped on a Dask cluster.

    Returns the same :class:`curation.sample.logs.CollapsedLog` (checked byte for byte by the
    tests through ``golden sample``)."""
    from curation.sample.logs import CollapsedLog, LogStats, check_log_request

    paths, strata = check_log_request(paths, query_col, count_col, user_col, strata)
    with cluster_client(dask) as client:
        workers = max(1, len(client.scheduler_info().get("workers", {})))
        n = buckets or max(1, 2 * workers)
        kw = dict(query_col=query_col, count_col=count_col, user_col=user_col, strata=strata, n_buckets=n)
        mapped = [client.submit(map_piece, p, key=f"golden-sample-map-{i}-{os.getpid()}", **kw)
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
        masses = None
        if user_col is not None:
            by_user = [client.submit(operator.getitem, r, 2) for r in reduced]
            shared = [client.submit(user_shares, [client.submit(_bucket, bu, u) for bu in by_user], n_buckets=n)
                      for u in range(n)]
            n_users = client.gather([client.submit(operator.getitem, s, 0) for s in shared])
            back = [client.submit(operator.getitem, s, 1) for s in shared]
            masses = client.gather([client.submit(text_masses, [client.submit(_bucket, bk, t) for bk in back])
                                    for t in range(n)])
        counts = client.gather(counts)
        results = client.gather(decided)
    frames = [q for q, _ in results]
    queries = pd.concat(frames, ignore_index=True) if frames else None
    queries = queries.sort_values("text", kind="stable").reset_index(drop=True)
    facts = {k: sum(f[k] for _, f in results) for k in ("zero_traffic", "multi_stratum", "moved", "distinct_raw")}
    extra = {}
    # CollapsedLog.user_mass (each query's share of a user-weighted mean) comes with issue 13's
    # user weights; where it exists, the masses are the ones one process computes.
    if masses is not None and "user_mass" in CollapsedLog.__dataclass_fields__:
        # As one process: each query's mass over the number of users, 0 for a query without users.
        mass = pd.concat(masses, ignore_index=True).set_index("text")["mass"]
        total = sum(n_users)
        mass = mass.reindex(queries["text"].to_numpy(dtype=object)).fillna(0.0).to_numpy(dtype=np.float64)
        extra["user_mass"] = mass / total if total else np.zeros(len(queries))
    stats = LogStats(rows=sum(c["rows"] for c in counts), searches=sum(c["searches"] for c in counts),
                     distinct_raw=facts["distinct_raw"], empty_rows=sum(c["empty_rows"] for c in counts),
                     zero_traffic=facts["zero_traffic"], multi_stratum=facts["multi_stratum"],
                     moved_searches=facts["moved"])
    return CollapsedLog(queries=queries, has_users=user_col is not None, stats=stats, **extra)


def _bucket(per_piece, b):
    return per_piece[b]


def _first_two(result):
    return result[0], result[1]


def dask_map(address, fn, arguments):
    """``fn(*args)`` for each of ``arguments`` on the Dask cluster at ``address`` (see
    :class:`cluster_client`), yielded in the order given, so the first failing call in that order
    is the error raised (``golden corpus-sample --dask``)."""
    with cluster_client(address) as client:
        futures = [client.submit(fn, *args, pure=False) for args in arguments]
        for fut in futures:
            yield fut.result()
