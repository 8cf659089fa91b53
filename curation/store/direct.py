"""Prebuilt statements run on the database driver's connection (sqlite3, psycopg 3) directly: the
judging hot path, where SQLAlchemy's per-execution work (cache look-up, execution
context, parameter and result processing) was about a third of a submit-and-next's CPU.

SQLAlchemy Core still builds every statement (one definition for SQLite and PostgreSQL) and
compiles it, once per dialect: its SQL text, the order of its parameters and the values of its
literal parameters are kept; a run is then one call of the driver. Values go in as the driver
takes them and come back as it returns them, with SQLAlchemy's storage conventions kept by hand:

* On SQLite a datetime is written as SQLAlchemy (sqlmodel's ``UTCDateTime``) writes it, UTC text
  ``YYYY-MM-DD HH:MM:SS.ffffff``, and read back as that text: :func:`to_datetime` makes it an aware
  datetime. Booleans are read back as 0 or 1.
* On PostgreSQL a statement made with ``prepare=True`` is prepared on the server at its first run
  (psycopg's ``prepare=True``), so PostgreSQL parses and plans it once per connection instead of on
  every run. Only statements whose generic plan is known to be good are prepared
  (``tests/judge/test_direct.py`` checks the one that once went wrong, the next open pair); every
  other statement is planned for its values (psycopg's automatic preparation is off, see
  :mod:`curation.store.engine`).
"""

from __future__ import annotations

from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

from sqlalchemy.engine import Connection

_IDLE = 0  # psycopg.pq.TransactionStatus.IDLE (not imported: SQLite stores need no psycopg)


def sqlite_datetime(value: datetime) -> str:
    """A datetime as SQLAlchemy stores it on SQLite (UTC, microseconds, no offset; the year in four
    digits: ``%Y`` gives ``999`` for the year 999 on glibc, which ``fromisoformat`` refuses)."""
    v = value.astimezone(UTC)
    return f"{v.year:04d}-{v.month:02d}-{v.day:02d} {v.hour:02d}:{v.minute:02d}:{v.second:02d}.{v.microsecond:06d}"


def to_datetime(value) -> datetime | None:
    """A datetime read back by a driver (text on SQLite, a datetime on PostgreSQL) as an aware UTC
    datetime, as SQLAlchemy would return it."""
    if value is None:
        return None
    if isinstance(value, str):
        value = datetime.fromisoformat(value)
    return value.replace(tzinfo=UTC) if value.utcoffset() is None else value.astimezone(UTC)


#: The text SQLAlchemy writes for a datetime on SQLite (:func:`sqlite_datetime`), by position:
#: digits everywhere but these separators.
_STORED_SEPARATORS = {4: "-", 7: "-", 10: " ", 13: ":", 16: ":", 19: "."}
_STORED_LENGTH = 26
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
ONE_MICROSECOND = timedelta(microseconds=1)


