"""``golden judging seed``: pairs known from support tickets or clicks, kept apart from human judgments."""

from __future__ import annotations

import click

from curation.cli.base import (
    db_option,
    domain_errors,
    main,
    on_conflict_option,
    project_option,
    seed_option,
    store_session,
)


@main.command("seed-judgments")
@click.argument("file", type=click.Path(exists=True, allow_dash=True, dir_okay=False))
@click.option("--source", type=click.Choice(["ticket", "click"]), required=True,
              help="ticket: a resolved ticket linked the document (default grade: the top grade); "
                   "click: a click (a weak positive, default grade 1).")
@project_option
@click.option("--add-to-pool", is_flag=True,
              help="Add the pairs to the judging pool, so judges confirm or reject them blind.")
@seed_option(help_text="Seed of the pool order the new pairs take.")
@click.option("--allow-empty", is_flag=True,
              help="Accept a FILE without any pair (add nothing) instead of refusing it as `FILE: no records`.")
@on_conflict_option
@db_option
@domain_errors
def seed_judgments_cmd(file, source, project_name, add_to_pool, seed, allow_empty, on_conflict, db_url):
    """Import query-document pairs known from support tickets or clicks as seed judgments, kept
    apart from human judgments. FILE: JSONL ({"qid", "docid", "grade"?}) or CSV/TSV/text (qid docid [grade]).

    \b
    Example:
      golden judging seed tickets.jsonl --source ticket --project news --add-to-pool
      golden judging seed clicks.tsv --source click
    """
    from curation.pool.seeds import import_seeds
    from curation.store.projects import get_project

    with store_session(db_url) as s:
        proj = get_project(s, project_name)
        rep = import_seeds(s, proj, file, source=source, add_to_pool=add_to_pool, seed=seed, allow_empty=allow_empty,
                           on_conflict=on_conflict)
    click.echo(f"{file}: {rep.lines} lines, {rep.distinct} distinct pairs -> {rep.added} new {source} seed judgments"
               + (f" ({rep.already} stored before)" if rep.already else ""))
    if rep.repeats:
        click.echo(rep.repeats)
    if add_to_pool:
        click.echo(f"pool: {rep.pooled_new} pairs added, {rep.pooled_marked} pooled pairs marked as seeded")
        if rep.unknown_queries:
            click.echo(f"  not pooled: {len(rep.unknown_queries)} qids not in the project "
                       f"(e.g. {', '.join(rep.unknown_queries[:5])})")
        if rep.unknown_documents:
            click.echo(f"  not pooled: {len(rep.unknown_documents)} pairs whose document is not in the project's "
                       f"corpus snapshot (e.g. {', '.join(rep.unknown_documents[:3])})")
