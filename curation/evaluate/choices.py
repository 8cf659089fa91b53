"""The statistics commands' named choices, in a module of their own with no imports, so the CLI can
offer them (``golden compare --weighting/--ci``, ``golden noise --rule``) without loading numpy and
scipy for ``--help``."""

WEIGHTINGS = ("unweighted", "traffic", "stratum")  # how queries count in the mean
CI_METHODS = ("auto", "percentile", "bca", "t")  # the interval: auto is t below 30 units, else percentile
NOISE_RULES = ("3sd", "range", "paired")  # how golden noise sets the floor from repeated runs
UNITS = ("query", "user")  # golden compare --unit: whose mean (each query, or each user with their queries together)
FEW_QUERIES = 30  # below this many queries (or clusters) estimates are flagged, and --ci auto gives a t interval
FEW_REPEATS = 5  # below this many repeated runs golden noise flags its floor as loose
CORRECTIONS = ("holm", "bonferroni", "bh", "tukey", "none")  # golden compare's correction for many comparisons
