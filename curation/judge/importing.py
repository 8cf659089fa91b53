"""Importing existing relevance labels as if a judge had made them.

A TREC qrels file (``qid iter docid grade``) is loaded as judgments of one judge, with
``source = "import"``, so labels from earlier campaigns and second assessors can be compared with
the project's own judges (``golden labels agreement``) and enter the final labels (:mod:`curation.agree.labels`).

- Pairs that are not in the project's pool are reported and skipped (the pool is what is judged).
- A multi-assessor file whose second column is the judgment group (trec_eval's ``qrels.123``) is
  imported one group at a time (``group=``), each as a different judge.
- Grades outside the project's scale are reported and skipped, or clipped to the scale's ends with
  ``clip=True`` (trec_eval reads any grade below 1 as not relevant, so -1 -> lowest grade is safe).
- A pair repeated with the same grade is imported once (the repeats are counted in the summary); a
  pair given two grades is refused with both line numbers unless ``on_conflict`` (``--on-conflict``)
  is ``first`` or ``last`` (:mod:`curation.formats.conflicts`).
- Importing the same file again adds nothing: each line's judgment carries a token made of the
  file's SHA-256 and the line's position, unique per judge in the store.

Other tools' judgment files (:func:`import_foreign`: Quepid's CSV, RRE's ratings, a learning-to-rank
judgment list; read by :mod:`curation.formats.quepid`, :mod:`curation.formats.rre` and
:mod:`curation.formats.ltr`) go through the same steps, after their queries are matched to the
project's (:func:`match_query`): by id when the file gives one the project has, else by text
(:func:`curation.formats.normalize.normalize_text`). A row whose query matches none, or whose text
matches several queries, is listed in the summary with its ``file:line``; nothing is dropped silently.
A file naming several raters (a Quepid book) is imported one rater at a time (``group=``), each as a
different judge, as a multi-assessor qrels file is.
"""

from __future__ import annotations

import os
from collections import Counter
from dataclasses import dataclass, field

from sqlalchemy import insert, update
from sqlmodel import Session, select

from curation.formats.conflicts import Dedup
from curation.formats.fileio import sha256_file
from curation.formats.foreign import ForeignLabel
from curation.formats.normalize import normalize_text
from curation.formats.qrels import iter_numbered_qrels
from curation.store import lookups
from curation.store.models import Assignment, Judgment, Project, User, utcnow
from curation.store.projects import get_project, grades
from curation.store.users import get_user

MAX_EXAMPLES = 10


@dataclass
class ImportReport:
    """What :func:`import_judgments` did."""

    path: str
    project: str
    judge: str
    group: str | None
    lines: int = 0  # lines of the file read for this group
    imported: int = 0  # judgments added
    already: int = 0  # lines imported by an earlier run (same file, same judge)
    missing: int = 0  # pairs not in the pool: skipped
    missing_examples: list[tuple[str, str]] = field(default_factory=list)
    out_of_scale: int = 0  # grades outside the scale: skipped (or clipped with clip=True)
    clipped: int = 0
    repeats: int = 0  # lines repeating an earlier line's pair and grade: imported once
    conflicts: int = 0  # lines giving a pair another grade, resolved by on_conflict
    on_conflict: str = "error"
    grades: dict[int, int] = field(default_factory=dict)  # imported grade -> count
    queries: int = 0  # distinct queries imported
    groups: list[str] = field(default_factory=list)  # judgment groups (or raters) seen in the file
    format: str = "trec"  # the file's format: trec, quepid, rre or ltr
    unmatched: list[tuple[int, str, str]] = field(default_factory=list)  # (line, query as named, why)
    unrated: int = 0  # rows naming a query but giving no rating (Quepid)

    def summary(self) -> str:
        """Lines a person reads after the import."""
        g = f" (group {self.group})" if self.group is not None else ""
        out = [f"{self.path}{g}: {self.lines} lines -> {self.imported} judgments by {self.judge} "
               f"in project {self.project} ({self.queries} queries)"]
        if self.grades:
            out.append("grades: " + ", ".join(f"{k}: {v}" for k, v in sorted(self.grades.items())))
        out += skipped_lines(self, self.judge, unit="pair")
        if self.unrated:
            out.append(f"{self.unrated} rows name a query but give no rating: nothing to import from them")
        out += unmatched_lines(self.path, self.unmatched, self.project)
        return "\n".join(out)


def _line_list(lines: list[int]) -> str:
    """``3,5-7,9``: line numbers, runs shortened."""
    runs: list[list[int]] = []
    for n in sorted(set(lines)):
        if runs and n == runs[-1][1] + 1:
            runs[-1][1] = n
        else:
            runs.append([n, n])
    return ",".join(f"{a}" if a == b else f"{a}-{b}" for a, b in runs)


