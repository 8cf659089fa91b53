"""``golden user``: add judges, leads and admins, and list them."""

from __future__ import annotations

import click

from curation.cli.base import db_option, domain_errors, main, store_session


@main.group()
def user():
    """Manage the people who log in to the judging app.

    \b
    Example:
      golden user add alice --role judge
      golden user list
    """


@user.command("add")
@click.argument("name")
@click.option("--role", type=click.Choice(["judge", "lead", "admin"]), default="judge", show_default=True,
              help="judge labels pairs; lead also reviews agreement and releases work; admin manages.")
@click.option("--password", default=None, help="The password; without it you are asked (empty: one is generated).")
@click.option("--generate", is_flag=True, help="Generate a random password and print it.")
@db_option
@domain_errors
def add(name, role, password, generate, db_url):
    """Add a user NAME with a role and a password (hashed with werkzeug; never stored in clear).

    \b
    Example:
      golden user add alice --role judge --generate
      golden user add lena --role lead          # asks for the password
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
def list_(db_url):
    """List the users and their roles.

    \b
    Example:
      golden user list
    """
    from curation.store.users import list_users

    with store_session(db_url) as s:
        users = list_users(s)
    if not users:
        click.echo("no users yet: add one with `golden user add NAME --role judge`")
    for u in users:
        click.echo(f"{u.name:<20} {u.role:<6}{'' if u.active else '  (disabled)'}")


@user.command("passwd")
@click.argument("name")
@click.option("--password", default=None, help="The new password; without it you are asked.")
@db_option
@domain_errors
def passwd(name, password, db_url):
    """Set NAME's password.

    \b
    Example:
      golden user passwd alice
    """
    from curation.store.users import require_user, set_password

    if password is None:
        password = click.prompt("New password", hide_input=True, confirmation_prompt=True)
    with store_session(db_url) as s:
        set_password(s, require_user(s, name), password)
    click.echo(f"password of {name} changed")
