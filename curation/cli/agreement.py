"""``golden agreement``, ``golden import-judgments`` and ``golden adjudicate``: the lead's numbers,
labels from earlier campaigns, and final labels for disagreements, from the command line.

The agreement report is :func:`curation.agree.agreement.build_agreement_report`, the one the ``/lead``
dashboard shows; this module only formats it."""

from __future__ import annotations

import json

import click

from curation.agree.settings import DEFAULT_THRESHOLDS, DRIFT_WINDOW, RESAMPLES, Thresholds
from curation.cli.base import db_option, domain_errors, main, seed_option, store_session


def _echo_measures(measures, *, n_judges: int, indent: int) -> None:
    """One line per agreement measure (pairwise-only ones left out for more than two judges),
    with its note, if any, on the next line."""
    from curation.agree.measures import MEASURES

    pad, width = " " * indent, 36 - indent
    for name, est in measures.items():
        if n_judges > 2 and MEASURES[name].pairwise_only:
            continue
        shown = _fmt_pct(est) if name == "agreement" else _fmt(est)
        click.echo(f"{pad}{MEASURES[name].title:<{width}} {shown}")
        if est.note:
            click.echo(f"{pad}{'':<{width}} note: {est.note}")


def _fmt_pct(est):
    from curation.agree.measures import format_estimate

    return format_estimate(est, percent=True)


def _fmt(est):
    from curation.agree.measures import format_estimate

    return format_estimate(est)


def print_report(proj_name: str, report) -> None:
    """The human-readable form of an agreement report."""

    v = report.verdict
    t = v.thresholds
    click.echo(f"project {proj_name}: scale {report.scale[0]}-{report.scale[-1]}, judges {', '.join(report.judges) or '-'}")
    click.echo(f"verdict: {v.band.upper()} - {v.message}")
    if v.caveat:
        click.echo(f"  caveat: {v.caveat}")
    click.echo(f"  on {v.on}; thresholds: usable >= {100 * t.usable:.0f}%, marginal >= {100 * t.marginal:.0f}%, "
               f"at least {t.min_pairs} pairs")
    for note in report.notes:
        click.echo(f"note: {note}")
    if report.disagreements is not None:
        d = report.disagreements
        click.echo(f"disagreements: {d.open} wait for a lead (golden adjudicate), {d.resolved} adjudicated")
    comps = ([report.overall] if len(report.judges) > 2 else []) + report.pairwise
    for c in comps:
        who = " + ".join(c.judges) if len(c.judges) == 2 else f"all {len(c.judges)} judges"
        click.echo(f"\n{who}: {c.pairs} pairs in {c.queries} queries "
                   f"({int(100 * report.confidence)}% intervals: {report.resamples} query resamples, seed {report.seed})")
        _echo_measures(c.measures, n_judges=len(c.judges), indent=2)
        if report.graded:
            click.echo(f"  binary (grade >= {report.cut} relevant):")
            _echo_measures(c.binary, n_judges=len(c.judges), indent=4)
        if c.confusion is not None and c.pairs:
            click.echo(f"  confusion (rows {c.judges[0]}, columns {c.judges[1]}):")
            click.echo("      " + "".join(f"{g:>6}" for g in report.scale))
            for g, row in zip(report.scale, c.confusion):
                click.echo(f"  {g:>4}" + "".join(f"{n:>6}" for n in row))
    if report.distributions:
        click.echo("\nlabel distribution (overlap set):")
        click.echo(f"  {'judge':<16}" + "".join(f"{g:>7}" for g in report.scale))
        for j, dist in report.distributions.items():
            total = sum(dist.values()) or 1
            click.echo(f"  {j:<16}" + "".join(f"{100 * n / total:>6.0f}%" for n in dist.values()))
    if report.timing:
        click.echo("\ntiming: median seconds per judgment, share under 2 s")
        for tm in report.timing:
            med = "-" if tm.median_seconds is None else f"{tm.median_seconds:.1f}s"
            fast = "-" if tm.share_under_2s is None else f"{100 * tm.share_under_2s:.0f}%"
            click.echo(f"  {tm.judge:<16} {med:>8} {fast:>6}  ({tm.judgments} timed)")
    if len(report.strata) > 1:
        width = max(len(st.stratum) for st in report.strata)
        click.echo("\nper stratum (all judges): pairs, percent agreement, Krippendorff's alpha (nominal)")
        for st in report.strata:
            click.echo(f"  {st.stratum:<{width}} {st.pairs:>6}  {_fmt_pct(st.agreement):>7}  {_fmt(st.alpha_nominal)}")


@main.command("agreement")
@click.option("--project", "project_name", metavar="NAME", default=None, help="Project (default: the only one).")
@click.option("--cut", type=int, default=None,
              help="Grade >= CUT counts as relevant for the binary figures (as trec_eval -l); "
                   "default: 1, or the scale's second grade when 1 does not split the scale.")
@click.option("--json", "as_json", is_flag=True, help="Print the numbers as JSON, for scripts.")
@click.option("--resamples", type=int, default=RESAMPLES, show_default=True,
              help="Bootstrap resamples of the queries for the 95% intervals (0: none).")
@click.option("--usable", type=float, default=DEFAULT_THRESHOLDS.usable, show_default=True,
              help="Verdict: percent agreement at or above this is usable for a paired comparison.")
@click.option("--marginal", type=float, default=DEFAULT_THRESHOLDS.marginal, show_default=True,
              help="Verdict: below this the definition of relevance is not usable.")
