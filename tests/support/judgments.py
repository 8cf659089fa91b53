"""Labels for the tests' projects, given the ways golden takes them: qrels files through
`golden judging import`'s code, the judging API a judge's browser drives, and the lead's adjudication."""

from __future__ import annotations

from pathlib import Path

from curation.store import projects, users
from curation.store.engine import session as new_session


def write_qrels(path: Path, rows) -> Path:
    """rows of (qid, group, docid, grade)."""
    path.write_text("".join(f"{q} {g} {d} {r}\n" for q, g, d, r in rows))
    return path


_counter = [0]


def judge(engine, folder: Path, who: str, labels: dict[tuple[str, str], int], *, project: str = "p") -> None:
    """``who`` labels ``labels`` ((qid, docid) -> grade), through `golden judging import`'s code."""
    from curation.judge.importing import import_judgments

    _counter[0] += 1
    path = write_qrels(folder / f"{who}-{_counter[0]}.qrels", [(q, 0, d, g) for (q, d), g in labels.items()])
    with new_session(engine) as s:
        report = import_judgments(s, path, judge=who, project=project)
    assert report.imported == len(labels), report.summary()


def judge_queue(engine, project_id: int, judge: str, grade_of, *, start, seconds: float = 5.0,
                limit: int | None = None) -> int:
    """``judge`` labels their queue through the judging API (next_task -> submit), ``grade_of(docid)``
    giving each grade, one pair every ``seconds`` from ``start``; returns how many were labelled."""
    from datetime import timedelta

    from curation.judge import judging

    done = 0
    with new_session(engine) as s:
        user = users.get_user(s, judge)
        t = start
        while limit is None or done < limit:
            task = judging.next_task(s, project_id, user, now=t)
            if task is None:
                break
            t = t + timedelta(seconds=seconds)
            judging.submit(s, user, task.token, grade=grade_of(task.docid), now=t)
            done += 1
    return done


def adjudicate(engine, qid: str, docid: str, grade: int, *, project: str = "p", reason: str = "per guidelines") -> None:
    """The lead lena settles (qid, docid) at ``grade``."""
    from curation.agree.adjudication import adjudicate as record
    from curation.store.lookups import pair_ids

    with new_session(engine) as s:
        proj = projects.get_project(s, project)
        record(s, proj, pair_id=pair_ids(s, proj)[qid, docid], lead=users.get_user(s, "lena"), grade=grade,
               reason=reason)
