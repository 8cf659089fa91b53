"""``golden export verify``: re-check an exported version folder against its manifest (and the store)."""

from __future__ import annotations

import click

from curation.cli.base import db_option, domain_errors, main, store_session


@main.command("verify")
@click.argument("folder", type=click.Path(exists=True, file_okay=False))
@db_option
@domain_errors
def verify_cmd(folder, db_url):
    """Re-check an exported version folder: checksums and sizes against its manifest, the qrels'
    format (qid 0 docid grade, sorted, integer grades) and the manifest's counts. With --db (or
    $DATABASE_URL), also that the store records this very version, complete: a folder left by an
    interrupted export, or from another store, is reported. Folders an interrupted export left
    beside it are named. Exit 1 on any problem.

    \b
    Example:
      golden export verify exports/v5
      golden export verify exports/v5 --db golden.db
    """
    from pathlib import Path

    from curation.export.verify import stale_beside, verify

    rep = verify(folder)
    checked_store = False
    if db_url:
        from curation.export.versions import store_problems

        with store_session(db_url) as s:
            rep.problems.extend(store_problems(s, Path(folder)))
        checked_store = True
    for stale in stale_beside(Path(folder)):
        click.echo(f"note: {stale} was left by an interrupted export; delete it when no export is running", err=True)
    if not rep.ok:
        for p in rep.problems:
            click.echo(f"FAIL {p}", err=True)
        raise click.ClickException(
            f"{folder}: {len(rep.problems)} problem(s); move the folder away, then `golden export create --version "
            f"{rep.version or 'NAME'} --frozen --out DIR` writes the frozen files"
        )
    store = "; the store records this version" if checked_store else ""
    click.echo(f"{folder}: OK, version {rep.version}; {len(rep.checked)} files match the manifest "
               f"({', '.join(rep.checked)}){store}")
