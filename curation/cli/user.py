"""``golden admin user``: add judges, leads and admins, list them, change a password or role, disable or
enable a login, and end a user's sessions in the judging app. Every change is in the audit trail
(``golden admin audit``); ``unlock`` clears failed-login locks; a password or role
change, disable and enable end the user's sessions."""

from __future__ import annotations

import click

from curation.cli.base import db_option, domain_errors, echo_json, json_option, main, store_session
from curation.store.roles import ROLES


@main.group()
def user():
    """Manage the people who log in to the judging app.

    A password or role change, disable, enable and logout end every session of the user in the
    judging app at its next request (in every `golden serve` process on the store).

    \b
    Example:
      golden admin user add alice --role judge
      golden admin user list
      golden admin user role alice lead
      golden admin user disable alice
    """


@user.command("add")
@click.argument("name")
@click.option("--role", type=click.Choice(ROLES), default="judge", show_default=True,
              help="judge labels pairs; lead also reviews agreement and releases work; admin manages.")
@click.option("--password", default=None, help="The password; without it you are asked (empty: one is generated).")
@click.option("--generate", is_flag=True, help="Generate a random password and print it.")
@db_option
@domain_errors
def add_cmd(name, role, password, generate, db_url):
    """Add a user NAME with a role and a password (hashed with werkzeug; never stored in clear).

    \b
    Example:
      golden admin user add alice --role judge --generate
      golden admin user add lena --role lead          # asks for the password
    """
    from curation.store.users import add_user, generate_password

    shown = False
    if password is None:
        if generate:
            password, shown = generate_password(), True
        else:
            password = click.prompt("Password (empty to generate one)", default="", hide_input=True,
                                    confirmation_prompt=True, show_default=False)
            if not password:
                password, shown = generate_password(), True
    with store_session(db_url) as s:
        u = add_user(s, name, role=role, password=password)
    click.echo(f"added {u.role} {u.name}" + (f" with password {password}" if shown else ""))


@user.command("list")
@db_option
@json_option
def list_cmd(db_url, as_json):
    """List the users, their roles and their open sessions in the judging app.

    \b
    Example:
      golden admin user list
      golden admin user list --json
    """
    from curation.store.sessions import open_sessions

    with store_session(db_url) as s:
        rows = open_sessions(s)
    if as_json:
        echo_json([dict(name=r.name, role=r.role, active=r.active, sessions=r.sessions,
                        last_seen_at=r.last_seen_at.isoformat() if r.last_seen_at else None,
                        last_address=r.last_address) for r in rows])
        return
    if not rows:
        click.echo("no users yet: add one with `golden admin user add NAME --role judge`")
    for r in rows:
        sessions = f"  {r.sessions} session{'s' if r.sessions != 1 else ''}" if r.sessions else ""
        click.echo(f"{r.name:<20} {r.role:<6}{'' if r.active else '  (disabled)'}{sessions}")


@user.command("passwd")
@click.argument("name")
@click.option("--password", default=None, help="The new password; without it you are asked.")
@db_option
@domain_errors
def passwd_cmd(name, password, db_url):
    """Set NAME's password; their sessions in the judging app end (they log in with the new one)
    and their failed-login locks are cleared.

    \b
    Example:
      golden admin user passwd alice
    """
    from curation.store.users import require_user, set_password

    if password is None:
        password = click.prompt("New password", hide_input=True, confirmation_prompt=True)
    with store_session(db_url) as s:
        set_password(s, require_user(s, name), password)
    click.echo(f"password of {name} changed")


@user.command("unlock")
@click.argument("name")
@db_option
@domain_errors
def unlock_cmd(name, db_url):
    """Clear NAME's failed-login locks and slowdowns (from every address and device), so they can
    log in at once. Recorded in the audit trail.

    \b
    Example:
      golden admin user unlock alice
    """
    from curation.store.users import require_user, unlock_user

    with store_session(db_url) as s:
        held = unlock_user(s, require_user(s, name))
    click.echo(f"unlocked {name}" + (f" ({held} lock{'s' if held != 1 else ''} cleared)" if held else
                                    " (no lock was holding their logins)"))


@user.command("role")
@click.argument("name")
@click.argument("role", type=click.Choice(ROLES))
@db_option
@domain_errors
def role_cmd(name, role, db_url):
    """Give NAME another ROLE (judge, lead or admin); their sessions end, so the next page they
    open is seen with the new role after logging in again.

    \b
    Example:
      golden admin user role alice lead
    """
    from curation.store.users import require_user, set_role

    with store_session(db_url) as s:
        user = require_user(s, name)
        old = user.role
        changed = set_role(s, user, role)
    click.echo(f"{name} is now a {role} (was {old}); their sessions ended" if changed
               else f"{name} is already a {role}")


@user.command("disable")
@click.argument("name")
@db_option
@domain_errors
def disable_cmd(name, db_url):
    """Disable NAME's login: they are logged out at their next request and cannot log in again
    until `golden admin user enable`. Their judgments stay.

    \b
    Example:
      golden admin user disable alice
    """
    from curation.store.users import require_user, set_active

    with store_session(db_url) as s:
        set_active(s, require_user(s, name), False)
    click.echo(f"{name} is disabled; their sessions ended")


@user.command("enable")
@click.argument("name")
@db_option
@domain_errors
def enable_cmd(name, db_url):
    """Enable NAME's login again (they log in afresh: sessions from before are not revived).

    \b
    Example:
      golden admin user enable alice
    """
    from curation.store.users import require_user, set_active

    with store_session(db_url) as s:
        set_active(s, require_user(s, name), True)
    click.echo(f"{name} is enabled; they can log in again")


@user.command("logout")
@click.argument("name")
@db_option
@domain_errors
def logout_cmd(name, db_url):
    """End every session of NAME in the judging app (e.g. a laptop left logged in); they can log
    in again.

    \b
    Example:
      golden admin user logout alice
    """
    from curation.store.users import end_user_sessions, require_user

    with store_session(db_url) as s:
        n = end_user_sessions(s, require_user(s, name))
    click.echo(f"ended {n} session{'s' if n != 1 else ''} of {name}")
