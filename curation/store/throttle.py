"""Login throttling, per account and per client address, kept in the store so that every ``golden
serve`` process on it counts the same failures.

After ``max_failures`` failed logins within ``window`` (5 in 15 minutes for an account, more for an
address, which an office may share behind one NAT), the key is locked for ``base_lock``; each
further lock-out in a row lasts twice as long as the last (exponential back-off, at most
``max_lock``), until a day passes without a failure or the account logs in. While a key is locked the
login is refused with the time left (the web app answers 429 with ``Retry-After``) *before* the
password is checked, so a locked login costs no password hash; an unknown name is counted and
locked exactly like a known one (same answers, same work).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, select
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from curation.store.models import LoginThrottle, utcnow

_T = LoginThrottle.__table__


@dataclass(frozen=True)
class ThrottlePolicy:
    max_failures: int = 5  # per account, within the window
    address_max_failures: int = 20  # per client address, within the window
    window: timedelta = timedelta(minutes=15)
    base_lock: timedelta = timedelta(minutes=1)
    max_lock: timedelta = timedelta(hours=1)
    forget_after: timedelta = timedelta(days=1)  # lock-outs in a row are forgotten after a quiet day

    def limit(self, key: str) -> int:
        return self.address_max_failures if key.startswith("address:") else self.max_failures

    def lock_for(self, lockouts: int) -> timedelta:
        """The length of the ``lockouts``-th lock in a row: base_lock, twice that, four times..."""
        return min(self.base_lock * (2 ** min(max(lockouts - 1, 0), 30)), self.max_lock)


DEFAULT_POLICY = ThrottlePolicy()


def account_key(name: str) -> str:
    """The key of a login name (casefolded, bounded): the same for a known and an unknown name."""
    return "account:" + (name or "").strip().casefold()[:120]


def address_key(address: str | None) -> str:
    return "address:" + (address or "unknown")[:100]


def keys_for(name: str, address: str | None) -> list[str]:
    return [account_key(name), address_key(address)]


def seconds_locked(session: Session, keys: list[str], *, now: datetime | None = None) -> int:
    """Seconds until every key in ``keys`` is unlocked (0: the login may be tried)."""
    now = now or utcnow()
    rows = session.connection().execute(select(_T.c.locked_until).where(_T.c.key.in_(keys))).scalars()
    waits = [(until - now).total_seconds() for until in rows if until is not None and until > now]
    return math.ceil(max(waits)) if waits else 0


@dataclass(frozen=True)
class Failure:
    locked_seconds: int  # 0 when this failure did not lock anything
    locked_keys: tuple[str, ...]  # the keys this failure locked
    failures: dict  # key -> failures in its window, this one included


def _get_or_create(session: Session, key: str) -> LoginThrottle:
    stmt = select(LoginThrottle).where(LoginThrottle.key == key).with_for_update()
    row = session.scalars(stmt).first()
    if row is not None:
        return row
    row = LoginThrottle(key=key)
    try:
        with session.begin_nested():
            session.add(row)
    except IntegrityError:  # another process made it at the same moment
        row = session.scalars(stmt).first()
    return row


def record_failure(session: Session, keys: list[str], *, policy: ThrottlePolicy = DEFAULT_POLICY,
                   now: datetime | None = None, commit: bool = True) -> Failure:
    """Count a failed login against each key; lock a key that reaches its limit (doubling the lock
    of the one before). Rows are locked while counted (SELECT ... FOR UPDATE on PostgreSQL; SQLite
    has one writer at a time)."""
    now = now or utcnow()
    locked: list[str] = []
    wait = 0
    counts = {}
    for key in keys:
        row = _get_or_create(session, key)
        if row.window_start is None or now - row.window_start > policy.window:
            row.failures = 0
            row.window_start = now
        if row.last_failure_at is not None and now - row.last_failure_at > policy.forget_after:
            row.lockouts = 0
        row.failures += 1
        row.last_failure_at = now
        counts[key] = row.failures
        if row.failures >= policy.limit(key):
            row.lockouts += 1
            lock = policy.lock_for(row.lockouts)
            row.locked_until = now + lock
            row.failures = 0
            row.window_start = None
            locked.append(key)
            wait = max(wait, math.ceil(lock.total_seconds()))
        session.add(row)
    if commit:
        session.commit()
    return Failure(wait, tuple(locked), counts)


def record_success(session: Session, name: str, *, policy: ThrottlePolicy = DEFAULT_POLICY,
                   commit: bool = True) -> None:
    """A successful login clears its account's count and back-off (not its address's: one valid
    account must not reset the count of guesses at others from the same address), and drops the
    counters nobody has failed on for a day (:func:`forget_old`)."""
    session.connection().execute(delete(_T).where(_T.c.key == account_key(name)))
    forget_old(session, policy=policy)
    if commit:
        session.commit()


@dataclass(frozen=True)
class Lock:
    key: str
    locked_until: datetime
    lockouts: int
    last_failure_at: datetime | None


def current_locks(session: Session, *, now: datetime | None = None) -> list[Lock]:
    """The keys locked now, the longest lock first (for the admin page)."""
    now = now or utcnow()
    rows = session.connection().execute(
        select(_T.c.key, _T.c.locked_until, _T.c.lockouts, _T.c.last_failure_at)
        .where(_T.c.locked_until.is_not(None), _T.c.locked_until > now).order_by(_T.c.locked_until.desc()))
    return [Lock(*r) for r in rows]


def forget_old(session: Session, *, policy: ThrottlePolicy = DEFAULT_POLICY, now: datetime | None = None) -> int:
    """Drop counters with no failure for ``forget_after`` and no lock in force (housekeeping)."""
    now = now or utcnow()
    cutoff = now - policy.forget_after
    res = session.connection().execute(delete(_T).where(
        _T.c.last_failure_at < cutoff, (_T.c.locked_until.is_(None)) | (_T.c.locked_until < now)))
    return max(res.rowcount or 0, 0)