def utc_micros(values):
    """Driver datetimes (as :func:`to_datetime` takes them) as microseconds since 1970 UTC:
    ``(int64 array, bool array of the None ones)``, None counted as 0. For a report that reads
    every judgment's time, where one :func:`to_datetime` a value was most of its CPU.

    Texts all in the stored form (:func:`sqlite_datetime`) are read whole with numpy, as one
    array of their ASCII bytes: each byte checked (a digit, or the separator of its place), the
    numbers checked against the ranges Python's datetime takes (the days of each month, leap years
    included), the days since 1970 counted by the calendar's arithmetic. Anything else (a datetime from
    PostgreSQL, another text form, a value out of range) takes :func:`to_datetime` value by
    value, so the result is always the one it gives (and its error, for text it refuses)."""
    import numpy as np

    n = len(values)
    missing = np.fromiter((v is None for v in values), dtype=bool, count=n)
    fast = _stored_micros(values, missing, np) if n else np.zeros(0, dtype=np.int64)
    if fast is not None:
        return fast, missing
    micros = np.fromiter(
        (0 if v is None else (to_datetime(v) - EPOCH) // ONE_MICROSECOND for v in values), dtype=np.int64, count=n
    )
    return micros, missing


def _stored_micros(values, missing, np):
    """:func:`utc_micros` of texts all in the stored form, else None."""
    filled = ["1970-01-01 00:00:00.000000" if v is None else v for v in values]
    try:  # every text of the stored length, all ASCII, laid end to end
        if set(map(len, filled)) != {_STORED_LENGTH}:
            return None
        text = "".join(filled).encode("ascii")
    except (TypeError, UnicodeError):  # not all texts (PostgreSQL's datetimes), or not ASCII
        return None
    codes = np.frombuffer(text, dtype=np.uint8).reshape(len(values), _STORED_LENGTH)
    digits = codes - np.uint8(ord("0"))  # unsigned: a byte below "0" wraps round to a large number
    places = [i for i in range(_STORED_LENGTH) if i not in _STORED_SEPARATORS]
    separators = np.frombuffer("".join(_STORED_SEPARATORS.values()).encode(), dtype=np.uint8)
    if (digits[:, places] > 9).any() or (codes[:, list(_STORED_SEPARATORS)] != separators).any():
        return None

    def number(start, width):
        out = digits[:, start].astype(np.int64)
        for i in range(start + 1, start + width):
            out = out * 10 + digits[:, i]
        return out

    year, month, day = number(0, 4), number(5, 2), number(8, 2)
    hours, minutes, seconds = number(11, 2), number(14, 2), number(17, 2)
    leap = (year % 4 == 0) & ((year % 100 != 0) | (year % 400 == 0))
    days_in = np.array([0, 31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31])
    month_days = days_in[np.clip(month, 0, 12)] + (leap & (month == 2))
    if ((year < 1) | (month < 1) | (month > 12) | (day < 1) | (day > month_days)  # as Python's datetime
            | (hours > 23) | (minutes > 59) | (seconds > 59)).any():
        return None
    # Days since 1970-01-01 of the proleptic Gregorian calendar (years counted from March, so the
    # leap day ends a year: H. Hinnant's days_from_civil).
    y = year - (month <= 2)
    era, year_of_era = y // 400, y % 400
    day_of_year = (153 * ((month + 9) % 12) + 2) // 5 + day - 1
    days = era * 146_097 + year_of_era * 365 + year_of_era // 4 - year_of_era // 100 + day_of_year - 719_468
    micros = days * 86_400_000_000 + ((hours * 60 + minutes) * 60 + seconds) * 1_000_000 + number(20, 6)
    micros[missing] = 0
    return micros


def micros_to_seconds(micros) -> list[float]:
    """Microseconds (numpy int64) as float seconds, each the correctly rounded quotient that
    ``timedelta.total_seconds()`` and ``datetime.timestamp()`` give: numpy's division where every
    value is below 2**53 (its conversion to float is then exact), else Python's."""
    if len(micros) and int(abs(micros).max()) >= 2**53:
        return [m / 1_000_000 for m in micros.tolist()]
    return (micros / 1_000_000).tolist()


def from_micros(micros: int) -> datetime:
    """An aware UTC datetime of microseconds since 1970 (:func:`utc_micros`'s unit)."""
    return EPOCH + timedelta(microseconds=int(micros))


def connection_of(session) -> Connection:
    """The SQLAlchemy connection a Session works on: the one it is bound to when it is bound to a
    connection (the web app binds each request's session to one), without the Session's own
    bookkeeping of ``session.connection()``; else ``session.connection()``."""
    bind = session.bind
    return bind if isinstance(bind, Connection) else session.connection()


def dbapi(conn: Connection):
    """The driver's own connection under a SQLAlchemy connection (in its transaction, if any)."""
    return conn.connection.driver_connection


class Statement:
    """A Core statement compiled once per dialect and run with the driver's ``execute``."""

    __slots__ = ("stmt", "prepare", "_compiled")

    def __init__(self, stmt, *, prepare: bool = False):
        self.stmt = stmt
        self.prepare = prepare
        self._compiled: dict[str, tuple] = {}

    def _compile(self, dialect) -> tuple:
        compiled = self.stmt.compile(dialect=dialect)
        fixed = {name: bind.effective_value for bind, name in compiled.bind_names.items() if not bind.required}
        if dialect.paramstyle == "qmark":
            entry = (compiled.string, tuple(compiled.positiontup), fixed, True)
        elif dialect.paramstyle in ("pyformat", "named"):
            entry = (compiled.string, None, fixed, False)
        else:  # pragma: no cover - golden's two drivers are above
            raise NotImplementedError(f"paramstyle {dialect.paramstyle}")
        self._compiled[dialect.name] = entry
        return entry

    def sql(self, dialect) -> str:
        """The SQL text for ``dialect`` (for tests and EXPLAIN)."""
        return (self._compiled.get(dialect.name) or self._compile(dialect))[0]

    def run(self, conn: Connection, params: dict):
        """Execute with ``params`` on the driver's connection under ``conn``; returns the driver's cursor."""
        dialect = conn.dialect
        sql, order, fixed, sqlite = self._compiled.get(dialect.name) or self._compile(dialect)
        raw = conn.connection.driver_connection
        if sqlite:
            values = []
            for name in order:
                value = params[name] if name in params else fixed[name]
                values.append(sqlite_datetime(value) if isinstance(value, datetime) else value)
            return raw.execute(sql, values)
        if fixed:
            params = {**fixed, **params}
        return raw.execute(sql, params, prepare=self.prepare or None)

    def read_alone(self, conn: Connection, params: dict) -> list[tuple]:
        """All the rows of a read that needs no transaction around it. On PostgreSQL, when none is
        open, it runs in autocommit: no BEGIN and COMMIT round trips for a single read (psycopg
        switches autocommit on the client alone)."""
        if not _idle_postgresql(conn):
            return self.run(conn, params).fetchall()
        with _autocommit(conn.connection.driver_connection):
            return self.run(conn, params).fetchall()


def _idle_postgresql(conn: Connection) -> bool:
    """A PostgreSQL connection with no transaction open (where autocommit may be switched on)."""
    return conn.dialect.name == "postgresql" and conn.connection.driver_connection.info.transaction_status == _IDLE


@contextmanager
def _autocommit(raw):
    """psycopg's connection ``raw`` in autocommit for the block (switched on the client alone)."""
    raw.autocommit = True
    try:
        yield
    finally:
        if not raw.closed:  # a lost connection keeps its own error, not one about autocommit
            raw.autocommit = False


class Batch:
    """The transaction of a :func:`batch` block. ``sync()`` waits for the results of every
    statement run so far (one round trip on PostgreSQL); ``commit()`` and ``rollback()`` end the
    transaction, on PostgreSQL once the block ends. On SQLite each statement already runs at once
    in the process, and ``sync`` does nothing."""

    __slots__ = ("raw", "pipe", "done")

    def __init__(self, raw):
        self.raw = raw
        self.pipe = None
        self.done = False

    def sync(self) -> None:
        if self.pipe is not None:
            self.pipe.sync()

    def commit(self) -> None:
        if self.pipe is not None:
            self.raw.execute("COMMIT")  # sent with the block's last round trip
        else:
            self.raw.commit()
        self.done = True

    def rollback(self) -> None:
        if self.pipe is None:
            self.raw.rollback()
        self.done = True  # on PostgreSQL rolled back when the block ends (see batch)


@contextmanager
def batch(conn: Connection):
    """A transaction of the judging hot path with as few round trips as possible: yields a
    :class:`Batch`. The block commits when it ends normally (unless it ended the transaction
    itself) and rolls back when it raises. Read results with ``fetch`` after the block, or after
    ``sync()`` inside it.

    On PostgreSQL the block runs in psycopg's pipeline mode: statements are sent without waiting
    for each other's results, and the transaction is begun and committed by plain BEGIN and COMMIT
    statements in the pipeline (the connection is in autocommit for the block), because psycopg's
    own transaction handling waits for the server after its BEGIN and after its COMMIT. A block is
    then one round trip, plus one per ``sync()``. A rollback is psycopg's own, after the pipeline:
    it also forgets the connection's prepared statements, as psycopg does on every rollback (a
    statement sent after a failed one in a pipeline is skipped, so what is prepared on the server
    is no longer known for sure). When a transaction is already open on the connection, the block
    joins it without a pipeline. On SQLite nothing changes: each statement is a function call.
    """
    raw = conn.connection.driver_connection
    tx = Batch(raw)
    if not _idle_postgresql(conn):
        try:
            yield tx
        except BaseException:
            if not tx.done:
                tx.rollback()
            raise
        if not tx.done:
            tx.commit()
        return
    with _autocommit(raw):
        try:
            with raw.pipeline() as pipe:
                tx.pipe = pipe
                raw.execute("BEGIN")
                yield tx
                if not tx.done:
                    tx.commit()
        finally:
            tx.pipe = None
            # Rolled back, raised, or failed in the pipeline: psycopg's own rollback.
            if not raw.closed and raw.info.transaction_status != _IDLE:
                raw.rollback()
