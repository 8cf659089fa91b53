"""``golden decisive settle``: is each compared pair of runs settled yet, with a guarantee? (and ``--release``)"""

from __future__ import annotations

import click

from curation.cli.base import db_option, domain_errors, echo_json, json_option, main, project_option, store_session


def _time(seconds) -> str:
    if seconds is None:
        return "-"
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


def format_report(rep: dict) -> str:
    """The settlement report as text (the same figures as ``--json`` and the dashboard panel)."""
    lines = [f"project {rep['project']}: {rep['judged_pairs']} of {rep['pool_pairs']} pairs with a final label, "
             f"{rep['queries']} queries",
             f"order: guided by machine judge {rep['machine']} (judges see nothing of it; settlement uses only "
             "human labels)" if rep.get("machine") else "order: blind (no machine judge guides it)"]
    head = (f"{'A':<14} {'B':<14} {'metric':<8} {'status':<8} {'verdict':<26} {'final':>7} "
            f"{'can change':>10}  estimate (not a guarantee)")
    lines.append(head)
    for c in rep["comparisons"]:
        e = c["estimate"]
        est = (f"P(flip) {e['p_flip']:.2f}, heading to '{e['verdict']}'"
               + (f", ~{e['pairs_left']} pairs / {_time(e['seconds_left'])} left" if e["pairs_left"] is not None
                  else ""))
        rate = e.get("wrong_call_rate")
        est += f" (estimate's wrong calls measured: {'not measured' if rate is None else f'{100 * rate:.1f}%'})"
        if c["status"] == "settled":
            est = "-"
        verdict = c["verdict"] if c["status"] == "settled" else f"so far: {c['verdict']}"
        lines.append(f"{c['a'][:14]:<14} {c['b'][:14]:<14} {c['metric']:<8} {c['status']:<8} {verdict[:26]:<26} "
                     f"{100 * c['share_judged']:>6.0f}% {c['pairs_can_change']:>10}  {est}")
        if c["released_at"]:
            lines.append(f"{'':<14} judges released from {c['released_pairs']} pairs at {c['released_at']}")
    lines.append("settled = no labelling of the pairs not yet judged can change the verdict (worst-case "
                 f"paired bootstrap, {rep['resamples']:,} resamples, {100 * rep['level']:.0f}%)")
    return "\n".join(lines)


@main.command()
@project_option
@click.option("--compare", "compare", multiple=True, metavar="A,B",
              help="Only this comparison (is B higher than A?); repeatable. Default: the project's comparisons.")
@click.option("--metric", default=None, help="ndcg@k or ap[@k] for --compare (default: the stored one, or ndcg@10).")
@click.option("--tie", type=float, default=None, help="Also settle as 'no difference larger than TIE'.")
@click.option("--release", "release", metavar="A,B", default=None,
              help="Release the judges from the pairs no open comparison needs, once A,B is settled (recorded).")
@click.option("--lead", "lead_name", default=None, help="The lead taking the --release decision.")
@json_option
@db_option
@domain_errors
def settle_cmd(project_name, compare, metric, tie, release, lead_name, as_json, db_url):
    """Is each comparison settled? For every compared pair of runs: the verdict so far, settled
    (no labelling of the pairs still unjudged can change it) or open, the share of the pool
    judged, the pairs that can still change it, and an ESTIMATE of the chance the verdict flips and
    of the judging left. The same figures as the lead dashboard's Comparisons panel.

    \b
    Example:
      golden decisive settle --project news
      golden decisive settle --project news --compare bm25,dense --json
      golden decisive settle --project news --release bm25,dense --lead lena
    """
    from curation.evaluate.decisive import release_settled
    from curation.machine.guide import guided_settlement_report
    from curation.store.projects import get_project
    from curation.store.users import require_user

    with store_session(db_url) as s:
        proj = get_project(s, project_name)
        if release is not None:
            if lead_name is None:
                raise click.UsageError("--release needs --lead NAME (the decision is recorded)")
            n = release_settled(s, proj, require_user(s, lead_name), release)
            click.echo(f"project {proj.name}: judges released from {n} queued pairs no open comparison needs")
            return
        rep = guided_settlement_report(s, proj, list(compare) or None, metric=metric, tie=tie)
    if as_json:
        echo_json(rep)
    else:
        click.echo(format_report(rep))
