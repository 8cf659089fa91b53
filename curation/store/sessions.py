"""Login sessions of the judging app, kept in the store so that every ``golden serve`` process on it
agrees on them and any of them can end them.

A login makes a :class:`~curation.store.models.LoginSession` row: the cookie carries a random token,
the row its SHA-256 and the user's ``session_version`` at login. A request is signed in while the
row exists, the user is active, the row's version equals the user's, and neither the idle limit
(since the last request) nor the absolute limit (since login) has passed. Logout, a password or
role change, disable and enable, and "end sessions" bump the version (and drop the rows): every
session of that user then fails at its next request, whichever process answers it.

The check is one indexed statement per request (the token's unique index, then the user's primary
key); ``last_seen_at`` is written at most once a minute per session, not on every request.
"""

from __future__ import annotations

import hashlib
import secrets
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import bindparam, delete, func, select, true, update
from sqlmodel import Session

from curation.store.direct import Statement, connection_of, to_datetime
from curation.store.models import LoginSession, User, utcnow


@dataclass(frozen=True)
class SignedIn:
    """Who is logged in, as the web layer needs it on every request: id, name and role (no
    password hash, and no ORM object to load). Accepted wherever a judge or lead is expected."""

    id: int
    name: str
    role: str


DEFAULT_IDLE = timedelta(hours=8)  # a working day without a request
DEFAULT_ABSOLUTE = timedelta(days=7)  # however active, log in again after a week
TOUCH_EVERY = timedelta(seconds=60)  # how stale last_seen_at may get (the idle limit's precision)

_S = LoginSession.__table__
_U = User.__table__

_BY_TOKEN = (
    select(_U.c.id, _U.c.name, _U.c.role, _S.c.id, _S.c.created_at, _S.c.last_seen_at)
    .select_from(_S.join(_U, _U.c.id == _S.c.user_id))
    .where(_S.c.token_hash == bindparam("h"), _U.c.active == true(), _S.c.version == _U.c.session_version)
)
_BY_TOKEN_D = Statement(_BY_TOKEN, prepare=True)  # run on every request: on the driver directly


def hash_token(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def start_session(session: Session, user: User | SignedIn, *, address: str | None = None,
                  user_agent: str | None = None, commit: bool = True) -> str:
    """A new login of ``user``: returns the token for the cookie (the store keeps only its hash).
    Rows of this user that can no longer be valid (an older version) are dropped on the way."""
    token = secrets.token_urlsafe(32)
    version = session.connection().execute(select(_U.c.session_version).where(_U.c.id == user.id)).scalar_one()
    conn = session.connection()
    conn.execute(delete(_S).where(_S.c.user_id == user.id, _S.c.version != version))
    now = utcnow()
    conn.execute(_S.insert().values(token_hash=hash_token(token), user_id=user.id, version=version, created_at=now,
                                    last_seen_at=now, address=(address or None) and address[:200],
                                    user_agent=(user_agent or None) and user_agent[:300]))
    if commit:
        session.commit()
    return token


def session_user(session: Session, token: str, *, idle: timedelta = DEFAULT_IDLE,
                 absolute: timedelta = DEFAULT_ABSOLUTE, now: datetime | None = None) -> SignedIn | None:
    """Who the session with this token belongs to, or None when it is unknown, ended, expired (idle
    or absolute), its user disabled or their sessions ended since. Runs on every request."""
    if not isinstance(token, str) or not token:
        return None
    conn = connection_of(session)
    rows = _BY_TOKEN_D.read_alone(conn, {"h": hash_token(token)})
    if not rows:
        return None
    uid, name, role, sid, created_at, last_seen_at = rows[0]
    created_at, last_seen_at = to_datetime(created_at), to_datetime(last_seen_at)
    now = now or utcnow()
    if now - created_at > absolute or now - last_seen_at > idle:
        session.connection().execute(delete(_S).where(_S.c.id == sid))
        session.commit()
        return None
    if now - last_seen_at > TOUCH_EVERY:
        session.connection().execute(update(_S).where(_S.c.id == sid).values(last_seen_at=now))
        session.commit()
    return SignedIn(uid, name, role)


def end_sessions(session: Session, user_id: int, *, commit: bool = True) -> int:
    """End every session of the user (at its next request, in every process); returns how many
    were open."""
    conn = session.connection()
    conn.execute(update(_U).where(_U.c.id == user_id).values(session_version=_U.c.session_version + 1))
    ended = conn.execute(delete(_S).where(_S.c.user_id == user_id)).rowcount
    if commit:
        session.commit()
    return max(ended or 0, 0)


@dataclass(frozen=True)
class OpenSessions:
    user_id: int
    name: str
    role: str
    active: bool
    sessions: int  # logins not ended (they may have expired: the check drops them at their next request)
    last_seen_at: datetime | None
    last_address: str | None


def open_sessions(session: Session) -> list[OpenSessions]:
    """Every user with how many sessions they have open and when and where one was last used, by name."""
    conn = session.connection()
    counts = {uid: (n, seen) for uid, n, seen in conn.execute(
        select(_S.c.user_id, func.count(), func.max(_S.c.last_seen_at))
        .select_from(_S.join(_U, _U.c.id == _S.c.user_id))
        .where(_S.c.version == _U.c.session_version).group_by(_S.c.user_id))}
    last_address = {}
    for uid, address, _seen in conn.execute(select(_S.c.user_id, _S.c.address, _S.c.last_seen_at)
                                            .order_by(_S.c.last_seen_at)):
        last_address[uid] = address
    out = []
    for uid, name, role, active in conn.execute(select(_U.c.id, _U.c.name, _U.c.role, _U.c.active).order_by(_U.c.name)):
        n, seen = counts.get(uid, (0, None))
        out.append(OpenSessions(uid, name, role, bool(active), n, seen, last_address.get(uid) if n else None))
    return out