def unmatched_lines(path: str, unmatched: list[tuple[int, str, str]], project: str) -> list[str]:
    """The summary's lines for rows whose query matched no query of the project: a count, then each
    query as the file names it with its lines (``file:3,5-7``) and why."""
    if not unmatched:
        return []
    by_query: dict[tuple[str, str], list[int]] = {}
    for line, query, why in unmatched:
        by_query.setdefault((query, why), []).append(line)
    out = [f"{len(unmatched)} rows were not imported: their query matches no single query of project {project}"]
    out += [f"  {path}:{_line_list(lines)}: {query}: {why}" for (query, why), lines in by_query.items()]
    return out


def match_query(label: ForeignLabel, qids: set[str], by_text: dict[str, list[str]]) -> tuple[list[str], str | None]:
    """The project's queries a row of another tool's file is for, and why none when there is none.

    By id when the row gives an id the project has; else by each text it gives, compared in
    :func:`~curation.formats.normalize.normalize_text` form (``by_text``: normalised text -> qids). A
    text that several queries share matches none of them (which one was meant cannot be told). An RRE
    group whose query variants are different queries of the project applies to each.
    """
    if label.qid is not None and label.qid in qids:
        return [label.qid], None
    found: list[str] = []
    shared = None
    for text in label.texts:
        hits = by_text.get(normalize_text(text), [])
        if len(hits) == 1:
            found.append(hits[0])
        elif hits:
            shared = hits
    if found:
        return list(dict.fromkeys(found)), None
    if shared:
        return [], f"its text is the text of several queries ({', '.join(shared[:5])})"
    named = "id or text" if label.qid is not None and label.texts else ("id" if label.qid is not None else "text")
    return [], f"no query of the project has this {named}"


def place_label(report, pool: dict[tuple[str, str], int], qid: str, docid: str, grade: int, lo: int, hi: int, *,
                clip: bool) -> tuple[int, int] | None:
    """The pool pair and grade an imported label goes to (human and machine labels alike), or None when
    it is skipped: a pair not in the pool, or a grade outside ``lo..hi`` without ``clip`` (clipped to
    the scale's ends with it). Counts each case in ``report`` (see :func:`skipped_lines`)."""
    pair_id = pool.get((qid, docid))
    if pair_id is None:
        report.missing += 1
        if len(report.missing_examples) < MAX_EXAMPLES:
            report.missing_examples.append((qid, docid))
        return None
    if not lo <= grade <= hi:
        if not clip:
            report.out_of_scale += 1
            return None
        grade = min(max(grade, lo), hi)
        report.clipped += 1
    return pair_id, grade


def skipped_lines(report, judge: str, *, unit: str) -> list[str]:
    """What an import left out or changed, a line each (for human and machine label imports alike):
    ``report`` has the counters ``already``, ``missing`` (+ ``missing_examples``), ``out_of_scale``,
    ``clipped``, ``repeats`` and ``conflicts`` (+ ``on_conflict``); ``unit`` names what a line holds."""
    out = []
    if report.already:
        out.append(f"{report.already} lines were imported before for {judge}: left as they are")
    if report.missing:
        ex = ", ".join(f"{q}/{d}" for q, d in report.missing_examples[:3])
        out.append(f"{report.missing} pairs are not in the pool and were skipped (e.g. {ex})")
    if report.out_of_scale:
        out.append(f"{report.out_of_scale} grades outside the scale were skipped (--clip maps them to its ends)")
    if report.clipped:
        out.append(f"{report.clipped} grades outside the scale were clipped to its ends")
    if report.repeats:
        out.append(f"{report.repeats} identical duplicate {unit} line(s) dropped (imported once)")
    if report.conflicts:
        out.append(f"{report.conflicts} {unit}(s) given another grade resolved by --on-conflict {report.on_conflict}")
    return out


