"""The judging hot path's plumbing: statements run on the driver directly
(curation.store.direct), the queue counts kept by the database's triggers (migration 0020), and on
PostgreSQL the prepared statements that must outlive a request. Real SQLite and PostgreSQL stores."""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime, timedelta

from sqlalchemy import bindparam, delete, insert, text, update

from curation.judge import judging
from curation.store import direct, users
from curation.store.engine import session as new_session
from curation.store.models import Assignment, PairView
from tests.support.client import app_on, csrf, login
from tests.support.projects import assigned_project

QUEUE = ("SELECT judge_id, project_id, kind, COUNT(*), "
         "SUM(CASE WHEN done_at IS NULL AND skipped = :f THEN 1 ELSE 0 END), "
         "SUM(CASE WHEN done_at IS NULL AND skipped = :t THEN 1 ELSE 0 END) "
         "FROM assignment GROUP BY judge_id, project_id, kind")


def _counts_agree(engine):
    """queuecount equals the counts taken from the assignment rows themselves (rows that went to
    zero may stay, at zero)."""
    with engine.connect() as conn:
        truth = {tuple(r[:3]): tuple(r[3:]) for r in conn.execute(text(QUEUE), {"f": False, "t": True})}
        kept = {tuple(r[:3]): tuple(r[3:]) for r in conn.execute(text(
            "SELECT judge_id, project_id, kind, total, unanswered, skipped FROM queuecount"))}
    assert {k: v for k, v in kept.items() if v != (0, 0, 0)} == truth
    return truth


def test_queue_counts_follow_every_writer_of_assignments(engine, tmp_path):
    setup = assigned_project(engine, tmp_path / "p", n_queries=5, docs_per_query=4, overlap=4,
                             judges=("alice", "bob", "carol"))
    truth = _counts_agree(engine)  # after `golden judging assign` (bulk insert)
    assert sum(v[0] for v in truth.values()) == 4 * 3 + (20 - 4)
    t0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
    with new_session(engine) as s:
        alice, bob = users.get_user(s, "alice"), users.get_user(s, "bob")
        for i in range(6):  # labels, a skip, an unsure answer, then a relabel of the skipped pair
            task = judging.next_task(s, setup.project_id, alice, now=t0 + timedelta(minutes=i))
            if i == 2:
                judging.submit(s, alice, task.token, skip=True)
            else:
                judging.submit(s, alice, task.token, grade=1, unsure=i == 3)
        _counts_agree(engine)
        back = judging.previous_task(s, setup.project_id, alice)
        judging.submit(s, alice, back.token, skip=True)  # skipping an answered pair keeps it done
        _counts_agree(engine)
        # bob and carol walked away: a day later alice (whose queue is then empty) takes their pairs
        later = datetime.now(UTC) + timedelta(days=1)
        while (task := judging.next_task(s, setup.project_id, alice, now=later,
                                         stale_after=timedelta(minutes=30))) is not None:
            judging.submit(s, alice, task.token, grade=0)
        _counts_agree(engine)
        moved = s.connection().execute(text("SELECT COUNT(*) FROM assignment WHERE judge_id = :b AND kind = 'main'"),
                                       {"b": bob.id}).scalar()
        assert moved == 0  # every main pair of bob's went to alice, and the counts followed
    # SQL by hand: a delete and an update of the kind
    with engine.begin() as conn:
        conn.execute(delete(PairView))
        first = conn.execute(text("SELECT MIN(id) FROM assignment")).scalar()
        conn.execute(delete(Assignment).where(Assignment.id == first))
        conn.execute(update(Assignment).where(Assignment.kind == "overlap").values(kind="main"))
    _counts_agree(engine)


