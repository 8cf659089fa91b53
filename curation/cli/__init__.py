"""The ``golden`` command line: thin click commands over the ``curation`` package.

Each area has its own module in this package; importing it attaches its commands to ``main``.
"""

from __future__ import annotations

from .base import main

__all__ = ["main"]

# One line per command module (keep the list sorted).
from . import agreement  # noqa: E402,F401
from . import assign  # noqa: E402,F401
from . import corpus  # noqa: E402,F401
from . import coverage  # noqa: E402,F401
from . import db  # noqa: E402,F401
from . import demo  # noqa: E402,F401
from . import export  # noqa: E402,F401
from . import leakcheck  # noqa: E402,F401
from . import pool  # noqa: E402,F401
from . import project  # noqa: E402,F401
from . import sample  # noqa: E402,F401
from . import serve  # noqa: E402,F401
from . import stats  # noqa: E402,F401
from . import user  # noqa: E402,F401
