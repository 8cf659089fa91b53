"""The statistics commands' named choices, in a module of their own with no imports, so the CLI can
offer them (``golden stats compare --weighting/--ci``, ``golden stats noise --rule``) without loading numpy and
scipy for ``--help``."""

WEIGHTINGS = ("unweighted", "traffic", "stratum")  # how queries count in the mean
CI_METHODS = ("auto", "percentile", "bca", "t")  # the interval: auto is t below 30 units, else percentile
NOISE_RULES = ("3sd", "range", "paired")  # how golden stats noise sets the floor from repeated runs
UNITS = ("query", "user")  # golden stats compare --unit: whose mean (each query, or each user with all their queries)
FEW_QUERIES = 30  # below this many queries (or clusters) estimates are flagged, and --ci auto gives a t interval
FEW_REPEATS = 5  # below this many repeated runs golden stats noise flags its floor as loose
CORRECTIONS = ("holm", "bonferroni", "bh", "tukey", "none")  # golden stats compare's correction for many comparisons
