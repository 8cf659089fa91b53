"""Leak check: golden queries whose text appears in the corpus, and the lead's review of findings.

Modules: ``driver`` (:func:`~curation.leak.driver.leakcheck`), ``scan`` (the filter and verification,
with the method), ``index`` (the query index), ``ngrams``, ``inputs`` (queries file, corpus pieces),
``report`` (results and the report file), ``findings`` (findings in the store and their review).
Nothing is re-exported here: import from the module.
"""