@click.option("--min-pairs", type=int, default=DEFAULT_THRESHOLDS.min_pairs, show_default=True,
              help="Verdict: fewer shared pairs is too early.")
@click.option("--verdict-on", type=click.Choice(["binary", "graded"]), default="binary", show_default=True,
              help="Read the verdict on the binary collapse at --cut, or on the graded labels.")
@click.option("--window", type=int, default=DRIFT_WINDOW, show_default=True, help="Pairs per point of the drift curve.")
@seed_option
@db_option
@domain_errors
def agreement_cmd(project_name, cut, as_json, resamples, usable, marginal, min_pairs, verdict_on, window, seed,
                  db_url):
    """Inter-annotator agreement on the overlap set: percent agreement, Cohen's kappa, Krippendorff's
    alpha with 95% intervals that resample queries, a verdict, and more.

    \b
    Example:
      golden agreement --project news
      golden agreement --project news --cut 2 --json > agreement.json
    """

    from curation.agree.agreement import build_agreement_report
    from curation.store.projects import get_project

    with store_session(db_url) as s:
        proj = get_project(s, project_name)
        report = build_agreement_report(
            s, proj, cut=cut, thresholds=Thresholds(usable=usable, marginal=marginal, min_pairs=min_pairs),
            verdict_on=verdict_on, resamples=resamples, seed=seed, window=window)
    if as_json:
        click.echo(json.dumps({"project": proj.name, **report.as_dict()}, indent=2, allow_nan=False))
    else:
        print_report(proj.name, report)


@main.command("import-judgments")
@click.argument("file", type=click.Path(exists=True, dir_okay=False))
@click.option("--judge", required=True, metavar="NAME", help="The user the labels are recorded for.")
@click.option("--project", "project_name", metavar="NAME", default=None, help="Project (default: the only one).")
@click.option("--group", default=None, metavar="G",
              help="Import only lines whose second column is G (multi-assessor files such as qrels.123).")
@click.option("--clip", is_flag=True, help="Map grades outside the project's scale to its ends instead of skipping.")
@click.option("--create-judge", is_flag=True, help="Add NAME as a judge without a login when there is no such user.")
@db_option
@domain_errors
def import_judgments_cmd(file, judge, project_name, group, clip, create_judge, db_url):
    """Load TREC qrels (qid iter docid grade) as judgments by NAME (source "import"); pairs that
    are not in the pool are reported and skipped. Running it again adds nothing.

    \b
    Example:
      golden import-judgments qrels.trec2019.txt --judge nist --project news
      golden import-judgments qrels.123 --group 1 --judge assessor1 --create-judge --clip
    """
    from curation.judge.importing import import_judgments

    with store_session(db_url) as s:
        report = import_judgments(s, file, judge=judge, project=project_name, group=group, clip=clip,
                                  create_judge=create_judge)
    click.echo(report.summary())


@main.command("adjudicate")
@click.option("--project", "project_name", metavar="NAME", default=None, help="Project (default: the only one).")
@click.option("--lead", "lead_name", metavar="NAME", help="The lead recording the decision (with --pair).")
@click.option("--pair", "pair_ref", metavar="QID/DOCID", help="The pair to decide, as qid/docid.")
@click.option("--grade", type=int, help="The final grade.")
@click.option("--reason", help="Why this grade (kept with the final label).")
@click.option("--guidelines-issue", is_flag=True, help="The disagreement came from the guidelines.")
@click.option("--json", "as_json", is_flag=True, help="List the queue as JSON.")
@db_option
@domain_errors
def adjudicate_cmd(project_name, lead_name, pair_ref, grade, reason, guidelines_issue, as_json, db_url):
    """List the disagreements waiting for a lead (largest grade distance first), or decide one.

    \b
    Example:
      golden adjudicate --project news
      golden adjudicate --project news --lead lena --pair q12/doc7 --grade 2 \\
          --reason "answers the question in the second paragraph"
    """
    from curation.agree.adjudication import adjudicate, disagreements, pair_id_of
    from curation.store.projects import get_project
    from curation.store.users import require_user

    with store_session(db_url) as s:
        proj = get_project(s, project_name)
        if pair_ref is None:
            queue = disagreements(s, proj)
            if as_json:
                click.echo(json.dumps([
                    {"qid": d.qid, "docid": d.docid, "distance": d.distance,
                     "labels": {lab.judge: lab.grade for lab in d.labels},
                     "notes": {lab.judge: lab.note for lab in d.labels if lab.note}} for d in queue], indent=2))
                return
            if not queue:
                click.echo("no disagreements wait for a lead")
            for d in queue:
                labels = ", ".join(f"{lab.judge}={lab.grade}" for lab in d.labels)
                click.echo(f"{d.qid}/{d.docid}  distance {d.distance}  {labels}")
            return
        if lead_name is None or grade is None or reason is None:
            raise click.UsageError("deciding a pair needs --lead, --grade and --reason with --pair")
        qid, sep, docid = pair_ref.partition("/")
        if not sep:
            raise click.UsageError(f"--pair {pair_ref!r}: write it as QID/DOCID")
        pair_id = pair_id_of(s, proj, qid, docid)
        if pair_id is None:
            raise click.ClickException(f"--pair: {pair_ref} is not a pair of project {proj.name}")
        lead = require_user(s, lead_name)
        adjudicate(s, proj, pair_id=pair_id, lead=lead, grade=grade, reason=reason,
                   guidelines_issue=guidelines_issue)
    click.echo(f"{pair_ref}: final grade {grade} (adjudicated by {lead_name})")
