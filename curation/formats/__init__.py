"""The file formats golden reads and writes: one reader and one writer per format, one set of rules each.

=====================  ==========================================  ==============================
format                 module                                      record
=====================  ==========================================  ==============================
queries.jsonl          :mod:`curation.formats.queries`             ``QueryRecord``
query lists            :mod:`curation.formats.query_list`          (line, normalised text)
pool.jsonl, .meta      :mod:`curation.formats.pool_file`           ``PoolEntry``
TREC / JSONL runs      :mod:`curation.formats.runs`                ``RankedRun``
TREC qrels, judgments  :mod:`curation.formats.qrels`               ``QrelLine``
export qrels.jsonl     :mod:`curation.formats.qrels`               dict (label with provenance)
seed files             :mod:`curation.formats.seeds_file`          ``Seed``
corpus                 :mod:`curation.formats.corpus`              ``Doc``
=====================  ==========================================  ==============================

Each reader streams and reports bad input as ``file:line: what is wrong``
(:class:`curation.formats.fileio.InputError`); every command and the app go through them.
Search logs are read by :mod:`curation.formats.logs` (CSV, TSV, JSONL, Parquet) and collapsed to
distinct queries by :mod:`curation.sample.logs`.
"""
