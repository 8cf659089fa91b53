"""The ``golden`` command line: thin click commands over the ``curation`` package.

Each command (or small family of commands) has its own module in this package, named after it;
importing the module attaches its commands to ``main``. The modules import click and the standard
library only: a command imports the domain code (numpy, pandas, SQLAlchemy ...) when it runs, so
``golden --help`` and ``golden --version`` start at once (tests/cli/test_startup.py).
"""

from __future__ import annotations

# Imported for what importing does (each module attaches its commands to main), hence F401; one
# name a line, sorted (a test checks that every module in this folder is listed).
from curation.cli import (  # noqa: F401 - imported for their effect: each attaches its commands to main
    adjudicate,
    agreement,
    assign,
    audit,
    calibrate,
    corpus,
    coverage,
    db,
    demo,
    export,
    guidelines,
    import_judgments,
    leakcheck,
    pool,
    progress,
    project,
    sample,
    seed_judgments,
    serve,
    settle,
    simulate_judging,
    split,
    stats,
    user,
    verify,
)
from curation.cli.base import main

__all__ = ["main"]