def import_judgments(
    session: Session,
    path: str | os.PathLike,
    *,
    judge: str,
    project: str | None = None,
    group: str | None = None,
    clip: bool = False,
    create_judge: bool = False,
    allow_empty: bool = False,
    on_conflict: str = "error",
) -> ImportReport:
    """Load the TREC qrels at ``path`` as judgments by the user ``judge`` in ``project`` (default:
    the only project) and commit. ``group``: import only the lines whose second column equals it;
    required when the file holds several groups. ``create_judge``: add ``judge`` as a disabled
    judge account (no login) when there is no such user. ``on_conflict``: what to do with a pair
    given two grades (``error``, ``first``, ``last``; see :mod:`curation.formats.conflicts`).
    ValueError (naming the parameter) when the judge or group is unknown; ``InputError`` (path:line)
    for a malformed line, or for a file without a judgment unless ``allow_empty`` (then nothing is
    imported)."""
    path = str(path)
    proj: Project = get_project(session, project)
    if not create_judge:
        _judge(session, judge, False)  # an unknown judge is named before the file is read
    lines, groups, kept, read, dedup = _read_group(path, group, on_conflict=on_conflict, allow_empty=allow_empty)
    # the file is checked whole before a judge is created: a refused file leaves no user row behind
    user = _judge(session, judge, create_judge)
    report = ImportReport(path, proj.name, user.name, group, groups=groups, on_conflict=on_conflict)
    report.lines = read
    report.repeats, report.conflicts = dedup.repeats, dedup.conflicts
    entries = [(str(i), lines[i].qid, lines[i].docid, lines[i].grade) for i in sorted(kept.values())]
    return _store_labels(session, proj, user, path, report, entries, clip=clip)


def _store_labels(session: Session, proj: Project, user: User, path: str, report: ImportReport,
                  entries: list[tuple[str, str, str, int]], *, clip: bool) -> ImportReport:
    """Record ``entries`` ((token, qid, docid, grade): the token names the row within the file) as
    ``user``'s judgments of ``proj`` and commit; rows imported before (same file, same judge, same
    token), pairs not in the pool and grades off the scale are counted in ``report``."""
    scale = [g.grade for g in grades(proj)]
    lo, hi = min(scale), max(scale)
    pool = lookups.pair_ids(session, proj)
    prefix = f"import:{sha256_file(path)[:20]}:"
    done = set(
        session.exec(
            select(Judgment.client_token).where(
                Judgment.judge_id == user.id, Judgment.client_token.like(prefix + "%")  # type: ignore[union-attr]
            )
        ).all()
    )
    now = utcnow()
    rows = []
    grade_counts: Counter[int] = Counter()
    qids = set()
    for suffix, qid, docid, raw_grade in entries:  # the row's place in the file keeps its token stable
        placed = place_label(report, pool, qid, docid, raw_grade, lo, hi, clip=clip)
        if placed is None:
            continue
        pair_id, grade = placed
        token = f"{prefix}{suffix}"
        if token in done:
            report.already += 1
            continue
        rows.append(dict(project_id=proj.id, pair_id=pair_id, judge_id=user.id, grade=grade, unsure=False,
                         skipped=False, source="import", answered_at=now, client_token=token))
        grade_counts[grade] += 1
        qids.add(qid)
    for start in range(0, len(rows), 5000):
        session.execute(insert(Judgment), rows[start:start + 5000])
    pair_ids = sorted({r["pair_id"] for r in rows})
    for start in range(0, len(pair_ids), 5000):  # the judge is not asked again for these pairs
        session.execute(
            update(Assignment)
            .where(Assignment.judge_id == user.id, Assignment.pair_id.in_(pair_ids[start:start + 5000]),
                   Assignment.done_at.is_(None))
            .values(done_at=now, skipped=False)
        )
    session.commit()
    report.imported = len(rows)
    report.grades = dict(sorted(grade_counts.items()))
    report.queries = len(qids)
    return report


FOREIGN_FORMATS = ("quepid", "rre", "ltr")  # the --format choices of import-judgments besides trec


def read_foreign(path: str | os.PathLike, fmt: str, *, allow_empty: bool = False):
    """The labels of another tool's judgment file (``fmt``: one of :data:`FOREIGN_FORMATS`), read by
    that format's one reader in :mod:`curation.formats`."""
    if fmt == "quepid":
        from curation.formats.quepid import read_quepid as reader
    elif fmt == "rre":
        from curation.formats.rre import read_rre as reader
    elif fmt == "ltr":
        from curation.formats.ltr import read_ltr as reader
    else:
        raise ValueError(f"format: {fmt!r} is not one of trec, {', '.join(FOREIGN_FORMATS)}")
    return reader(path, allow_empty=allow_empty)


