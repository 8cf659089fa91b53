"""The ``golden`` command line: thin click commands over the ``curation`` package.

Each command (or small family of commands) has its own module in this package, named after it;
importing the module attaches its commands to ``main``. The modules import click and the standard
library only: a command imports the domain code (numpy, pandas, SQLAlchemy ...) when it runs, so
``golden --help`` and ``golden --version`` start at once (tests/cli/test_startup.py).
"""

from __future__ import annotations

from curation.cli.base import LazyCommands, main

# The module of each command, imported when the command runs (`golden pool` imports pool.py and no
# other command's module) or when the commands are listed (`golden --help`): importing a module
# attaches its commands to main. One line a command, sorted (a test checks that every module in this
# folder is named and attaches exactly the commands named here).
COMMAND_MODULES = {
    "adjudicate": "adjudicate",
    "agreement": "agreement",
    "assign": "assign",
    "attribute": "stats",
    "audit": "audit",
    "calibrate": "calibrate",
    "compare": "stats",
    "corpus-sample": "corpus",
    "coverage": "coverage",
    "db": "db",
    "demo": "demo",
    "export": "export",
    "guidelines": "guidelines",
    "import-judgments": "import_judgments",
    "leakcheck": "leakcheck",
    "machine": "machine",
    "metrics": "stats",
    "noise": "stats",
    "pool": "pool",
    "power": "stats",
    "progress": "progress",
    "project": "project",
    "release": "assign",
    "sample": "sample",
    "seed-judgments": "seed_judgments",
    "serve": "serve",
    "settle": "settle",
    "simulate-judging": "simulate_judging",
    "split": "split",
    "sweep": "stats",
    "user": "user",
    "verify": "verify",
}
main.commands = LazyCommands(__name__, COMMAND_MODULES)

__all__ = ["main", "COMMAND_MODULES"]
