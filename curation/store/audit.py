"""The audit trail: who did what, when and from where (logins, failed logins, lock-outs and unlocks,
role changes, disables, ended sessions, releases, guidelines versions, information-need edits, leak
decisions, exports, adjudications, downloads).

:func:`record_audit` is the one writer. It adds the row to the caller's session without committing
by default, so an event is stored in the same transaction as the change it describes (a release that
rolls back leaves no "release" row). "From where" is the client address for a request of the web
app (it sets :data:`ORIGIN` per request) and ``cli:USER@HOST`` for a command. :func:`list_audit` is
the one reader, for ``golden admin audit`` and the admin page.
"""

from __future__ import annotations

import getpass
import json
import socket
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache

from sqlmodel import Session, select

from curation.store.models import AuditEvent, utcnow

# The client address of the web request being answered (set by the app before each request);
# None outside a request, where the event comes from a command.
ORIGIN: ContextVar[str | None] = ContextVar("golden_audit_origin", default=None)

ACTIONS = {
    "login": "logged in",
    "login_failed": "failed to log in",
    "login_locked": "logins locked after repeated failures",
    "logout": "logged out",
    "sessions_ended": "sessions ended",
    "user_added": "user added",
    "password_changed": "password changed",
    "role_changed": "role changed",
    "user_disabled": "user disabled",
    "user_enabled": "user enabled",
    "release": "main pairs released",
    "adjudicate": "final label recorded",
    "export": "version exported",
    "download": "version downloaded",
    "unlock": "logins unlocked",
    "guidelines": "guidelines version added",
    "need": "information need edited",
    "leak_decision": "leak finding decided",
    "answer_undone": "a judge undid their last answer",
    "known_answer_added": "known-answer pairs added",
    "known_answer_retired": "known-answer pairs retired",
    "known_answer_settings": "known-answer settings changed",
    "judge_held": "a judge's queue held (known-answer accuracy below the bar)",
    "hold_released": "a judge's held queue released",
    "qualification_settings": "qualification settings changed",
    "qualification_granted": "another qualification attempt granted",
    "project_settings": "project setting changed",
}


@lru_cache(maxsize=1)
def cli_origin() -> str:
    """``cli:USER@HOST``: where a command's event comes from."""
    try:
        user = getpass.getuser()
    except Exception:  # no login name (a container without /etc/passwd entry)
        user = "?"
    return f"cli:{user}@{socket.gethostname()}"


def _name(actor) -> tuple[str | None, int | None]:
    if actor is None:
        return None, None
    if isinstance(actor, str):
        return actor, None
    return getattr(actor, "name", None), getattr(actor, "id", None)


def record_audit(session: Session, action: str, *, actor=None, target: str | None = None, project=None,
                 detail: dict | str | None = None, address: str | None = None, commit: bool = False) -> AuditEvent:
    """Add an audit event to ``session`` (committed with the caller's transaction, or now with
    ``commit``). ``actor``: a User, a signed-in user or a name (None: the operating-system user of a
    command); ``project``: a Project or its id; ``detail``: a dict (stored as JSON) or text;
    ``address``: default the request's client address, or ``cli:USER@HOST``."""
    if action not in ACTIONS:
        raise ValueError(f"action: {action!r} is not one of {', '.join(ACTIONS)}")
    name, actor_id = _name(actor)
    origin = address or ORIGIN.get() or cli_origin()
    if name is None and origin.startswith("cli:"):
        name = origin[4:].split("@", 1)[0]
    if isinstance(detail, dict):
        detail = json.dumps(detail, ensure_ascii=False, sort_keys=True)
    project_id = getattr(project, "id", project)
    event = AuditEvent(action=action, actor=(name or None) and name[:200], actor_id=actor_id,
                       target=target[:300] if target else None, project_id=project_id,
                       address=origin[:200], detail=detail, at=utcnow())
    session.add(event)
    if commit:
        session.commit()
    return event


@dataclass(frozen=True)
class AuditRow:
    id: int
    at: datetime
    action: str
    what: str
    actor: str | None
    target: str | None
    project_id: int | None
    address: str | None
    detail: str | None

    def as_json(self) -> dict:
        return dict(id=self.id, at=self.at.isoformat(), action=self.action, actor=self.actor, target=self.target,
                    project_id=self.project_id, address=self.address,
                    detail=_maybe_json(self.detail))


def _maybe_json(text: str | None):
    if text is None:
        return None
    try:
        return json.loads(text)
    except ValueError:
        return text


def list_audit(session: Session, *, limit: int = 200, action: str | None = None, actor: str | None = None,
               since: datetime | None = None) -> list[AuditRow]:
    """The latest events first (at most ``limit``), optionally of one action, by one actor (or about
    them: the target), or since a time."""
    stmt = select(AuditEvent).order_by(AuditEvent.at.desc(), AuditEvent.id.desc()).limit(limit)
    if action:
        stmt = stmt.where(AuditEvent.action == action)
    if actor:
        stmt = stmt.where((AuditEvent.actor == actor) | (AuditEvent.target == actor))
    if since is not None:
        stmt = stmt.where(AuditEvent.at >= since)
    return [AuditRow(e.id, e.at, e.action, ACTIONS.get(e.action, e.action), e.actor, e.target, e.project_id,
                     e.address, e.detail) for e in session.exec(stmt)]
