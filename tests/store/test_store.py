"""The store itself: migrations (one linear head, in step with the models), the schema check that
refuses an out-of-date database, SQLite's connection settings, users, and the `golden admin db` / `golden
user` commands. Each database test runs on SQLite and, when reachable, PostgreSQL."""

from __future__ import annotations

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from click.testing import CliRunner
from sqlalchemy import inspect, text
from sqlmodel import SQLModel
from werkzeug.security import check_password_hash

import curation.store.models  # noqa: F401 - imported for its effect: registers the tables on SQLModel.metadata
from curation.cli import main
from curation.store.engine import SQLITE_MMAP_BYTES, make_engine, session
from curation.store.migrate import (
    SchemaError,
    alembic_config,
    check_schema,
    current_revision,
    head_revision,
    open_store,
    schema_problem,
    upgrade,
)
from curation.store.users import add_user, authenticate, get_user, list_users, set_active, set_password


def test_migrations_have_exactly_one_head():
    heads = ScriptDirectory.from_config(alembic_config()).get_heads()
    assert len(heads) == 1, f"migrations/ has heads {heads}: merge them (alembic merge heads)"
    assert head_revision() == heads[0]


def test_every_revision_chains_back_to_the_first():
    script = ScriptDirectory.from_config(alembic_config())
    revs = list(script.walk_revisions())
    bases = [r for r in revs if r.down_revision is None]
    assert len(bases) == 1
    # Linear: every other revision has exactly one parent, and no two revisions share a parent.
    parents = [r.down_revision for r in revs if r.down_revision is not None]
    assert all(isinstance(p, str) for p in parents)
    assert len(parents) == len(set(parents))


def test_models_and_migrations_agree(engine):
    """Alembic's autogenerate finds nothing to add: the migrated schema is the models' schema."""
    with engine.connect() as conn:
        diff = compare_metadata(MigrationContext.configure(conn, opts={"compare_type": True}), SQLModel.metadata)
    assert diff == [], f"models and migrations differ; add a revision for: {diff}"


def test_upgrade_creates_every_table_and_is_idempotent(db_url):
    eng = make_engine(db_url)
    try:
        assert current_revision(eng) is None
        before, after = upgrade(eng)
        assert (before, after) == (None, head_revision())
        tables = set(inspect(eng).get_table_names())
        assert set(SQLModel.metadata.tables) <= tables
        assert upgrade(eng) == (head_revision(), head_revision())
    finally:
        eng.dispose()


def test_schema_check_says_which_command_to_run(db_url):
    eng = make_engine(db_url)
    try:
        problem = schema_problem(eng)
        assert "no golden schema yet" in problem and "golden admin db upgrade" in problem
        if db_url.startswith("sqlite"):  # a file other than ./golden.db is named in the command
            assert problem.endswith(f"run `golden admin db upgrade --db {db_url}`")
        else:  # a server database comes from DATABASE_URL; its URL (password) is not echoed
            assert problem.endswith("run `golden admin db upgrade`")
        with pytest.raises(SchemaError, match="golden admin db upgrade"):
            check_schema(eng)
        with pytest.raises(SchemaError, match="golden admin db upgrade"):
            open_store(db_url)
        upgrade(eng)
        check_schema(eng)  # at head: no error
        with eng.begin() as conn:  # pretend the store was made by an older golden
            conn.execute(text("UPDATE alembic_version SET version_num = 'old0'"))
        problem = schema_problem(eng)
        assert "at schema revision old0" in problem and f"needs {head_revision()}" in problem
        assert "golden admin db upgrade" in problem
    finally:
        eng.dispose()


def test_sqlite_runs_in_wal_mode_with_foreign_keys(tmp_path):
    eng = make_engine(f"sqlite:///{tmp_path / 'g.db'}")
    try:
        with eng.connect() as conn:
            assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
            assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1
            # the memory map as chosen (curation.store.engine.SQLITE_MMAP_BYTES: none, see there)
            assert conn.execute(text("PRAGMA mmap_size")).scalar() == SQLITE_MMAP_BYTES
    finally:
        eng.dispose()


def test_foreign_keys_are_enforced(engine):
    from sqlalchemy.exc import IntegrityError

    from curation.store.models import Query

    with session(engine) as s:
        s.add(Query(project_id=999, qid="q1", text="x"))
        with pytest.raises(IntegrityError):
            s.commit()


def test_users_passwords_are_hashed_and_checked(engine):
    with session(engine) as s:
        alice = add_user(s, "alice", role="judge", password="correct horse")
        assert alice.password_hash != "correct horse"
        assert check_password_hash(alice.password_hash, "correct horse")  # werkzeug's own check
        assert authenticate(s, "alice", "correct horse").id == alice.id
        assert authenticate(s, "alice", "wrong horse!") is None
        assert authenticate(s, "nobody", "correct horse") is None
        set_password(s, alice, "battery staple")
        assert authenticate(s, "alice", "correct horse") is None
        assert authenticate(s, "alice", "battery staple").id == alice.id
        set_active(s, alice, False)
        assert authenticate(s, "alice", "battery staple") is None


