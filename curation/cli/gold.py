"""``golden judging gold``: known-answer pairs: add them (from adjudicated labels, seed judgments or
by hand), list and retire them, set how often they are mixed into the judges' queues and the
qualification new judges pass first, release a judge held for falling below the accuracy bar,
and grant a judge who failed the qualification another attempt."""

from __future__ import annotations

import click

from curation.cli.base import db_option, domain_errors, echo_json, json_option, main, project_option, store_session


@main.group()
def gold():
    """Known-answer pairs: pairs whose accepted grade a lead fixed, mixed blind into each judge's
    queue to follow each judge's accuracy (shown by `golden judging progress`), and answered by new
    judges as a qualification before their work (taught after each answer). Answers on them are
    never labels of the pool.

    \b
    Example:
      golden judging gold add --project news --from adjudicated --lead lena --limit 40
      golden judging gold settings --project news --rate 20 --bar 0.6 --hold
      golden judging gold settings --project news --qualification 10 --pass-mark 0.8
      golden judging gold list --project news
    """


@gold.command("add")
@project_option
@click.option("--from", "source", type=click.Choice(["adjudicated", "seed"]), default=None,
              help="Take the pairs a lead adjudicated (their grade, their reason as the teaching text), or the "
                   "seed judgments' pairs that are in the pool.")
@click.option("--limit", type=click.IntRange(min=1), default=None,
              help="With --from: at most this many, drawn at random.")
@click.option("--seed", type=int, default=0, show_default=True, help="Seed of the draw (--limit) and of the mixing.")
@click.option("--pair", nargs=2, metavar="QID DOCID", default=None, help="One pair, given by hand (with --grade).")
@click.option("--grade", "grades", type=int, multiple=True,
              help="An accepted grade of --pair; repeat when several grades are right.")
@click.option("--reason", default=None,
              help="Why these grades (shown to a judge in qualification, never in main work).")
@click.option("--lead", "lead_name", metavar="NAME", default=None, help="The lead adding them (for the audit trail).")
@db_option
@domain_errors
def add_cmd(project_name, source, limit, seed, pair, grades, reason, lead_name, db_url):
    """Add known-answer pairs to the project, then mix them into the judges' queues at the
    project's rate (`gold settings --rate`).

    \b
    Example:
      golden judging gold add --project news --from adjudicated --limit 40 --lead lena
      golden judging gold add --project news --from seed
      golden judging gold add --project news --pair q12 doc7 --grade 2 --reason "answers the question"
    """
    from curation.agree.known_pairs import add_from
    from curation.judge.gold import KnownEntry, add_known
    from curation.store.projects import get_project
    from curation.store.users import require_user

    if (source is None) == (pair is None):
        raise click.UsageError("give either --from adjudicated|seed or --pair QID DOCID --grade G")
    if pair is not None and not grades:
        raise click.UsageError("--pair needs at least one --grade")
    with store_session(db_url) as s:
        proj = get_project(s, project_name)
        lead = require_user(s, lead_name) if lead_name else None
        if source is not None:
            n = add_from(s, proj, source, lead=lead, limit=limit, seed=seed)
        else:
            n = add_known(s, proj, [KnownEntry(pair[0], pair[1], tuple(grades), reason)], source="lead", lead=lead,
                          seed=seed)
        rate = proj.known_answer_rate
    click.echo(f"project {proj.name}: {n} known-answer pair(s) added"
               + (f"; mixed in at 1 in {rate}" if rate else "; not mixed in yet (set a rate: gold settings --rate 20)"))


@gold.command("list")
@project_option
@click.option("--all", "include_retired", is_flag=True, help="Also the retired pairs.")
@json_option
@db_option
@domain_errors
def list_cmd(project_name, include_retired, as_json, db_url):
    """List the known-answer pairs: accepted grades, source, how often judges answered them and got
    them right.

    \b
    Example:
      golden judging gold list --project news
    """
    from curation.judge.gold import list_known
    from curation.store.projects import get_project

    with store_session(db_url) as s:
        proj = get_project(s, project_name)
        pairs = list_known(s, proj, include_retired=include_retired)
    if as_json:
        echo_json([{"qid": k.qid, "docid": k.docid, "grades": list(k.grades), "reason": k.reason, "source": k.source,
                    "created_by": k.created_by, "retired": k.retired_at is not None, "answers": k.answers,
                    "exact": k.exact} for k in pairs])
        return
    if not pairs:
        click.echo(f"project {proj.name}: no known-answer pairs (add some: golden judging gold add --from adjudicated)")
    for k in pairs:
        grades = "/".join(map(str, k.grades))
        click.echo(f"{k.qid}/{k.docid}  grade {grades}  {k.source}  answered {k.answers} ({k.exact} exact)"
                   + ("  retired" if k.retired_at else ""))


@gold.command("retire")
@project_option
@click.option("--pair", "pairs", nargs=2, multiple=True, required=True, metavar="QID DOCID",
              help="A known-answer pair to retire; repeat for several.")
@click.option("--lead", "lead_name", metavar="NAME", default=None, help="The lead retiring them (for the audit trail).")
@db_option
@domain_errors
def retire_cmd(project_name, pairs, lead_name, db_url):
    """Stop mixing known-answer pairs into queues (answers already given still count).

    \b
    Example:
      golden judging gold retire --project news --pair q12 doc7
    """
    from curation.judge.gold import retire_known
    from curation.store.projects import get_project
    from curation.store.users import require_user

    with store_session(db_url) as s:
        proj = get_project(s, project_name)
        n = retire_known(s, proj, [tuple(p) for p in pairs], lead=require_user(s, lead_name) if lead_name else None)
    click.echo(f"project {proj.name}: {n} known-answer pair(s) retired")


