"""Login throttling, kept in the store so that every ``golden serve`` process on it counts the same
failures. Follows OWASP's Authentication Cheat Sheet ("Account Lockout") and its device-cookie
scheme: an attacker who knows a user's name must not be able to keep that user out.

Failures are counted under keys of three kinds:

* ``pair:NAME|ADDRESS`` (an account from one client address) and ``device:NAME|ID`` (an account
  from one known device) are *locked*: after ``max_failures`` failures within ``window`` the key is
  refused for ``base_lock``, each further lock in a row twice as long (at most ``max_lock``), until a
  quiet day or a login. This is what stops one guesser, and only that guesser.
* ``account:NAME`` and ``address:ADDRESS`` are only *slowed*: once an account has ``max_failures``
  failures (an address ``address_max_failures``: an office shares one behind NAT) within the
  window, each further failure holds that key for ``slow`` (30 seconds), no longer. This slows
  guessing spread over many addresses, or spread over many names from one address, while the real
  user still gets in after a short wait.
* A *known device* (a browser that logged in to this account before: the web app's signed device
  cookie) is checked against its own ``device:`` key only, so neither the account's nor the
  address's slowdown, nor another address's lock, ever stops the real user on their own browser.

While a key that applies is held, the login is refused with the time left (the web app answers 429
with ``Retry-After``) *before* the password is checked, so a held login costs no password hash; an
unknown name is counted and held exactly like a known one (same answers, same work). A login clears
the account's count and the keys of the pair or device it came from; ``golden admin user unlock``
and a password change clear every key of the account (:func:`unlock_account`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import delete, or_, select
from sqlalchemy.exc import IntegrityError
from sqlmodel import Session

from curation.store.models import LoginThrottle, utcnow

_T = LoginThrottle.__table__


@dataclass(frozen=True)
class ThrottlePolicy:
    max_failures: int = 5  # per account (pair, device; and the account's slowdown), within the window
    address_max_failures: int = 20  # per client address (slowdown only), within the window
    window: timedelta = timedelta(minutes=15)
    base_lock: timedelta = timedelta(minutes=1)
    max_lock: timedelta = timedelta(hours=1)
    slow: timedelta = timedelta(seconds=30)  # the wait of a slowed account or address
    forget_after: timedelta = timedelta(days=1)  # lock-outs in a row are forgotten after a quiet day

    def limit(self, key: str) -> int:
        return self.address_max_failures if key.startswith("address:") else self.max_failures

    def lock_for(self, lockouts: int) -> timedelta:
        """The length of the ``lockouts``-th lock in a row: base_lock, twice that, four times..."""
        return min(self.base_lock * (2 ** min(max(lockouts - 1, 0), 30)), self.max_lock)


DEFAULT_POLICY = ThrottlePolicy()


def _name(name: str | None) -> str:
    return (name or "").strip().casefold()[:120]


def account_key(name: str) -> str:
    """The key of a login name (casefolded, bounded): the same for a known and an unknown name."""
    return "account:" + _name(name)


def address_key(address: str | None) -> str:
    return "address:" + (address or "unknown")[:100]


def pair_key(name: str, address: str | None) -> str:
    return f"pair:{_name(name)}|{(address or 'unknown')[:100]}"


def device_key(name: str, device: str) -> str:
    return f"device:{_name(name)}|{device[:64]}"


def is_slowdown(key: str) -> bool:
    """True for the keys that only slow logins down (account, address); False for those that lock
    (a pair of account and address, a device)."""
    return key.startswith(("account:", "address:"))


def keys_for(name: str, address: str | None, device: str | None = None) -> list[str]:
    """The keys a login of ``name`` from ``address`` is checked and counted against: from a known
    ``device`` (the id in its verified device cookie), that device's key only; otherwise the pair of
    account and address, the account and the address."""
    if device:
        return [device_key(name, device)]
    return [pair_key(name, address), account_key(name), address_key(address)]


def seconds_locked(session: Session, keys: list[str], *, now: datetime | None = None) -> int:
    """Seconds until every key in ``keys`` is free (0: the login may be tried)."""
    now = now or utcnow()
    rows = session.connection().execute(select(_T.c.locked_until).where(_T.c.key.in_(keys))).scalars()
    waits = [(until - now).total_seconds() for until in rows if until is not None and until > now]
    return math.ceil(max(waits)) if waits else 0


@dataclass(frozen=True)
class Failure:
    locked_seconds: int  # 0 when this failure did not lock or slow anything
    locked_keys: tuple[str, ...]  # the keys this failure locked or slowed
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


def _count_lock(row: LoginThrottle, key: str, policy: ThrottlePolicy, now: datetime) -> timedelta | None:
    """Count one failure on a locking key; the lock it earned, if any."""
    if row.window_start is None or now - row.window_start > policy.window:
        row.failures = 0
        row.window_start = now
    row.failures += 1
    if row.failures < policy.limit(key):
        return None
    row.lockouts += 1
    row.failures = 0
    row.window_start = None
    return policy.lock_for(row.lockouts)


def _count_slow(row: LoginThrottle, key: str, policy: ThrottlePolicy, now: datetime) -> timedelta | None:
    """Count one failure on a slowing key: past its limit, every failure holds it for ``slow``; the
    count starts again after a quiet window (so a slowed key stays slowed while the guessing goes on,
    and never for longer than ``slow`` after the last guess)."""
    if row.last_failure_at is None or now - row.last_failure_at > policy.window:
        row.failures = 0
        row.window_start = now
    row.failures += 1
    if row.failures < policy.limit(key):
        return None
    row.lockouts += 1
    return policy.slow


def record_failure(session: Session, keys: list[str], *, policy: ThrottlePolicy = DEFAULT_POLICY,
                   now: datetime | None = None, commit: bool = True) -> Failure:
    """Count a failed login against each key; lock a locking key that reaches its limit (doubling
    the lock of the one before), slow a slowing one. Rows are locked while counted (SELECT ... FOR
    UPDATE on PostgreSQL; SQLite has one writer at a time)."""
    now = now or utcnow()
    locked: list[str] = []
    wait = 0
    counts = {}
    for key in keys:
        row = _get_or_create(session, key)
        if row.last_failure_at is not None and now - row.last_failure_at > policy.forget_after:
            row.lockouts = 0
        lock = (_count_slow if is_slowdown(key) else _count_lock)(row, key, policy, now)
        row.last_failure_at = now
        counts[key] = row.failures if lock is None or is_slowdown(key) else policy.limit(key)
        if lock is not None:
            row.locked_until = now + lock
            locked.append(key)
            wait = max(wait, math.ceil(lock.total_seconds()))
        session.add(row)
    if commit:
        session.commit()
    return Failure(wait, tuple(locked), counts)


def record_success(session: Session, name: str, address: str | None = None, *, device: str | None = None,
                   policy: ThrottlePolicy = DEFAULT_POLICY, commit: bool = True) -> None:
    """A successful login clears its account's count and the key of the pair or device it came
    from (not its address's: one valid account must not reset the count of guesses at others from
    the same address, nor the pairs of other addresses: those are other guessers), and drops the
    counters nobody has failed on for a day (:func:`forget_old`)."""
    done = [account_key(name), device_key(name, device) if device else pair_key(name, address)]
    session.connection().execute(delete(_T).where(_T.c.key.in_(done)))
    forget_old(session, policy=policy)
    if commit:
        session.commit()


def unlock_account(session: Session, name: str, *, commit: bool = False) -> int:
    """Clear every count and lock of account ``name``: its slowdown, its pairs with every address
    and its devices (``golden admin user unlock``, the app's Unlock, a new password). Returns how
    many keys were held now."""
    n = _name(name)
    match = or_(_T.c.key == account_key(n), _T.c.key.startswith(f"pair:{n}|", autoescape=True),
                _T.c.key.startswith(f"device:{n}|", autoescape=True))
    conn = session.connection()
    held = len(conn.execute(select(_T.c.id).where(match, _T.c.locked_until > utcnow())).all())
    conn.execute(delete(_T).where(match))
    if commit:
        session.commit()
    return held


@dataclass(frozen=True)
class Lock:
    key: str
    locked_until: datetime
    lockouts: int
    last_failure_at: datetime | None


def current_locks(session: Session, *, now: datetime | None = None) -> list[Lock]:
    """The keys locked or slowed now, the longest first (for the admin page)."""
    now = now or utcnow()
    rows = session.connection().execute(
        select(_T.c.key, _T.c.locked_until, _T.c.lockouts, _T.c.last_failure_at)
        .where(_T.c.locked_until.is_not(None), _T.c.locked_until > now).order_by(_T.c.locked_until.desc()))
    return [Lock(*r) for r in rows]


def held_accounts(session: Session, *, now: datetime | None = None) -> dict[str, datetime]:
    """Account names (casefolded) whose logins a lock or slowdown holds now, from some address or
    device or everywhere, with the latest time one ends (for the Users page's Unlock)."""
    out: dict[str, datetime] = {}
    for lock in current_locks(session, now=now):
        kind, _, rest = lock.key.partition(":")
        if kind == "account":
            name = rest
        elif kind in ("pair", "device"):
            name = rest.rsplit("|", 1)[0]
        else:
            continue
        out[name] = max(out.get(name, lock.locked_until), lock.locked_until)
    return out


def forget_old(session: Session, *, policy: ThrottlePolicy = DEFAULT_POLICY, now: datetime | None = None) -> int:
    """Drop counters with no failure for ``forget_after`` and no lock in force (housekeeping)."""
    now = now or utcnow()
    cutoff = now - policy.forget_after
    res = session.connection().execute(delete(_T).where(
        _T.c.last_failure_at < cutoff, (_T.c.locked_until.is_(None)) | (_T.c.locked_until < now)))
    return max(res.rowcount or 0, 0)
