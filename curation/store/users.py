"""Users of the judging app: judges, leads and admins, with hashed passwords.

Passwords are hashed with werkzeug's ``generate_password_hash`` (scrypt by default) and checked
with ``check_password_hash``; the plain text is never stored.

``GOLDEN_PASSWORD_HASH_METHOD`` (a werkzeug method string such as ``pbkdf2:sha256:1000``) overrides
the method for new hashes. It exists for the test suite, which creates hundreds of users; never set
it on a server that real people log in to.
"""

from __future__ import annotations

import os
import re
import secrets

from sqlalchemy import bindparam, true
from sqlalchemy import select as core_select
from sqlmodel import Session, select
from werkzeug.security import check_password_hash, generate_password_hash

from curation.store.models import User
from curation.store.roles import ROLES
from curation.store.sessions import SignedIn

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._@-]{0,63}$")
MIN_PASSWORD = 8


def hash_password(password: str) -> str:
    """werkzeug's salted hash of ``password`` (scrypt unless GOLDEN_PASSWORD_HASH_METHOD says otherwise)."""
    method = os.environ.get("GOLDEN_PASSWORD_HASH_METHOD")
    return generate_password_hash(password, method=method) if method else generate_password_hash(password)


def generate_password(*, nbytes: int = 12) -> str:
    """A random password (URL-safe text from ``secrets``), for ``golden admin user add`` without one."""
    return secrets.token_urlsafe(nbytes)


def _check_name(name: str) -> str:
    if not isinstance(name, str) or not _NAME.match(name):
        raise ValueError(
            f"name {name!r} is not a valid user name: use 1-64 letters, digits, '.', '_', '@' or '-', "
            "starting with a letter or digit"
        )
    return name


def _check_role(role: str) -> str:
    if role not in ROLES:
        raise ValueError(f"role {role!r} is not one of {', '.join(ROLES)}")
    return role


def _check_password(password: str) -> str:
    if not isinstance(password, str) or len(password) < MIN_PASSWORD:
        raise ValueError(f"password must have at least {MIN_PASSWORD} characters")
    return password


def add_user(session: Session, name: str, *, role: str = "judge", password: str, by=None) -> User:
    """Create and commit a user; ValueError when the name is taken, the role unknown or the
    password shorter than ``MIN_PASSWORD``."""
    _check_name(name)
    _check_role(role)
    _check_password(password)
    if get_user(session, name) is not None:
        raise ValueError(f"name {name!r} is taken: choose another name, or use `golden admin user passwd {name}`")
    user = User(name=name, role=role, password_hash=hash_password(password))
    session.add(user)
    session.flush()
    _audit(session, "user_added", user, detail={"role": role}, by=by)
    session.commit()
    session.refresh(user)
    return user


def get_user(session: Session, name: str) -> User | None:
    """The user called ``name``, or None."""
    return session.exec(select(User).where(User.name == name)).first()


_ACTIVE_BY_ID = core_select(User.__table__.c.id, User.__table__.c.name, User.__table__.c.role).where(
    User.__table__.c.id == bindparam("uid"), User.__table__.c.active == true()
)


def signed_in(session: Session, user_id: int) -> SignedIn | None:
    """The active user with this id, or None: one indexed statement, no ORM load. (The web app's
    sessions are checked by :func:`curation.store.sessions.session_user`, which also knows about
    ended and expired sessions.)"""
    row = session.connection().execute(_ACTIVE_BY_ID, {"uid": user_id}).first()
    return SignedIn(*row) if row else None


def require_user(session: Session, name: str) -> User:
    """The user called ``name``; ValueError saying how to add them when there is none."""
    user = get_user(session, name)
    if user is None:
        raise ValueError(f"no user {name!r}: add them with `golden admin user add {name} --role judge`")
    return user


def list_users(session: Session) -> list[User]:
    """All users, by name."""
    return list(session.exec(select(User).order_by(User.name)))


def authenticate(session: Session, name: str, password: str) -> User | None:
    """The active user when ``password`` is theirs, else None (same answer for unknown names)."""
    user = get_user(session, name) if isinstance(name, str) else None
    if user is None or not user.active:
        # Hash anyway so an unknown name takes as long as a wrong password.
        check_password_hash(_DUMMY_HASH, password or "")
        return None
    if not check_password_hash(user.password_hash, password or ""):
        return None
    return user


def _audit(session: Session, action: str, user: User, *, detail=None, by=None) -> None:
    from curation.store.audit import record_audit

    record_audit(session, action, actor=by, target=user.name, detail=detail)


def _end_sessions(session: Session, user: User) -> None:
    """Every session of ``user`` stops working at its next request (in the caller's transaction)."""
    from curation.store.sessions import end_sessions

    session.flush()
    end_sessions(session, user.id, commit=False)
    session.refresh(user)


def set_password(session: Session, user: User, password: str, *, by=None) -> None:
    """Replace ``user``'s password, end their sessions (a stolen cookie dies with the old
    password), clear their failed-login locks (:func:`unlock_user`) and commit. ``by``: who did
    it, for the audit trail (default: the command's user)."""
    _check_password(password)
    user.password_hash = hash_password(password)
    session.add(user)
    _end_sessions(session, user)
    held = _unlock(session, user)
    _audit(session, "password_changed", user, detail={"unlocked": held} if held else None, by=by)
    session.commit()


def _unlock(session: Session, user: User) -> int:
    from curation.store.throttle import unlock_account

    return unlock_account(session, user.name)


def unlock_user(session: Session, user: User, *, by=None) -> int:
    """Clear every failed-login count and lock of ``user`` (from every address and device) and
    commit; returns how many were holding their logins now. Audited as ``unlock``."""
    held = _unlock(session, user)
    _audit(session, "unlock", user, detail={"held": held}, by=by)
    session.commit()
    return held


def set_role(session: Session, user: User, role: str, *, by=None) -> bool:
    """Give ``user`` another role, end their sessions (the next page is seen with the new role
    after logging in again) and commit; False (and nothing done) when it is their role already."""
    _check_role(role)
    if user.role == role:
        return False
    old = user.role
    user.role = role
    session.add(user)
    _end_sessions(session, user)
    _audit(session, "role_changed", user, detail={"from": old, "to": role}, by=by)
    session.commit()
    return True


def set_active(session: Session, user: User, active: bool, *, by=None) -> None:
    """Enable or disable a login (a disabled user cannot authenticate) and commit. Either way the
    user's sessions end: a disabled user is out at once, an enabled one logs in afresh."""
    changed = bool(user.active) != bool(active)
    user.active = bool(active)
    session.add(user)
    _end_sessions(session, user)
    if changed:
        _audit(session, "user_enabled" if active else "user_disabled", user, by=by)
    session.commit()


def end_user_sessions(session: Session, user: User, *, by=None) -> int:
    """End every session of ``user`` now (an admin's or lead's "log them out everywhere"); returns
    how many were open."""
    from curation.store.sessions import end_sessions

    n = end_sessions(session, user.id, commit=False)
    _audit(session, "sessions_ended", user, detail={"sessions": n}, by=by)
    session.commit()
    session.refresh(user)
    return n


_DUMMY_HASH = hash_password("not-a-real-password")
