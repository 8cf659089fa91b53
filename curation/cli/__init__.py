"""The ``golden`` command line: thin click commands over the ``curation`` package.

Each command (or small family of commands) has its own module in this package, named after it;
importing the module attaches its commands to ``main``, and :data:`COMMANDS` puts each one in its
group. The modules import click and the standard library only: a command imports the domain code
(numpy, pandas, SQLAlchemy ...) when it runs, so ``golden --help`` and ``golden --version`` start at
once (tests/cli/test_startup.py).

A command's function is named after the name its module registers, in snake case, followed by
``_cmd`` (``compare_cmd``, ``corpus_sample_cmd``); a group's function is the group's name, since its
commands are declared with ``@group.command``.
"""

from __future__ import annotations

from curation.cli.base import CommandTable, LazyCommands, main

# Where each command sits, in the pipeline's order (`golden --help` and each group's help list them
# so): its path under `golden`, then the module of curation/cli that defines it and the name the
# module registers it under (`@main.command("compare")`). One line a command; a path of one word is a
# command at the top. The module is imported when the command runs (`golden pool` imports pool.py and
# no other command's module) or when its group's commands are listed. A test checks that every
# module in this folder is named and registers exactly the names given here.
COMMANDS = {
    "demo": ("demo", "demo"),
    "sample queries": ("sample", "sample"),
    "sample corpus": ("corpus", "corpus-sample"),
    "pool": ("pool", "pool"),
    "project": ("project", "project"),
    "project guidelines": ("guidelines", "guidelines"),
    "judging assign": ("assign", "assign"),
    "judging progress": ("progress", "progress"),
    "judging release": ("assign", "release"),
    "judging import": ("import_judgments", "import-judgments"),
    "judging seed": ("seed_judgments", "seed-judgments"),
    "judging gold": ("gold", "gold"),
    "serve": ("serve", "serve"),
    "labels agreement": ("agreement", "agreement"),
    "labels adjudicate": ("adjudicate", "adjudicate"),
    "labels calibrate": ("calibrate", "calibrate"),
    "machine": ("machine", "machine"),
    "leakcheck": ("leakcheck", "leakcheck"),
    "export create": ("export", "export"),
    "export verify": ("verify", "verify"),
    "export split": ("split", "split"),
    "stats metrics": ("stats", "metrics"),
    "stats compare": ("stats", "compare"),
    "stats power": ("stats", "power"),
    "stats noise": ("stats", "noise"),
    "stats sweep": ("stats", "sweep"),
    "stats attribute": ("stats", "attribute"),
    "stats coverage": ("coverage", "coverage"),
    "decisive settle": ("settle", "settle"),
    "decisive simulate": ("simulate_judging", "simulate-judging"),
    "admin user": ("user", "user"),
    "admin audit": ("audit", "audit"),
    "admin db": ("db", "db"),
}

# The groups of the pipeline, each with its help.
GROUPS = {
    "sample": """Draw what is judged: the queries from a search log, and a sample of a corpus.

    \b
    Example:
      golden sample queries search.csv --query-col query --size 500 --out queries.jsonl
      golden sample corpus corpus.jsonl --size 10000 --out sample.jsonl
    """,
    "judging": """Hand pairs to judges, follow them, and bring in labels made elsewhere.

    \b
    Example:
      golden judging assign --judges alice,bob --overlap 100
      golden judging progress
      golden judging release --lead carol --agreement 0.72
    """,
    "labels": """Measure how far the judges agree, settle their disagreements, and calibrate machine judges.

    \b
    Example:
      golden labels agreement
      golden labels adjudicate --lead carol --pair q12/d7 --grade 2 --reason "guideline 3"
    """,
    "export": """Write versioned, immutable qrels, verify them, and split them into dev and holdout.

    \b
    Example:
      golden export create --version v1 --out exports
      golden export verify exports/v1
    """,
    "stats": """Score runs against qrels and compare systems, with the uncertainty of each figure.

    \b
    Example:
      golden stats metrics run_a.trec run_b.trec --qrels exports/v1
      golden stats compare run_a.trec run_b.trec --qrels exports/v1 --metric ndcg@10
    """,
    "decisive": """Judge first the pairs that can change a comparison, and see when it is settled.

    \b
    Example:
      golden decisive settle --compare bm25,dense
      golden decisive simulate bm25.trec dense.trec --qrels qrels.txt --compare bm25,dense
    """,
    "admin": """Manage the people, read the audit trail, and create or migrate the store.

    \b
    Example:
      golden admin db upgrade
      golden admin user add alice --role judge
      golden admin audit --limit 20
    """,
}

# The names of golden 0.1, when every command sat at the top: each still runs its command, after a
# note on stderr that names the new one. (`sample` and `export` are now also the names of groups:
# given arguments that are not one of the group's commands, they run the old command.)
ALIASES = {
    "sample": "sample queries",
    "corpus-sample": "sample corpus",
    "guidelines": "project guidelines",
    "assign": "judging assign",
    "progress": "judging progress",
    "release": "judging release",
    "import-judgments": "judging import",
    "seed-judgments": "judging seed",
    "agreement": "labels agreement",
    "adjudicate": "labels adjudicate",
    "calibrate": "labels calibrate",
    "export": "export create",
    "verify": "export verify",
    "split": "export split",
    "metrics": "stats metrics",
    "compare": "stats compare",
    "power": "stats power",
    "noise": "stats noise",
    "sweep": "stats sweep",
    "attribute": "stats attribute",
    "coverage": "stats coverage",
    "settle": "decisive settle",
    "simulate-judging": "decisive simulate",
    "user": "admin user",
    "audit": "admin audit",
    "db": "admin db",
}

main.table = CommandTable(__name__, COMMANDS, GROUPS, ALIASES)
main.commands = LazyCommands(main.table)

__all__ = ["main", "COMMANDS", "GROUPS", "ALIASES"]
