"""The ``golden`` command line: thin click commands over the ``curation`` package.

Each area has its own module in this package; importing it attaches its commands to ``main``.
"""

from __future__ import annotations

from curation.cli.base import main

__all__ = ["main"]

# One line per command module (keep the list sorted).
from curation.cli import adjudicate  # noqa: E402,F401
from curation.cli import agreement  # noqa: E402,F401
from curation.cli import assign  # noqa: E402,F401
from curation.cli import corpus  # noqa: E402,F401
from curation.cli import coverage  # noqa: E402,F401
from curation.cli import db  # noqa: E402,F401
from curation.cli import demo  # noqa: E402,F401
from curation.cli import export  # noqa: E402,F401
from curation.cli import guidelines  # noqa: E402,F401
from curation.cli import import_judgments  # noqa: E402,F401
from curation.cli import leakcheck  # noqa: E402,F401
from curation.cli import pool  # noqa: E402,F401
from curation.cli import project  # noqa: E402,F401
from curation.cli import sample  # noqa: E402,F401
from curation.cli import seed_judgments  # noqa: E402,F401
from curation.cli import serve  # noqa: E402,F401
from curation.cli import split  # noqa: E402,F401
from curation.cli import stats  # noqa: E402,F401
from curation.cli import user  # noqa: E402,F401
from curation.cli import verify  # noqa: E402,F401
