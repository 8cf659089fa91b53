"""``golden project guidelines``: version the written definition of relevance."""

from __future__ import annotations

import click

from curation.cli.base import db_option, domain_errors, main, project_option, store_session


@main.group()
def guidelines():
    """Version the written definition of relevance judges work under.

    \b
    Example:
      golden project guidelines set GUIDELINES.md --project news --note "clarify partial answers"
    """


@guidelines.command("set")
@click.argument("path", type=click.Path(exists=True, allow_dash=True, dir_okay=False))
@project_option
@click.option("--note", default=None, help="What changed, for the history.")
@db_option
@domain_errors
def set_cmd(path, project_name, note, db_url):
    """Make the text of PATH the project's guidelines: a changed text becomes a new version, and
    judgments made from now on record it.

    \b
    Example:
      golden project guidelines set GUIDELINES.md --project news --note "tables count as answers"
    """
    from curation.formats.guidelines import read_guidelines
    from curation.store.projects import get_project, set_guidelines

    text = read_guidelines(path)  # strict UTF-8 named file:line, BOM dropped, CRLF made LF, empty refused
    with store_session(db_url) as s:
        proj = get_project(s, project_name)
        version, new = set_guidelines(s, proj, text, note=note)
    if new:
        click.echo(f"project {proj.name}: guidelines v{version.version} recorded")
    else:
        click.echo(f"project {proj.name}: guidelines unchanged (still v{version.version})")
