"""``golden admin db``: create or migrate the project store's schema."""

from __future__ import annotations

import click

from curation.cli.base import db_option, main, open_db


@main.group()
def db():
    """Create or migrate the project store (SQLite file or PostgreSQL).

    \b
    Example:
      golden admin db upgrade                      # ./golden.db, or $DATABASE_URL
      golden admin db current --db postgresql://postgres@127.0.0.1/golden
    """


@db.command()
@db_option
def upgrade_cmd(db_url):
    """Create the store's tables, or migrate them to this version of golden.

    \b
    Example:
      golden admin db upgrade --db golden.db
    """
    from curation.store.migrate import upgrade as do_upgrade

    engine = open_db(db_url, check=False)
    try:
        before, after = do_upgrade(engine)
    finally:
        engine.dispose()
    where = engine.url.render_as_string(hide_password=True)
    if before == after:
        click.echo(f"{where}: already at schema revision {after}")
    else:
        click.echo(f"{where}: schema upgraded from {before or 'empty'} to {after}")


@db.command()
@db_option
def current_cmd(db_url):
    """Show the store's schema revision and the one this golden needs.

    \b
    Example:
      golden admin db current --db golden.db
    """
    from curation.store.migrate import current_revision, head_revision

    engine = open_db(db_url, check=False)
    try:
        cur = current_revision(engine)
    finally:
        engine.dispose()
    head = head_revision()
    state = "up to date" if cur == head else "out of date: run `golden admin db upgrade`"
    click.echo(f"current: {cur or 'empty'}\nhead:    {head}\n{state}")