def test_triggers_are_there_at_head(engine):
    """A migration that rebuilds ``assignment`` on SQLite drops its triggers; the store at head has them."""
    with engine.connect() as conn:
        if engine.dialect.name == "sqlite":
            names = set(conn.execute(text("SELECT name FROM sqlite_master WHERE type = 'trigger' "
                                          "AND tbl_name = 'assignment'")).scalars())
            assert names == {"queuecount_insert", "queuecount_delete", "queuecount_update"}
        else:
            names = set(conn.execute(text("SELECT tgname FROM pg_trigger WHERE tgrelid = 'assignment'::regclass "
                                          "AND NOT tgisinternal")).scalars())
            assert names == {"queuecount"}


def test_direct_statements_store_what_sqlalchemy_stores(engine, tmp_path):
    """A datetime written by a direct statement reads back through SQLAlchemy's ORM equal, aware and
    in UTC, and is stored as SQLAlchemy stores it; read back directly, to_datetime gives the same."""
    setup = assigned_project(engine, tmp_path / "p", n_queries=1, docs_per_query=2, overlap=0, judges=("alice",))
    when = datetime(2026, 3, 2, 10, 11, 12, 345678, tzinfo=UTC)
    with new_session(engine) as s:
        aid = s.connection().execute(text("SELECT MIN(id) FROM assignment")).scalar()
        conn = s.connection()
        direct.Statement(update(Assignment.__table__).where(Assignment.__table__.c.id == aid)
                         .values(claimed_at=bindparam("when"))).run(conn, {"when": when})
        s.commit()
        assert s.get(Assignment, aid).claimed_at == when
        raw = direct.Statement(
            Assignment.__table__.select().with_only_columns(Assignment.__table__.c.claimed_at)
            .where(Assignment.__table__.c.id == aid)).run(s.connection(), {}).fetchone()[0]
        assert direct.to_datetime(raw) == when
        if engine.dialect.name == "sqlite":
            assert raw == "2026-03-02 10:11:12.345678"
    assert setup.project_id


def test_a_duplicate_token_from_a_race_reports_the_first_judgment(engine, tmp_path, monkeypatch):
    """The driver's own IntegrityError (not SQLAlchemy's) is caught: a judgment already recorded with
    the token, seen only when the INSERT fails, is returned as a duplicate."""
    setup = assigned_project(engine, tmp_path / "p", n_queries=1, docs_per_query=2, overlap=0, judges=("alice",))
    with new_session(engine) as s:
        alice = users.get_user(s, "alice")
        task = judging.next_task(s, setup.project_id, alice)
        view = s.connection().execute(text("SELECT project_id, pair_id FROM pairview WHERE token = :t"),
                                      {"t": task.token}).one()
        s.commit()
    with engine.begin() as conn:  # the other request's judgment, committed after our read of the token
        from curation.store.models import Judgment

        first = conn.execute(insert(Judgment).values(project_id=view[0], pair_id=view[1], judge_id=alice.id,
                                                     grade=2, client_token=task.token, source="human")
                             .returning(Judgment.id)).scalar()
    real = judging._operations._VIEW_D

    class WithoutExisting:  # the race: our read of the token did not see the other judgment yet
        def read_alone(self, conn, params):
            return [(*row[:9], None, *row[10:]) for row in real.read_alone(conn, params)]

    monkeypatch.setattr(judging._operations, "_VIEW_D", WithoutExisting())
    with new_session(engine) as s:
        result = judging.submit(s, alice, task.token, grade=1)
    assert (result.judgment_id, result.duplicate) == (first, True)
    with engine.connect() as conn:
        assert conn.execute(text("SELECT COUNT(*) FROM judgment WHERE client_token = :t"),
                            {"t": task.token}).scalar() == 1


