"""Judging: assigning pairs to judges (overlap set first), serving them, recording labels.

Modules: assignment (the overlap set first, then the rest), judging (show a pair, record an answer),
importing (labels from files), highlight (the query's words marked in the document).
"""
