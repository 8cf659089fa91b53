"""The root ``golden`` group and options shared by several commands."""

from __future__ import annotations

import contextlib
import functools
import os

import click

from curation import __version__
from curation.formats.fileio import InputError


@click.group(context_settings={"help_option_names": ["-h", "--help"], "max_content_width": 100})
@click.version_option(__version__, prog_name="golden")
def main():
    """golden: build the golden set a retrieval evaluation stands on.

    \b
    The path, in order:
      golden sample      search log   -> stratified query set (queries.jsonl)
      golden pool        system runs  -> blind judging pool (pool.jsonl)
      golden serve       judges label pairs in the browser
      golden export      versioned, immutable qrels with a manifest

    Run `golden demo` to see the whole path on generated data, and
    `golden COMMAND --help` for each command, with an example.
    """


def seed_option(func):
    """``--seed``: every random choice is reproducible byte for byte from it."""
    return click.option(
        "--seed", type=int, default=0, show_default=True, help="Random seed; the same seed gives the same output."
    )(func)


def domain_errors(func):
    """Turn bad-input errors from the domain layer into a clean CLI error (exit 1), no traceback."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        try:
            return func(*args, **kwargs)
        except InputError as exc:
            raise click.ClickException(str(exc)) from None
        except ValueError as exc:
            raise click.ClickException(str(exc)) from None

    return wrapper


def db_option(func):
    """``--db URL``: the project store (default: ``DATABASE_URL``, else ``golden.db`` here)."""
    return click.option(
        "--db",
        "db_url",
        metavar="URL",
        envvar="DATABASE_URL",
        default=None,
        help="Database URL (sqlite:///path.db or postgresql://...); default: $DATABASE_URL, else ./golden.db.",
    )(func)


def open_db(db_url: str | None, *, check: bool = True):
    """An engine on the store, refusing (with the command to run) one whose schema is out of date."""
    from curation.store.migrate import SchemaError, open_store

    if db_url and "://" not in db_url:  # a plain path means a SQLite file
        db_url = f"sqlite:///{os.path.abspath(db_url)}"
    try:
        return open_store(db_url, check=check)
    except SchemaError as exc:
        raise click.ClickException(str(exc)) from None


@contextlib.contextmanager
def store_session(db_url: str | None, *, check: bool = True):
    """A session on the store (see :func:`open_db`), its engine disposed when the block ends."""
    from curation.store.engine import session

    engine = open_db(db_url, check=check)
    try:
        with session(engine) as s:
            yield s
    finally:
        engine.dispose()
