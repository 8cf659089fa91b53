"""``golden export split``: assign each query once to the tune or the held-out split."""

from __future__ import annotations

import click
from click.core import ParameterSource

from curation.cli.base import FiniteFloat, db_option, domain_errors, main, project_option, seed_option, store_session


@main.command("split")
@project_option
@click.option("--holdout", type=FiniteFloat(), default=None,
              help="Share of each stratum held out, e.g. 0.35 (first run only; fixed afterwards).")
@seed_option(help_text="Seed of the split (first run only; a project keeps the seed of its first split).")
@db_option
@domain_errors
def split_cmd(project_name, holdout, seed, db_url):
    """Assign each query once to `tune` or `holdout`, stratified; a query's split never changes.
    Run it again (without options) to assign queries that arrived since; `golden export create` does too.

    \b
    Example:
      golden export split --project news --holdout 0.35 --seed 7
      golden export split --project news          # later: assigns only the new queries
    """
    from curation.export.split import split_project
    from curation.store.projects import get_project

    if click.get_current_context().get_parameter_source("seed") is ParameterSource.DEFAULT:
        seed = None  # a project already split keeps its seed; a first split takes the default, 0

    with store_session(db_url) as s:
        proj = get_project(s, project_name)
        rep = split_project(s, proj, holdout=holdout, seed=seed)
    new = len(rep.assigned)
    new_h = sum(1 for v in rep.assigned.values() if v == "holdout")
    click.echo(f"project {rep.project}: holdout {rep.holdout}, seed {rep.seed}; assigned {new} new queries "
               f"({new - new_h} tune, {new_h} holdout)")
    width = max([len("stratum"), len("total")] + [len(stratum or "(none)") for stratum in rep.totals])
    click.echo(f"{'stratum':<{width}} {'tune':>6} {'holdout':>8} {'share':>7}")
    for stratum, c in sorted(rep.totals.items()):
        n = c["tune"] + c["holdout"]
        click.echo(f"{stratum or '(none)':<{width}} {c['tune']:>6} {c['holdout']:>8} {c['holdout'] / n:>7.1%}")
    t = rep.counts
    click.echo(f"{'total':<{width}} {t['tune']:>6} {t['holdout']:>8} "
               f"{t['holdout'] / max(1, t['tune'] + t['holdout']):>7.1%}")