def test_prepared_statements_outlive_each_answer_on_postgresql(engine, tmp_path):
    """On PostgreSQL the hot statements are prepared once per connection and stay prepared from one
    answer to the next (psycopg forgets them on a ROLLBACK, so no request may end with one); on
    SQLite the same requests simply work."""
    setup = assigned_project(engine, tmp_path / "p", n_queries=3, docs_per_query=4, overlap=0, judges=("alice",))
    with app_on(engine) as app:
        client = login(app.test_client(), "alice")
        path = f"/projects/{setup.project_id}/judge"
        body = client.get(path, headers={"HX-Request": "true"}).data
        token_re = re.compile(rb'name="token" value="([^"]+)"')
        for _ in range(8):
            res = client.post(path, data={"csrf_token": csrf(body), "token": token_re.search(body).group(1).decode(),
                                          "grade": "1"}, headers={"HX-Request": "true"})
            assert res.status_code == 200
            body = res.data
        if engine.dialect.name != "postgresql":
            return
        app_engine = app.extensions["golden_engine"]
        with app_engine.connect() as conn:  # the pool's one connection, the requests' own
            prepared = dict(conn.exec_driver_sql(
                "SELECT statement, generic_plans + custom_plans FROM pg_prepared_statements").all())
    assert prepared, "no statement stayed prepared"
    # the session check runs once per request: 8 answers (and the page) on one prepared statement
    assert max(prepared.values()) >= 8, prepared


def test_on_postgresql_an_answer_and_the_next_pair_are_one_round_trip(engine, tmp_path, monkeypatch):
    """The judging page's answer on PostgreSQL: the project and the token read by one statement (one
    round trip, no pipeline), then the answer, the next pair's token and page, the progress and the
    COMMIT sent as one pipeline (one more): counted as the Syncs psycopg sends (the pipeline's one).
    The outcome is the same as the calls one by one: the judgment recorded, the next open pair shown
    with a token of its own."""
    if engine.dialect.name != "postgresql":
        return
    from psycopg._pipeline_base import BasePipeline  # psycopg's own class: where a Sync is queued

    setup = assigned_project(engine, tmp_path / "p", n_queries=3, docs_per_query=4, overlap=0, judges=("alice",))
    with new_session(engine) as s:
        alice = users.get_user(s, "alice")
        task = judging.next_task(s, setup.project_id, alice)
        syncs = []
        real = BasePipeline._enqueue_sync
        monkeypatch.setattr(BasePipeline, "_enqueue_sync", lambda self: (syncs.append(1), real(self))[1])
        answered = judging.submit_and_next(s, setup.project_id, alice.id, task.token, grade=2)
        monkeypatch.setattr(BasePipeline, "_enqueue_sync", real)
        assert len(syncs) == 1
        assert answered.task is not None and answered.task.position > task.position
        assert answered.progress == judging.progress(s, setup.project_id, alice)
        judging.end_reads(s)
        rows = s.connection().execute(text(
            "SELECT grade, client_token FROM judgment WHERE judge_id = :j"), {"j": alice.id}).all()
        assert rows == [(2, task.token)]
        shown = s.connection().execute(text("SELECT count(*) FROM pairview WHERE token = :t"),
                                       {"t": answered.task.token}).scalar()
        assert shown == 1


def _numbered(sql: str) -> tuple[str, list[str]]:
    """psycopg's %(name)s placeholders as PREPARE's $1, $2, ...; and the names in that order."""
    names: list[str] = []

    def number(m):
        if m.group(1) not in names:
            names.append(m.group(1))
        return f"${names.index(m.group(1)) + 1}"

    return re.sub(r"%\((\w+)\)s", number, sql), names


