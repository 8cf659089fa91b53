"""The dashboard's Export button: a version made by the same function and checks as
`golden export create`, its summary shown, CSRF-protected, for leads only, and in the audit trail."""

from __future__ import annotations

import html
import re
from datetime import UTC, datetime

from click.testing import CliRunner
from sqlmodel import select

from curation.cli import main
from curation.store.engine import session as new_session
from curation.store.models import AuditEvent, ExportVersion
from tests.support.client import csrf, login
from tests.support.judgments import judge_queue
from tests.support.projects import assigned_project

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)


def test_export_button(app, engine, db_url, tmp_path):
    setup = assigned_project(engine, tmp_path / "p", n_queries=3, docs_per_query=3, overlap=0, hold=False)
    pid = setup.project_id
    judge_queue(engine, pid, "alice", lambda d: int(d[-1]) % 3, start=T0, seconds=10.0, limit=2)

    judge = login(app.test_client(), "alice")
    judge_token = csrf(judge.get(f"/projects/{pid}/judge").data)
    assert judge.post(f"/lead/{pid}/export", data={"version": "v1", "csrf_token": judge_token}).status_code == 403
    lead = login(app.test_client(), "lena")
    page = lead.get(f"/lead/{pid}")
    assert 'name="version" value="v1"' in page.data.decode()
    token = csrf(page.data)
    assert lead.post(f"/lead/{pid}/export", data={"version": "v1"}).status_code == 400  # no CSRF token

    # Pairs are unjudged: refused as the CLI refuses it, with the same reason.
    cli = CliRunner().invoke(main, ["export", "create", "--version", "v1", "--project", "recipes", "--db", db_url,
                                    "--out", str(tmp_path / "cli")])
    assert cli.exit_code != 0, cli.output
    r = lead.post(f"/lead/{pid}/export", data={"version": "v1", "csrf_token": token}, follow_redirects=True)
    body = html.unescape(r.data.decode())
    reason = re.search(r"\d+ pooled pairs have no human label yet", cli.output).group(0)
    assert "Not exported" in body and reason in body
    with new_session(engine) as s:
        assert s.exec(select(ExportVersion)).all() == []

    r = lead.post(f"/lead/{pid}/export", data={"version": "v1", "csrf_token": token, "allow_incomplete": "yes"})
    assert r.status_code == 200
    body = html.unescape(r.data.decode())
    assert "Exported: v1" in body and "INCOMPLETE:" in body and "qrels.txt" in body
    with new_session(engine) as s:
        row = s.exec(select(ExportVersion)).one()
        assert (row.name, row.created_by) == ("v1", "lena")
        event = s.exec(select(AuditEvent).where(AuditEvent.action == "export")).one()
        assert (event.actor, event.target) == ("lena", "recipes v1")
    # The CLI writes the same frozen version again, byte for byte, and prints the same summary.
    cli = CliRunner().invoke(main, ["export", "create", "--version", "v1", "--project", "recipes", "--db", db_url,
                                    "--out", str(tmp_path / "cli"), "--allow-incomplete"])
    assert cli.exit_code == 0, cli.output
    assert "frozen version written again" in cli.output
    for line in cli.output.splitlines()[1:]:
        if line.startswith("  ") and "sha256" in line:
            assert line.strip() in body
