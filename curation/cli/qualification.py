"""``golden judging qualification``: a project's qualification before main work (how many known-answer
pairs, the pass mark, the retries), and another attempt for a blocked judge."""

from __future__ import annotations

import click

from curation.cli.base import db_option, domain_errors, main, project_option, store_session


@main.group()
def qualification():
    """Qualification: a new judge answers N known-answer pairs (labelled as qualification, taught
    after each answer) and must reach the pass mark before any main or overlap pair; after a failed
    attempt they may retry with fresh pairs, and once every attempt failed a lead grants another.
    `golden judging progress` shows each judge's state.

    \b
    Example:
      golden judging qualification settings --project news --pairs 10 --pass-mark 0.8 --retries 1
      golden judging qualification grant alice --project news --lead lena
    """


@qualification.command("settings")
@project_option
@click.option("--pairs", type=click.IntRange(min=0), default=None,
              help="Known-answer pairs in a qualification attempt (0: no qualification).")
@click.option("--pass-mark", type=click.FloatRange(0, 1, min_open=True), default=None,
              help="The share of answers that must match the expected grade to pass, e.g. 0.8.")
@click.option("--retries", type=click.IntRange(min=0), default=None,
              help="Further attempts after a failed one (default 1), each with fresh pairs where the set allows.")
@click.option("--lead", "lead_name", metavar="NAME", default=None, help="The lead changing them (for the audit trail).")
@db_option
@domain_errors
def settings_cmd(project_name, pairs, pass_mark, retries, lead_name, db_url):
    """Show or change the project's qualification. Judges who labelled pairs before it was switched
    on carry on without it.

    \b
    Example:
      golden judging qualification settings --project news --pairs 10 --pass-mark 0.8
    """
    from curation.judge.qualification import set_qualification
    from curation.store.projects import get_project
    from curation.store.users import require_user

    with store_session(db_url) as s:
        proj = get_project(s, project_name)
        if (pairs, pass_mark, retries) != (None, None, None):
            set_qualification(s, proj, lead=require_user(s, lead_name) if lead_name else None, pairs=pairs,
                              pass_mark=pass_mark, retries=retries)
        n, mark, tries = proj.qualification_pairs, proj.qualification_pass, proj.qualification_retries
    if not n:
        click.echo(f"project {proj.name}: no qualification (pass mark {mark:g}, {tries} retries when switched on)")
        return
    click.echo(f"project {proj.name}: qualification of {n} known-answer pairs, pass mark {mark:g}, "
               f"{tries} retr{'y' if tries == 1 else 'ies'} after a failed attempt")


@qualification.command("grant")
@click.argument("judge_name", metavar="JUDGE")
@project_option
@click.option("--lead", "lead_name", metavar="NAME", required=True, help="The lead granting it (for the audit trail).")
@db_option
@domain_errors
def grant_cmd(judge_name, project_name, lead_name, db_url):
    """Give a judge who failed every qualification attempt one more (drawn at once).

    \b
    Example:
      golden judging qualification grant alice --project news --lead lena
    """
    from curation.judge.qualification import grant_attempt
    from curation.store.projects import get_project
    from curation.store.roles import is_lead
    from curation.store.users import require_user

    with store_session(db_url) as s:
        proj = get_project(s, project_name)
        lead = require_user(s, lead_name)
        if not is_lead(lead):
            raise click.ClickException(f"--lead: {lead.name} is a {lead.role}; only a lead or admin grants an attempt")
        attempt = grant_attempt(s, proj, require_user(s, judge_name), lead)
        number = attempt.attempt
    click.echo(f"project {proj.name}: {judge_name} may take the qualification again (attempt {number})")
