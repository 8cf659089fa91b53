"""``golden admin audit``: the audit trail of the store (who did what, when and from where)."""

from __future__ import annotations

import click

from curation.cli.base import db_option, domain_errors, echo_json, json_option, main, store_session

ACTION_NAMES = (
    "login", "login_failed", "login_locked", "logout", "sessions_ended", "user_added", "password_changed",
    "role_changed", "user_disabled", "user_enabled", "release", "adjudicate", "export", "download",
    "unlock", "guidelines", "need", "leak_decision", "answer_undone", "known_answer_added", "known_answer_retired",
    "known_answer_settings", "judge_held", "hold_released", "qualification_settings", "qualification_granted",
    "project_settings",
)  # curation.store.audit.ACTIONS (a test checks they agree); here so --help needs no SQLAlchemy


@main.command()
@click.option("--action", type=click.Choice(ACTION_NAMES), default=None, help="Only events of this kind.")
@click.option("--user", "who", default=None, metavar="NAME", help="Only events by or about this user.")
@click.option("--limit", type=click.IntRange(1, 1_000_000), default=50, show_default=True,
              help="At most this many events, the newest first.")
@click.option("--locked", is_flag=True, help="Also list the logins locked now (account or address, until when).")
@json_option
@db_option
@domain_errors
def audit_cmd(action, who, limit, locked, as_json, db_url):
    """Show the audit trail: logins (and failed ones, and lock-outs after repeated failures),
    unlocks, logouts and ended sessions, users added, password and role changes, disables and
    enables, releases, guidelines versions, information-need edits, leak decisions, exports (new
    and written again), adjudications, known-answer pairs added and retired and their settings,
    judges held and released, qualification settings and attempts granted, and version downloads,
    with who, when (UTC) and from where
    (the client address in the app, cli:USER@HOST for a command). Newest first.

    \\b
    Example:
      golden admin audit
      golden admin audit --action login_failed --limit 20
      golden admin audit --user alice --json
    """
    from curation.store.audit import list_audit
    from curation.store.throttle import current_locks

    with store_session(db_url) as s:
        events = list_audit(s, limit=limit, action=action, actor=who)
        locks = current_locks(s) if locked else []
    if as_json:
        out = {"events": [e.as_json() for e in events]}
        if locked:
            out["locked"] = [dict(key=lk.key, locked_until=lk.locked_until.isoformat(), lockouts=lk.lockouts)
                             for lk in locks]
        echo_json(out)
        return
    if locked:
        click.echo("locked now:" if locks else "locked now: none")
        for lk in locks:
            click.echo(f"  {lk.key}  until {lk.locked_until:%Y-%m-%d %H:%M:%S} UTC  (lock {lk.lockouts} in a row)")
    if not events:
        click.echo("no audit events" + (" of that kind" if action or who else " yet"))
    for e in events:
        on = f" {_printable(e.target)}" if e.target else ""
        proj = f" [project {e.project_id}]" if e.project_id else ""
        detail = f"  {e.detail}" if e.detail else ""
        click.echo(f"{e.at:%Y-%m-%d %H:%M:%S}  {e.action:<16} {_printable(e.actor) or '-':<16}{on}{proj}"
                   f"  from {e.address or '?'}{detail}")


def _printable(value: str | None) -> str | None:
    """A name as one line: control characters (a newline in a name someone typed) shown escaped."""
    if value is None:
        return None
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode("ascii") for ch in value)
