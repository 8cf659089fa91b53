"""Agreement between judges on the overlap set, final labels and adjudication."""