def test_generic_plans_of_the_judges_next_pair_walk_the_queue_index(engine, tmp_path):
    """PostgreSQL may run a prepared statement with a generic plan, made without the judge's and
    project's ids; for "the judge's first open pair" that plan must still walk the judge's queue
    index and stop at the first row (a plan guessed from bound constants once walked all pairs)."""
    if engine.dialect.name != "postgresql":
        return
    assigned_project(engine, tmp_path / "p", n_queries=30, docs_per_query=10, overlap=5, judges=("alice", "bob"))
    with engine.connect() as conn:
        conn.exec_driver_sql("ANALYZE")
        conn.exec_driver_sql("SET plan_cache_mode = force_generic_plan")
        for overlap_only, statement in judging._statements._FIRST_OPEN_D.items():
            sql, names = _numbered(statement.sql(engine.dialect))
            conn.exec_driver_sql(f"PREPARE first_open_{int(overlap_only)} AS {sql}")
            plan = "\n".join(r[0] for r in conn.exec_driver_sql(
                f"EXPLAIN EXECUTE first_open_{int(overlap_only)}({', '.join(['1'] * len(names))})"))
            assert "ix_assignment_queue" in plan and "Seq Scan" not in plan, plan
        conn.rollback()


def test_an_answer_reuses_its_checked_csrf_token_until_half_its_lifetime(sqlite_engine, tmp_path, monkeypatch):
    """The next pair's forms carry the CSRF token the answer was checked with (no new signature per
    answer), and a newly signed one once that token is older than half WTF_CSRF_TIME_LIMIT; every
    token given out is accepted, and a forged one is still refused."""
    import judging_app.judge as judge_views

    setup = assigned_project(sqlite_engine, tmp_path / "p", n_queries=2, docs_per_query=4, overlap=0,
                             judges=("alice",))
    token_re = re.compile(rb'name="token" value="([^"]+)"')
    with app_on(sqlite_engine) as app:
        client = login(app.test_client(), "alice")
        path = f"/projects/{setup.project_id}/judge"
        body = client.get(path, headers={"HX-Request": "true"}).data
        first = csrf(body)

        def answer(body, token):
            return client.post(path, data={"csrf_token": token, "token": token_re.search(body).group(1).decode(),
                                           "grade": "1"}, headers={"HX-Request": "true"})

        res = answer(body, first)
        assert res.status_code == 200 and csrf(res.data) == first
        later = time.time() + app.config["WTF_CSRF_TIME_LIMIT"] * 0.6
        monkeypatch.setattr(judge_views.time, "time", lambda: later)
        res = answer(res.data, first)
        assert res.status_code == 200 and csrf(res.data) != first
        assert answer(res.data, csrf(res.data)).status_code == 200
        forged = first[:-3] + ("AAA" if not first.endswith("AAA") else "BBB")
        assert answer(res.data, forged).status_code == 400


def test_remembered_csrf_tokens_are_accepted_only_as_flask_wtf_would(sqlite_engine, tmp_path, monkeypatch):
    """A token the app accepted once (and remembers) is refused in another session, and once older
    than WTF_CSRF_TIME_LIMIT, exactly as verifying it again would refuse it."""
    setup = assigned_project(sqlite_engine, tmp_path / "p", n_queries=2, docs_per_query=4, overlap=2,
                             judges=("alice", "bob"))
    token_re = re.compile(rb'name="token" value="([^"]+)"')
    with app_on(sqlite_engine) as app:
        path = f"/projects/{setup.project_id}/judge"
        alice, bob = login(app.test_client(), "alice"), login(app.test_client(), "bob")
        a_body = alice.get(path, headers={"HX-Request": "true"}).data
        b_body = bob.get(path, headers={"HX-Request": "true"}).data

        def answer(client, body, token):
            return client.post(path, data={"csrf_token": token, "token": token_re.search(body).group(1).decode(),
                                           "grade": "1"}, headers={"HX-Request": "true"})

        alices = csrf(a_body)
        res = answer(alice, a_body, alices)
        assert res.status_code == 200  # accepted, so remembered
        assert answer(bob, b_body, alices).status_code == 400  # not bob's session's token
        assert answer(bob, b_body, csrf(b_body)).status_code == 200
        later = time.time() + app.config["WTF_CSRF_TIME_LIMIT"] + 60
        monkeypatch.setattr(time, "time", lambda: later)
        assert answer(alice, res.data, alices).status_code == 400  # expired, remembered or not
