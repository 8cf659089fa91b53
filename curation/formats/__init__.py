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
Quepid judgements CSV  :mod:`curation.formats.quepid`              ``ForeignLabel``
RRE ratings JSON       :mod:`curation.formats.rre`                 ``ForeignLabel``
LTR judgment lists     :mod:`curation.formats.ltr`                 ``ForeignLabel``
Hugging Face folder    :mod:`curation.formats.hf_dataset`          dict (a qrels.jsonl record)
=====================  ==========================================  ==============================

Each reader streams and reports bad input as ``file:line: what is wrong``
(:class:`curation.formats.fileio.InputError`); every command and the app go through them.
Other tools' judgment files give :class:`curation.formats.foreign.ForeignLabel` rows, matched to a
project's queries by :mod:`curation.judge.importing`. Search logs are read by
:mod:`curation.formats.logs` (CSV, TSV, JSONL, Parquet) and collapsed to distinct queries by
:mod:`curation.sample.logs`.
"""
