"""Statistics over qrels and runs: per-query metrics, paired tests, power, coverage."""