def import_foreign(
    session: Session,
    path: str | os.PathLike,
    *,
    fmt: str,
    judge: str,
    project: str | None = None,
    group: str | None = None,
    clip: bool = False,
    create_judge: bool = False,
    allow_empty: bool = False,
    on_conflict: str = "error",
) -> ImportReport:
    """Load another tool's judgment file (``fmt``: ``quepid``, ``rre`` or ``ltr``) as judgments by
    ``judge`` in ``project`` and commit, as :func:`import_judgments` loads TREC qrels (same options,
    same report). Each row's query is matched to the project's by :func:`match_query`; rows that match
    none are listed in the report with their line. ``group``: the rater to import, required when the
    file names several (a Quepid book's columns). ``InputError`` (path:line) for a malformed file."""
    path = str(path)
    if fmt not in FOREIGN_FORMATS:
        raise ValueError(f"format: {fmt!r} is not one of trec, {', '.join(FOREIGN_FORMATS)}")
    proj: Project = get_project(session, project)
    if not create_judge:
        _judge(session, judge, False)
    read = read_foreign(path, fmt, allow_empty=allow_empty)
    raters = read.raters
    if group is None and len(raters) > 1:
        raise ValueError(f"group: {path} holds the judgements of raters {', '.join(raters)}; import one at a time "
                         "with --group RATER, each as a different --judge")
    if group is not None and group not in raters:
        raise ValueError(f"group: {group!r} is not a rater of {path} (raters: {', '.join(raters) or 'none'})")
    labels = [(i, lab) for i, lab in enumerate(read.labels) if group is None or lab.rater == group]
    dedup = Dedup(path, policy=on_conflict, what="pair")
    entries, unmatched = matched_labels(session, proj, labels, dedup)
    user = _judge(session, judge, create_judge)  # after the file is read whole, as import_judgments does
    report = ImportReport(path, proj.name, user.name, group, groups=raters, on_conflict=on_conflict, format=fmt,
                          unmatched=unmatched, unrated=read.unrated)
    report.lines = len(labels)
    report.repeats, report.conflicts = dedup.repeats, dedup.conflicts
    return _store_labels(session, proj, user, path, report, entries, clip=clip)


def matched_labels(session: Session, proj: Project, labels: list[tuple[int, ForeignLabel]], dedup: Dedup
                   ) -> tuple[list[tuple[str, str, str, int]], list[tuple[int, str, str]]]:
    """The rows of another tool's file (``(index in the file, label)``) matched to ``proj``'s queries
    (:func:`match_query`), as ``(token, qid, docid, grade)`` entries (a pair repeated follows
    ``dedup``), and the rows that match no query as ``(line, query as named, why)``."""
    texts = lookups.query_texts(session, proj)
    by_text: dict[str, list[str]] = {}
    for qid, text in texts.items():
        by_text.setdefault(normalize_text(text), []).append(qid)
    qid_set = set(texts)
    unmatched: list[tuple[int, str, str]] = []
    kept: dict[tuple[str, str], tuple[str, str, str, int]] = {}
    for i, lab in labels:
        matched, why = match_query(lab, qid_set, by_text)
        if not matched:
            unmatched.append((lab.line, lab.query(), why or "no match"))
        for qid in matched:
            if dedup.add((qid, lab.docid), lab.grade, lab.line):
                kept[(qid, lab.docid)] = (f"{i}:{qid}", qid, lab.docid, lab.grade)
    return list(kept.values()), unmatched


def _read_group(path: str, group: str | None, *, on_conflict: str, allow_empty: bool):
    """The file's qrels lines, its groups, the line kept for each pair of ``group`` (by
    ``on_conflict``), how many lines of the group were read, and the :class:`Dedup` that counted
    repeats and conflicts. ValueError when the group is missing or needed."""
    numbered = list(iter_numbered_qrels(path, allow_empty=allow_empty))
    lines = [q for _, q in numbered]
    groups = list(dict.fromkeys(q.iteration for q in lines))
    if group is None and len(groups) > 1:
        raise ValueError(
            f"group: {path} holds judgment groups {', '.join(groups)} in its second column; "
            "import one at a time with --group G, each as a different --judge"
        )
    if group is not None and group not in groups:
        raise ValueError(f"group: {group!r} is not in {path} (groups: {', '.join(groups) or 'none'})")
    dedup = Dedup(path, policy=on_conflict, what="pair")
    kept: dict[tuple[str, str], int] = {}  # pair -> the index of the line imported for it
    read = 0
    for i, (lineno, line) in enumerate(numbered):
        if group is None or line.iteration == group:
            read += 1
            if dedup.add((line.qid, line.docid), line.grade, lineno):
                kept[(line.qid, line.docid)] = i
    return lines, groups, kept, read, dedup


def _judge(session: Session, name: str, create: bool) -> User:
    user = get_user(session, name)
    if user is not None:
        return user
    if not create:
        raise ValueError(
            f"judge: no user {name!r}; add them with `golden admin user add {name} --role judge`, "
            "or pass --create-judge to add a judge account without a login"
        )
    from curation.store.users import add_user, generate_password, set_active

    user = add_user(session, name, role="judge", password=generate_password())
    set_active(session, user, False)
    return user
