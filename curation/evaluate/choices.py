"""The statistics commands' named choices, in a module of their own with no imports, so the CLI can
offer them (``golden compare --weighting/--ci``, ``golden noise --rule``) without loading numpy and
scipy for ``--help``."""

WEIGHTINGS = ("unweighted", "traffic", "stratum")  # how queries count in the mean
CI_METHODS = ("percentile", "bca")  # the bootstrap interval
NOISE_RULES = ("3sd", "range", "paired")  # how golden noise sets the floor from repeated runs
