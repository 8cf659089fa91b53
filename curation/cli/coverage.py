"""``golden stats coverage``: the share of each run's top results that nobody judged."""

from __future__ import annotations

import click

from curation.cli.base import (
    FiniteFloat,
    db_option,
    domain_errors,
    echo_json,
    json_option,
    main,
    on_conflict_option,
    project_option,
    store_session,
)


def format_coverage(results, *, per_query: bool = False) -> str:
    """A table of runs (worst first) and a plain sentence for each run measured on holes."""
    if not results:
        return "no runs"
    depth = results[0].depth
    width = max(12, max(len(r.name) for r in results) + 2)
    lines = [f"{'run':{width}}{'queries':>9}{'top-' + str(depth):>10}{'unjudged':>10}{'share':>8}{'mean/q':>8}"
             f"{'worst q':>9}"]
    ordered = sorted(results, key=lambda r: (-r.share, r.name))
    for r in ordered:
        worst = max((q.share for q in r.queries), default=0.0)
        flag = "  <- holes" if r.holes else ""
        lines.append(
            f"{r.name:{width}}{len(r.queries):>9}{r.retrieved:>10}{r.unjudged:>10}{r.share:>8.1%}"
            f"{r.mean_share:>8.1%}{worst:>9.0%}{flag}"
        )
    notes = []
    for r in ordered:
        if r.holes or not r.queries:
            notes.append(r.verdict())
        if r.not_judged_queries:
            notes.append(f"{r.name}: {len(r.not_judged_queries)} of its queries have no judgments and were not "
                         f"measured ({', '.join(r.not_judged_queries[:5])}"
                         f"{' ...' if len(r.not_judged_queries) > 5 else ''})")
        if r.unanswered_queries:
            notes.append(f"{r.name}: answers none of {len(r.unanswered_queries)} judged queries "
                         f"({', '.join(r.unanswered_queries[:5])}{' ...' if len(r.unanswered_queries) > 5 else ''})")
    if notes:
        lines.append("")
        lines.extend(notes)
    else:
        lines.append("")
        lines.append(f"every run's top-{depth} is covered by the judgments "
                     f"(unjudged share below {results[0].holes_at:.0%})")
    if per_query:
        for r in ordered:
            lines.append("")
            lines.append(f"{r.name}: per query (qid retrieved unjudged share)")
            for q in r.queries:
                lines.append(f"  {q.qid:12}{q.retrieved:>5}{q.unjudged:>5}{q.share:>8.1%}")
    return "\n".join(lines)


@main.command()
@click.argument("runs", nargs=-1, required=True, type=click.Path(exists=True, allow_dash=True, dir_okay=False))
@click.option("--qrels", "qrels_path", type=click.Path(exists=True, allow_dash=True, dir_okay=False), default=None,
              help="TREC qrels file (any grade counts as judged).")
@project_option(help_text="Measure against this project's judgments in the store instead of a qrels file.")
@db_option
@click.option("--depth", type=int, default=10, show_default=True, help="Top-k of each run to check.")
@click.option("--holes-at", type=FiniteFloat(), default=0.10, show_default=True,
              help="Unjudged share from which a run is called 'measured on holes'.")
@click.option("--per-query", is_flag=True, help="Also list every query's unjudged share.")
@json_option
@on_conflict_option
@domain_errors
def coverage_cmd(runs, qrels_path, project_name, db_url, depth, holes_at, per_query, as_json, on_conflict):
    """Share of each run's top-DEPTH results with no judgment, per query and in total.

    A run with a large unjudged share is measured on holes: its metrics count the holes as
    non-relevant. Runs are read as trec_eval ranks them (score desc, ties by docid desc).

    \b
    Example:
      golden stats coverage runs/bm25.trec runs/new-dense.trec --qrels qrels.txt --depth 10
      golden stats coverage runs/new-dense.trec --project news --db golden.db
    """
    from curation.evaluate.coverage import judged_from_qrels, judged_from_store, unjudged
    from curation.formats.runs import read_run

    if (qrels_path is None) == (project_name is None):
        raise click.UsageError("give exactly one of --qrels QRELS or --project NAME")
    if qrels_path is not None:
        from curation.formats.conflicts import Dedup

        dedup = Dedup(qrels_path, policy=on_conflict, what="pair")
        judged = judged_from_qrels(qrels_path, dedup=dedup)
        if dedup.summary():
            click.echo(dedup.summary(), err=True)
    else:
        from curation.store.projects import get_project

        with store_session(db_url) as session:
            judged = judged_from_store(session, get_project(session, project_name))
    loaded = [read_run(p) for p in runs]
    for run in loaded:
        if run.summary():
            click.echo(run.summary(), err=True)
    results = [unjudged(run, judged, depth=depth, holes_at=holes_at) for run in loaded]
    if as_json:
        out = [
            {
                "run": r.name, "depth": r.depth, "queries": len(r.queries), "retrieved": r.retrieved,
                "unjudged": r.unjudged, "share": r.share, "mean_share": r.mean_share, "holes": r.holes,
                "not_judged_queries": r.not_judged_queries, "unanswered_queries": r.unanswered_queries,
                "per_query": {q.qid: {"retrieved": q.retrieved, "unjudged": q.unjudged} for q in r.queries},
            }
            for r in results
        ]
        echo_json(out)
        return
    click.echo(format_coverage(results, per_query=per_query))
