"""Judging: assigning pairs to judges (overlap set first), serving them, recording labels.

Modules: assignment (the overlap set first, then the rest), judging (show a pair, record an answer),
importing (labels from files), highlight (the query's words marked in the document), gold
(known-answer pairs: the set, mixing, accuracy reports, holds), known_answer (the accuracy and the
flag rule), qualification (a new judge's qualification before main work), progress (the report of
`golden judging progress` and the lead's Progress page).
"""
