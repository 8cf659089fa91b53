"""Who may do what: the users' roles and the one check of each permission.

A ``judge`` labels the pairs assigned to them; a ``lead`` also reviews agreement, releases work,
adjudicates, writes guidelines and information needs, and ends judges' sessions; an ``admin`` may
do everything a lead may, and manage every account. Every place that asks one of these questions
(the domain functions, the web app's guards and its templates) asks it here. No import: the CLI's
``--help`` reads :data:`ROLES` without loading the store.
"""

from __future__ import annotations

ROLES = ("judge", "lead", "admin")
LEAD_ROLES = ("lead", "admin")  # the roles with a lead's permissions


def _role(who) -> str | None:
    return who if isinstance(who, str) else getattr(who, "role", None)


def is_lead(who) -> bool:
    """A lead or admin (``who``: a role's name, or anything with a ``role``; None is no one)."""
    return _role(who) in LEAD_ROLES


def is_admin(who) -> bool:
    """An admin (``who``: a role's name, or anything with a ``role``; None is no one)."""
    return _role(who) == "admin"


def may_end_sessions(actor, target_role: str) -> bool:
    """An admin may end anyone's sessions; a lead a judge's (and their own)."""
    return is_admin(actor) or target_role == "judge"
