"""``golden export verify``: re-check an exported version folder against its manifest."""

from __future__ import annotations

import click

from curation.cli.base import domain_errors, main


@main.command("verify")
@click.argument("folder", type=click.Path(exists=True, file_okay=False))
@domain_errors
def verify_cmd(folder):
    """Re-check an exported version folder: checksums and sizes against its manifest, the qrels'
    format (qid 0 docid grade, sorted, integer grades) and the manifest's counts. Exit 1 on any problem.

    \b
    Example:
      golden export verify exports/v5
    """
    from curation.export.verify import verify

    rep = verify(folder)
    if not rep.ok:
        for p in rep.problems:
            click.echo(f"FAIL {p}", err=True)
        raise click.ClickException(f"{folder}: {len(rep.problems)} problem(s); re-export with `golden export create "
                                   f"--version {rep.version or 'NAME'} --frozen --out DIR` to restore the frozen files")
    click.echo(f"{folder}: OK, version {rep.version}; {len(rep.checked)} files match the manifest "
               f"({', '.join(rep.checked)})")
