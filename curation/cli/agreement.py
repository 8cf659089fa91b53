"""``golden labels agreement``: the lead's numbers on how far judges agree, from the command line.

The report is :func:`curation.agree.agreement.build_agreement_report`, the one the ``/lead``
dashboard shows, with the same defaults (:mod:`curation.agree.settings`); this module only formats it."""

from __future__ import annotations

import json

import click

from curation.agree.settings import DEFAULT_THRESHOLDS, DRIFT_WINDOW, RESAMPLES, Thresholds
from curation.cli.base import (
    FiniteFloat,
    db_option,
    domain_errors,
    json_option,
    main,
    project_option,
    seed_option,
    store_session,
)


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
    click.echo(f"project {proj_name}: scale {report.scale[0]}-{report.scale[-1]}, "
               f"judges {', '.join(report.judges) or '-'}")
    click.echo(f"verdict: {v.band.upper()} - {v.message}")
    if v.caveat:
        click.echo(f"  caveat: {v.caveat}")
    click.echo(f"  on {v.on}; thresholds: usable >= {100 * t.usable:.0f}%, marginal >= {100 * t.marginal:.0f}%, "
               f"at least {t.min_pairs} pairs")
    for note in report.notes:
        click.echo(f"note: {note}")
    if report.disagreements is not None:
        d = report.disagreements
        click.echo(f"disagreements: {d.open} wait for a lead (golden labels adjudicate), {d.resolved} adjudicated")
    comps = ([report.overall] if len(report.judges) > 2 else []) + report.pairwise
    for c in comps:
        who = " + ".join(c.judges) if len(c.judges) == 2 else f"all {len(c.judges)} judges"
        click.echo(f"\n{who}: {c.pairs} pairs in {c.queries} queries "
                   f"({int(100 * report.confidence)}% intervals: {report.resamples} query resamples, "
                   f"seed {report.seed})")
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
@project_option
@click.option("--cut", type=int, default=None,
              help="Grade >= CUT counts as relevant for the binary figures (as trec_eval -l); "
                   "default: 1, or the scale's second grade when 1 does not split the scale.")
@json_option
@click.option("--resamples", type=int, default=RESAMPLES, show_default=True,
              help="Bootstrap resamples of the queries for the 95% intervals (0: none).")
@click.option("--usable", type=FiniteFloat(), default=DEFAULT_THRESHOLDS.usable, show_default=True,
              help="Verdict: percent agreement at or above this is usable for a paired comparison.")
@click.option("--marginal", type=FiniteFloat(), default=DEFAULT_THRESHOLDS.marginal, show_default=True,
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
      golden labels agreement --project news
      golden labels agreement --project news --cut 2 --json > agreement.json
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
