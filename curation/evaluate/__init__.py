"""Statistics over qrels and runs: per-query metrics, paired tests, power, coverage.

Modules: ``metrics``, ``stats`` (pairing two runs and ``compare``), ``bootstrap``, ``exact_tests``,
``power``, ``noise`` (noise floor and sweep), ``attribution`` (2x2), ``coverage``,
``decisive`` (the comparisons a decisive judging order settles), ``settle``, ``simulate``, ``html_report``.
Nothing is re-exported here: import from the module.
"""
