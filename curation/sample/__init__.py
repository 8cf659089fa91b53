"""Sampling queries from search logs: read, normalise, collapse, stratify, allocate, draw.

Modules: ``logs`` (collapsing a log to distinct normalised queries), ``sampling`` (strata,
allocation, the draw, :func:`~curation.sample.sampling.sample_queries`), ``distributed`` (the
collapse and the draw on a Dask cluster for ``golden sample queries --dask``; the Dask map of ``golden sample corpus``),
``draw`` (what both draws share: the query's shape, the seeded draw keys, each stratum's generator),
``pii`` (flags for personal data).
"""
