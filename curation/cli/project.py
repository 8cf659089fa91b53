"""``golden project``: load a project into the store, extend its pool, and list the projects."""

from __future__ import annotations

import click

from curation.cli.base import db_option, domain_errors, main, on_conflict_option, store_session

SCALE_CHOICES = ["binary", "0-2", "0-3"]


@main.group()
def project():
    """Load and list judging projects, and set a project's settings.

    \b
    Example:
      golden project create news --queries queries.jsonl --pool pool.jsonl \\
          --corpus corpus.jsonl --guidelines GUIDELINES.md --scale 0-2
      golden project list
      golden project settings news --min-answer-ms 400
    """


@project.command()
@click.argument("name")
@click.option("--queries", "queries_path", required=True, type=click.Path(exists=True, allow_dash=True, dir_okay=False),
              help="Query set from `golden sample queries` (queries.jsonl).")
@click.option("--pool", "pool_path", required=True, type=click.Path(exists=True, allow_dash=True, dir_okay=False),
              help="Judging pool from `golden pool` (pool.jsonl).")
@click.option("--corpus", "corpus_paths", required=True, multiple=True,
              type=click.Path(exists=True, allow_dash=True, dir_okay=False),
              help="Corpus file (JSONL, TSV or Parquet); repeat for several. Only pooled documents are stored.")
@click.option("--guidelines", "guidelines_path", required=True,
              type=click.Path(exists=True, allow_dash=True, dir_okay=False),
              help="The written definition of relevance (Markdown); becomes guidelines version 1.")
@click.option("--scale", type=click.Choice(SCALE_CHOICES), default="0-2", show_default=True, help="Label scale.")
@click.option("--grades", "grades_path", type=click.Path(exists=True, allow_dash=True, dir_okay=False), default=None,
              help="JSON list of {grade, name, description} overriding the scale's default names and descriptions.")
@click.option("--allow-missing", is_flag=True,
              help="Leave out pairs whose document is not in the corpus instead of stopping.")
@on_conflict_option
@db_option
@domain_errors
def create_cmd(name, queries_path, pool_path, corpus_paths, guidelines_path, scale, grades_path, allow_missing,
               on_conflict, db_url):
    """Create project NAME from a query set, a pool, the corpus and the guidelines.

    \b
    Example:
      golden project create news --queries queries.jsonl --pool pool.jsonl \\
          --corpus corpus.jsonl --guidelines GUIDELINES.md --scale 0-3
    """
    from curation.formats.fileio import InputError
    from curation.formats.grades_file import read_grades
    from curation.store.projects import create_project, scale_grades

    grades = read_grades(grades_path) if grades_path is not None else None
    if grades is not None:
        try:  # the file's grades against the scale, before anything is stored: a problem names the file
            scale_grades(scale, grades)
        except ValueError as exc:
            raise InputError(grades_path, None, str(exc).removeprefix("grades: ")) from None
    with store_session(db_url) as s:
        rep = create_project(
            s, name, queries_path=queries_path, pool_path=pool_path, corpus_paths=corpus_paths,
            guidelines_path=guidelines_path, scale=scale, grades=grades, allow_missing=allow_missing,
            on_conflict=on_conflict,
        )
    click.echo(
        f"project {rep.name}: {rep.queries} queries, {rep.pairs} pairs, {rep.documents} documents, "
        f"scale {scale}, guidelines v{rep.guidelines_version}"
    )
    if rep.missing_docids:
        shown = ", ".join(rep.missing_docids[:10]) + (" ..." if len(rep.missing_docids) > 10 else "")
        click.echo(f"left out {len(rep.missing_docids)} pooled documents missing from the corpus: {shown}")
    if rep.needs:
        click.echo(f"{rep.needs} queries carry an information need (description / narrative): judges see it")
    for line in rep.repeats:
        click.echo(line)
    click.echo(f"next: golden judging assign --project {rep.name} --judges NAME,NAME")


@project.command()
@click.argument("name")
@click.option("--pool", "pool_path", required=True, type=click.Path(exists=True, allow_dash=True, dir_okay=False),
              help="The extended pool from `golden pool --extend`.")
@click.option("--corpus", "corpus_paths", required=True, multiple=True,
              type=click.Path(exists=True, allow_dash=True, dir_okay=False),
              help="Corpus file(s) holding the new pairs' documents.")
