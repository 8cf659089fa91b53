"""``golden judging progress``: where the judging stands, per judge and for the project."""

from __future__ import annotations

import click

from curation.cli.base import db_option, domain_errors, echo_json, json_option, main, project_option, store_session


def _share(x) -> str:
    return "–" if x is None else f"{x:.0%}"


def format_progress(r) -> str:
    """The report of :func:`curation.judge.progress.build_progress` as text."""
    from curation.judge.progress import format_duration as _ago

    lines = [
        f"project {r.project}: {r.done_pairs} of {r.assigned_pairs} assigned pairs done, {r.remaining_pairs} to go"
        + (f" ({r.unassigned_pairs} pairs of the pool not assigned)" if r.unassigned_pairs else ""),
        f"answers: {r.done_rows} done, {r.remaining_rows} to go",
        f"pace: {r.pace:.1f} answers an hour over the last hour with answers, {r.pace_session:.1f} over the session; "
        + (f"estimated finish {r.eta:%Y-%m-%d %H:%M} UTC ({r.eta_note})" if r.eta else r.eta_note),
    ]
    if r.overlap_pairs:
        state = "released" if r.released else f"held ({r.held_rows} main pairs wait for a lead's release)"
        lines.append(f"overlap set: {r.overlap_complete} of {r.overlap_pairs} pairs labelled by all "
                     f"{r.overlap_judges} judges; main work {state}")
    else:
        lines.append("overlap set: none")
    lines.append("")
    lines.append(f"{'judge':<14}{'done':>6}{'assigned':>9}{'held':>6}{'/h 1h':>7}{'/h 24h':>8}{'median s':>9}"
                 f"{'unsure':>8}{'skipped':>8}  last active")
    for j in r.judges:
        median = "–" if j.median_seconds is None else f"{j.median_seconds:.1f}"
        last = "never" if j.last_active is None else f"{_ago(j.idle_for)} ago"
        idle = {"idle": f"  IDLE (over {_ago(r.idle_after)})", "done": "  DONE",
                "waiting": "  waiting for the release"}.get(j.state, "")
        lines.append(f"{j.judge:<14}{j.done:>6}{j.assigned:>9}{j.held:>6}{j.per_hour_hour:>7.0f}{j.per_hour_day:>8.1f}"
                     f"{median:>9}{_share(j.unsure_share):>8}{_share(j.skipped_share):>8}  {last}{idle}")
    if not r.judges:
        lines.append("(no judge has pairs assigned: run golden judging assign)")
    lines.extend(format_accuracy(r))
    lines.extend(format_qualification(r.qualification))
    return "\n".join(lines)


def _rate(rate) -> str:
    if rate.value is None:
        return "–"
    return f"{rate.value:.0%} [{rate.low:.0%}, {rate.high:.0%}]"


def format_accuracy(r) -> list[str]:
    """The known-answer part of the report: the known-answer items (apart from the work above) and
    each judge's accuracy on them, with a marker below the bar ("watch" when the interval straddles it)."""
    if not r.known_rate and not r.accuracy:
        return []
    lines = ["", f"known-answer pairs: 1 in {r.known_rate} shown" if r.known_rate else "known-answer pairs: off",
             f"known-answer items: {r.known_done} answered, {r.known_remaining} to go (not counted in the work above)"]
    if r.accuracy:
        lines.append(f"{'judge':<14}{'answered':>9}  {'exact (95% interval)':<22}{'within one':<22}"
                     f"{'recent':<22}state")
    for j in r.accuracy:
        a = j.accuracy
        state = {"below bar": f"BELOW BAR ({a.bar:g})", "watch": "watch"}.get(a.state, a.state)
        lines.append(f"{j.judge:<14}{a.answered:>9}  {_rate(a.exact):<22}{_rate(a.within_one):<22}"
                     f"{_rate(a.recent):<22}{state}" + ("  HELD" if j.held else ""))
    return lines


def format_qualification(rows) -> list[str]:
    """Each judge's qualification state (:func:`curation.judge.qualification.qualification_report`)."""
    if not rows:
        return []
    out = ["", f"qualification: {rows[0].pairs} known-answer pairs, {rows[0].needed} exact to pass",
           f"{'judge':<14}{'state':<14}{'attempt':>9}{'answered':>10}{'exact':>7}"]
    for q in rows:
        attempt = f"{q.attempt} of {q.attempts_allowed}" if q.attempt else "-"
        blocked = q.status == "blocked"
        note = "  BLOCKED: a lead may grant another attempt (golden judging gold grant)" if blocked else ""
        out.append(f"{q.judge:<14}{q.status:<14}{attempt:>9}{q.answered:>10}{q.correct:>7}{note}")
    return out


@main.command()
@project_option
@click.option("--idle-minutes", type=click.IntRange(min=1), default=30, show_default=True,
              help="A judge with pairs to judge and no answer for this long is marked idle.")
@json_option
@db_option
@domain_errors
def progress_cmd(project_name, idle_minutes, as_json, db_url):
    """Where the judging stands: per judge, pairs done / assigned / held, answers per hour over
    the last hour and day, median seconds per pair, share unsure and skipped, last active (idle
    and finished judges marked); for the project, pairs and answers done and to go (pairs of dropped queries
    and excluded documents left out), the pace over the last hour with answers and over the
    session, an estimated finish that says how it was made, and the overlap set's state; and
    with known-answer pairs, each judge's accuracy on them (exact and within one, with 95%
    intervals, and over the recent answers) marked when below the project's bar; when the project
    asks for qualification, each judge's qualification state (passed, in progress, failed, blocked),
    attempt and score. The lead's progress page shows the same figures.

    \b
    Example:
      golden judging progress --project news --idle-minutes 20
    """
    from datetime import timedelta

    from curation.judge.gold import apply_holds
    from curation.judge.progress import build_progress
    from curation.store.projects import get_project

    with store_session(db_url) as s:
        proj = get_project(s, project_name)
        apply_holds(s, proj)  # a judge newly below the bar is held now, when the project asks for it
        report = build_progress(s, proj, idle_after=timedelta(minutes=idle_minutes))
    if as_json:
        echo_json(report.as_dict())
        return
    click.echo(format_progress(report))