@gold.command("settings")
@project_option
@click.option("--rate", type=click.IntRange(min=0), default=None,
              help="One known-answer pair in every N pairs a judge is shown (0: none).")
@click.option("--bar", type=click.FloatRange(0, 1, min_open=True, max_open=True), default=None,
              help="The exact accuracy a judge must be shown to fall below to be flagged.")
@click.option("--hold/--no-hold", default=None, help="Hold a flagged judge's queue until a lead releases it.")
@click.option("--qualification", "qual_pairs", type=click.IntRange(min=0), default=None,
              help="New judges first answer this many known-answer pairs, taught after each, and must pass "
                   "before any main or overlap pair (0: no qualification).")
@click.option("--pass-mark", type=click.FloatRange(0, 1, min_open=True), default=None,
              help="The share of qualification answers that must match the expected grade, e.g. 0.8.")
@click.option("--retries", type=click.IntRange(min=0), default=None,
              help="Further qualification attempts after a failed one (default 1), with fresh pairs where the set "
                   "allows; then a lead may grant more (gold grant).")
@click.option("--lead", "lead_name", metavar="NAME", default=None, help="The lead changing them (for the audit trail).")
@db_option
@domain_errors
def settings_cmd(project_name, rate, bar, hold, qual_pairs, pass_mark, retries, lead_name, db_url):
    """Show or change how known-answer pairs are used in the project: mixed blind into the queues,
    and as a qualification before a new judge's main work (judges who labelled pairs before it
    was switched on carry on without it).

    \b
    Example:
      golden judging gold settings --project news --rate 20 --bar 0.6 --hold
      golden judging gold settings --project news --qualification 10 --pass-mark 0.8 --retries 1
    """
    from curation.judge.gold import set_known_settings
    from curation.judge.qualification import set_qualification
    from curation.store.projects import get_project
    from curation.store.users import require_user

    with store_session(db_url) as s:
        proj = get_project(s, project_name)
        lead = require_user(s, lead_name) if lead_name else None
        if (rate, bar, hold) != (None, None, None):
            set_known_settings(s, proj, lead=lead, rate=rate, bar=bar, hold=hold)
        if (qual_pairs, pass_mark, retries) != (None, None, None):
            set_qualification(s, proj, lead=lead, pairs=qual_pairs, pass_mark=pass_mark, retries=retries)
        rate, bar, hold = proj.known_answer_rate, proj.known_answer_bar, proj.known_answer_hold
        n, mark, tries = proj.qualification_pairs, proj.qualification_pass, proj.qualification_retries
    click.echo(f"project {proj.name}: known-answer rate {'1 in ' + str(rate) if rate else 'off'}, bar {bar:g}, "
               f"{'hold' if hold else 'no hold'} below the bar")
    click.echo(f"qualification: {n} known-answer pairs, pass mark {mark:g}, {tries} retr{'y' if tries == 1 else 'ies'} "
               "after a failed attempt" if n else "qualification: off")


def _lead_action(s, project_name: str, lead_name: str, judge_name: str, what: str):
    """The project, the lead (a lead or admin, else a usage error saying who may ``what``) and the
    judge of a lead's action on one judge."""
    from curation.store.projects import get_project
    from curation.store.roles import is_lead
    from curation.store.users import require_user

    proj = get_project(s, project_name)
    lead = require_user(s, lead_name)
    if not is_lead(lead):
        raise click.ClickException(f"--lead: {lead.name} is a {lead.role}; only a lead or admin {what}")
    return proj, lead, require_user(s, judge_name)


@gold.command("release")
@click.argument("judge_name", metavar="JUDGE")
@project_option
@click.option("--lead", "lead_name", metavar="NAME", required=True, help="The lead releasing the hold.")
@db_option
@domain_errors
def release_cmd(judge_name, project_name, lead_name, db_url):
    """Release a judge whose queue was held for falling below the accuracy bar.

    \b
    Example:
      golden judging gold release alice --project news --lead lena
    """
    from curation.judge.gold import release_hold

    with store_session(db_url) as s:
        proj, lead, judge = _lead_action(s, project_name, lead_name, judge_name, "releases a hold")
        release_hold(s, proj, judge, lead)
    click.echo(f"project {proj.name}: {judge_name}'s queue released")


@gold.command("grant")
@click.argument("judge_name", metavar="JUDGE")
@project_option
@click.option("--lead", "lead_name", metavar="NAME", required=True, help="The lead granting it (for the audit trail).")
@db_option
@domain_errors
def grant_cmd(judge_name, project_name, lead_name, db_url):
    """Give a judge who failed every qualification attempt one more, drawn at once (as the button
    on the lead's Progress page does).

    \b
    Example:
      golden judging gold grant nina --project news --lead lena
    """
    from curation.judge.qualification import grant_attempt

    with store_session(db_url) as s:
        proj, lead, judge = _lead_action(s, project_name, lead_name, judge_name, "grants an attempt")
        number = grant_attempt(s, proj, judge, lead).attempt
    click.echo(f"project {proj.name}: {judge_name} may take the qualification again (attempt {number})")