@click.option("--allow-missing", is_flag=True, help="Leave out new pairs whose document is not in the corpus.")
@click.option("--queries", "queries_path", type=click.Path(exists=True, allow_dash=True, dir_okay=False), default=None,
              help="A queries.jsonl whose description / narrative of the project's queries become their "
                   "information need's next version (where they changed).")
@on_conflict_option
@db_option
@domain_errors
def extend_cmd(name, pool_path, corpus_paths, allow_missing, queries_path, on_conflict, db_url):
    """Add the new pairs of an extended pool to project NAME (existing judgments are untouched).

    \b
    Example:
      golden project extend news --pool pool.v2.jsonl --corpus corpus.jsonl
      golden judging assign --project news --judges alice,bob     # hands out only the new pairs
    """
    from curation.store.projects import extend_pool, get_project

    with store_session(db_url) as s:
        rep = extend_pool(s, get_project(s, name), pool_path=pool_path, corpus_paths=corpus_paths,
                          allow_missing=allow_missing, on_conflict=on_conflict, queries_path=queries_path)
    click.echo(f"project {rep.name}: {rep.new_pairs} new pairs, {rep.new_documents} new documents "
               f"({rep.pairs} pairs in all)")
    if rep.missing_docids:
        click.echo(f"left out {len(rep.missing_docids)} documents missing from the corpus: "
                   + ", ".join(rep.missing_docids[:10]))
    if rep.needs:
        click.echo(f"{rep.needs} information needs updated from {queries_path}")
    for line in rep.repeats:
        click.echo(line)


@project.command("list")
@db_option
def list_cmd(db_url):
    """List the projects in the store.

    \b
    Example:
      golden project list --db golden.db
    """
    from curation.store.projects import list_projects

    with store_session(db_url) as s:
        rows = list_projects(s)
    if not rows:
        click.echo("no projects yet: create one with `golden project create NAME ...`")
        return
    click.echo(f"{'name':<20} {'scale':<6} {'queries':>7} {'pairs':>7} {'docs':>7} {'guidelines':>10}  main work")
    for r in rows:
        click.echo(
            f"{r.name:<20} {r.scale:<6} {r.queries:>7} {r.pairs:>7} {r.documents:>7} "
            f"{'v' + str(r.guidelines_version) if r.guidelines_version else '-':>10}  "
            f"{'released' if r.released else 'held'}"
        )


def _min_answer_ms(ctx, param, value):
    """``--min-answer-ms``: milliseconds from 0 to 60000, or ``default`` (the server's)."""
    if value is None:
        return None
    if value.strip().lower() == "default":
        return "default"
    text = value.strip()
    if not text.isascii() or not text.isdigit() or int(text) > 60_000:
        raise click.BadParameter(f"{value!r}: give a whole number of milliseconds from 0 to 60000, or 'default'")
    return int(text)


@project.command("settings")
@click.argument("name")
@click.option("--min-answer-ms", "min_answer_ms", default=None, metavar="MS|default", callback=_min_answer_ms,
              help="The least time between showing a pair and accepting its answer, in milliseconds (0 turns "
                   "the check off); 'default' uses the server's GOLDEN_MIN_ANSWER_MS (250 unless set).")
@db_option
@domain_errors
def settings_cmd(name, min_answer_ms, db_url):
    """Show project NAME's settings, or change them (recorded in the audit trail).

    An answer that comes sooner after its pair was shown than the minimum answer time is refused by
    the judging server (a key pressed twice for the pair before). A project without its own minimum
    uses the server's GOLDEN_MIN_ANSWER_MS, default 250; leads can also set it on the project's
    Settings page.

    \b
    Example:
      golden project settings news
      golden project settings news --min-answer-ms 400
      golden project settings news --min-answer-ms default
    """
    from curation.store.projects import get_project, set_min_answer_ms

    with store_session(db_url) as s:
        proj = get_project(s, name)
        if min_answer_ms is not None:
            changed = set_min_answer_ms(s, proj, None if min_answer_ms == "default" else min_answer_ms)
            click.echo(f"project {proj.name}: minimum answer time {'changed' if changed else 'unchanged'}")
        own = proj.min_answer_ms
        click.echo(f"min-answer-ms: {own if own is not None else 'default'}"
                   + (" (the server's GOLDEN_MIN_ANSWER_MS, 250 unless set)" if own is None else ""))