def test_user_validation(sqlite_engine):
    with session(sqlite_engine) as s:
        add_user(s, "lena", role="lead", password="12345678")
        with pytest.raises(ValueError, match="taken"):
            add_user(s, "lena", role="judge", password="12345678")
        with pytest.raises(ValueError, match="role 'boss'"):
            add_user(s, "bob", role="boss", password="12345678")
        with pytest.raises(ValueError, match="at least 8"):
            add_user(s, "bob", role="judge", password="short")
        with pytest.raises(ValueError, match="not a valid user name"):
            add_user(s, "<script>", role="judge", password="12345678")
        assert [u.name for u in list_users(s)] == ["lena"]


def test_cli_db_upgrade_and_current(db_url):
    runner = CliRunner()
    res = runner.invoke(main, ["admin", "db", "current", "--db", db_url])
    assert res.exit_code == 0 and "current: empty" in res.output and "out of date" in res.output
    res = runner.invoke(main, ["admin", "user", "list", "--db", db_url])
    assert res.exit_code == 1 and "golden admin db upgrade" in res.output
    res = runner.invoke(main, ["admin", "db", "upgrade", "--db", db_url])
    assert res.exit_code == 0, res.output
    assert f"upgraded from empty to {head_revision()}" in res.output
    res = runner.invoke(main, ["admin", "db", "upgrade", "--db", db_url])
    assert "already at schema revision" in res.output
    res = runner.invoke(main, ["admin", "db", "current", "--db", db_url])
    assert "up to date" in res.output


def test_cli_db_reads_database_url_and_plain_paths(tmp_path, monkeypatch):
    path = tmp_path / "store.db"
    res = CliRunner().invoke(main, ["admin", "db", "upgrade", "--db", str(path)])
    assert res.exit_code == 0, res.output
    assert path.exists()
    monkeypatch.setenv("DATABASE_URL", f"sqlite:///{path}")
    res = CliRunner().invoke(main, ["admin", "db", "current"])
    assert "up to date" in res.output


def test_cli_user_add_generates_or_prompts(engine, db_url):
    runner = CliRunner()
    res = runner.invoke(main, ["admin", "user", "add", "alice", "--role", "judge", "--generate", "--db", db_url])
    assert res.exit_code == 0, res.output
    password = res.output.strip().rsplit(" ", 1)[1]
    res = runner.invoke(main, ["admin", "user", "add", "lena", "--role", "lead", "--db", db_url],
                        input="lead-password\nlead-password\n")
    assert res.exit_code == 0, res.output
    assert "added lead lena" in res.output and "lead-password" not in res.output
    res = runner.invoke(main, ["admin", "user", "add", "alice", "--password", "whatever12", "--db", db_url])
    assert res.exit_code == 1 and "taken" in res.output
    res = runner.invoke(main, ["admin", "user", "list", "--db", db_url])
    assert "alice" in res.output and "lead" in res.output
    res = runner.invoke(main, ["admin", "user", "passwd", "alice", "--db", db_url],
                        input="new-password\nnew-password\n")
    assert res.exit_code == 0 and "password of alice changed" in res.output
    res = runner.invoke(main, ["admin", "user", "passwd", "nobody", "--password", "whatever12", "--db", db_url])
    assert res.exit_code == 1 and "no user 'nobody'" in res.output
    with session(engine) as s:
        assert authenticate(s, "alice", password) is None
        assert authenticate(s, "alice", "new-password") is not None
        assert authenticate(s, "lena", "lead-password").role == "lead"
        assert get_user(s, "lena").password_hash.startswith(("scrypt:", "pbkdf2:"))


def test_every_store_command_has_help_with_an_example():
    runner = CliRunner()
    for args in (["admin", "db", "upgrade"], ["admin", "db", "current"], ["admin", "user", "add"],
                 ["admin", "user", "list"], ["admin", "user", "passwd"], ["project", "create"],
                 ["project", "list"], ["project", "extend"], ["project", "guidelines", "set"], ["judging", "assign"],
                 ["judging", "release"]):
        res = runner.invoke(main, args + ["--help"])
        assert res.exit_code == 0 and "Example" in res.output, args


def test_passwords_are_hashed_with_scrypt_unless_the_test_override_is_set(monkeypatch):
    from werkzeug.security import check_password_hash

    from curation.store.users import hash_password

    monkeypatch.delenv("GOLDEN_PASSWORD_HASH_METHOD", raising=False)
    stored = hash_password("correct horse")
    assert stored.startswith("scrypt:") and "correct horse" not in stored
    assert check_password_hash(stored, "correct horse") and not check_password_hash(stored, "wrong horse")
    monkeypatch.setenv("GOLDEN_PASSWORD_HASH_METHOD", "pbkdf2:sha256:1000")
    assert hash_password("correct horse").startswith("pbkdf2:sha256:1000$")


def test_a_missing_sqlite_store_is_refused_without_creating_a_file(tmp_path):
    from click.testing import CliRunner

    from curation.cli import main

    missing = tmp_path / "old.db"
    result = CliRunner().invoke(main, ["project", "list", "--db", str(missing)])
    assert result.exit_code != 0
    assert "golden admin db upgrade" in result.output and str(missing) in result.output
    assert not missing.exists()
