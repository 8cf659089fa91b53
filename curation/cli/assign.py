"""``golden assign`` and ``golden release``: hand the pool out to judges."""

from __future__ import annotations

import click

from curation.cli.base import db_option, domain_errors, main, project_option, seed_option, store_session


@main.command()
@click.option("--judges", required=True, help="Comma-separated judge names, e.g. alice,bob.")
@click.option("--overlap", type=click.IntRange(min=0), default=100, show_default=True,
              help="Pairs every listed judge labels first (calibration and agreement); 0 for none.")
@project_option
@click.option("--hold/--no-hold", default=None,
              help="Hold the main pairs back until a lead runs `golden release` "
                   "(default: hold when there is an overlap set).")
@click.option("--order", type=click.Choice(["default", "decisive"]), default="default", show_default=True,
              help="decisive: judge first the pairs that can change the compared differences (needs --compare); "
                   "run again after a batch of judgments to re-prioritise the open pairs.")
@click.option("--compare", "compare", multiple=True, metavar="A,B",
              help="With --order decisive: is run B higher than run A? Repeatable.")
@click.option("--metric", default="ndcg@10", show_default=True, help="With --order decisive: ndcg@k or ap[@k].")
@click.option("--tie", type=float, default=0.0, show_default=True,
              help="With --order decisive: also settle as 'no difference larger than TIE' (0: off).")
@seed_option
@db_option
@domain_errors
def assign(judges, overlap, project_name, hold, order, compare, metric, tie, seed, db_url):
    """Assign the project's unassigned pairs to judges: an overlap set every judge labels first,
    drawn across queries and strata, then the rest split evenly, a query's pairs with one judge.
    Run it again after `golden project extend` to hand out only the new pairs.

    With --order decisive, each judge's main pairs come in blocks of a query's most decisive
    pairs (the most unsettled weight first; shuffled within a block, nothing reveals a rank or a
    system); `golden settle` says when each comparison is settled.

    \b
    Example:
      golden assign --project news --judges alice,bob,carol --overlap 100 --seed 7
      golden assign --project news --judges alice,bob --order decisive --compare bm25,dense --metric ndcg@10
    """
    from curation.judge.assignment import assign as do_assign
    from curation.store.projects import get_project

    names = [n.strip() for n in judges.split(",") if n.strip()]
    if order == "decisive" and not compare:
        raise click.UsageError("--order decisive needs at least one --compare A,B")
    if order != "decisive" and compare:
        raise click.UsageError("--compare goes with --order decisive")
    with store_session(db_url) as s:
        proj = get_project(s, project_name)
        rep = do_assign(s, proj, names, overlap=overlap, seed=seed, hold=hold, order=order, compare=compare,
                        metric=metric, tie=tie)
    again = (" (assigned before; its pairs are not added again)"
             if rep.overlap_pairs and not rep.new_overlap_rows else "")
    click.echo(
        f"project {proj.name}: overlap set of {rep.overlap_pairs} pairs over {rep.overlap_queries} queries "
        f"and {rep.overlap_strata} strata{again}; {rep.new_main_pairs} new main pairs"
    )
    click.echo("added to each judge's queue:")
    click.echo(f"{'judge':<16} {'overlap':>7} {'main':>6} {'queries':>7}")
    for name, c in rep.per_judge.items():
        click.echo(f"{name:<16} {c['overlap']:>7} {c['main']:>6} {c['queries']:>7}")
    if order == "decisive":
        click.echo(f"main pairs queued in the decisive order for {', '.join(compare)} ({metric}); "
                   "see `golden settle --project NAME`")
    if rep.held:
        click.echo("main pairs are held back until a lead reviews agreement: golden release --lead NAME --agreement A")


@main.command()
@click.option("--lead", "lead_name", required=True, help="The lead releasing the work (role lead or admin).")
@click.option("--agreement", type=float, default=None,
              help="The agreement reviewed on the overlap set (e.g. Krippendorff's alpha), for the record.")
@project_option
@db_option
@domain_errors
def release(lead_name, agreement, project_name, db_url):
    """Release the held-back main pairs to their judges, recording who did it and at what agreement.

    \b
    Example:
      golden release --project news --lead lena --agreement 0.71
    """
    from curation.judge.assignment import release as do_release
    from curation.store.projects import get_project
    from curation.store.users import require_user

    with store_session(db_url) as s:
        proj = get_project(s, project_name)
        rec = do_release(s, proj, require_user(s, lead_name), agreement=agreement)
    at = "" if rec.agreement is None else f" at agreement {rec.agreement:.3f}"
    click.echo(f"project {rec.project}: {rec.main_pairs} main pairs released by {rec.lead}{at}")
