"""The paired comparison's named choices, in a module of their own with no imports, so the CLI can
offer them (``golden compare --weighting/--ci``) without loading numpy and scipy for ``--help``."""

WEIGHTINGS = ("unweighted", "traffic", "stratum")  # how queries count in the mean
CI_METHODS = ("percentile", "bca")  # the bootstrap interval
