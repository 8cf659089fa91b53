"""Handing the pool out to judges: a shared overlap (calibration) set, then the rest split.

``assign`` draws an overlap set of pairs that every listed judge labels, spread across strata (in
proportion to their pairs, largest remainder) and within a stratum across as many queries as it can
(round robin over the queries in a seeded order). The other pairs ("main") are split between the
judges keeping each query's pairs with one judge, balanced by greedy longest-processing-time
(largest query first to the judge with the fewest main pairs). Each judge's queue starts with the
overlap pairs; main pairs are held back until a lead releases them when the project holds them.

Queue positions: overlap rows take positions below :data:`~curation.store.models.MAIN_BASE`, main rows
positions from it, so a judge always meets the calibration pairs first. Within a block the pairs of
one query are consecutive (one query at a time) in a per-judge seeded shuffle.
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field

from sqlalchemy import case, func, insert
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlmodel import Session, select

from curation.store.audit import record_audit
from curation.store.lookups import join_pair_text, lock_project
from curation.store.models import MAIN_BASE, Assignment, PoolPair, Project, Query, User, utcnow


@dataclass
class AssignReport:
    """What :func:`assign` added: pair counts per judge, and the overlap set's size and spread."""

    overlap_pairs: int = 0  # size of the overlap set (existing or new)
    overlap_queries: int = 0
    overlap_strata: int = 0
    new_overlap_rows: int = 0  # overlap assignment rows added (judges x pairs)
    new_main_pairs: int = 0
    per_judge: dict[str, dict[str, int]] = field(default_factory=dict)  # name -> {"overlap", "main", "queries"}
    held: bool = False  # main pairs wait for a lead's release
    unassigned_pairs: int = 0  # pairs of the pool still without a judge after this call
    note: str | None = None  # e.g. why there is no overlap set (a single judge)
    withheld_pairs: int = 0  # new pairs kept from people (a machine's accepted labels: curation.machine.escalation)


@dataclass(frozen=True)
class ReleaseRecord:
    """Who released the held-back main pairs, when, and at what agreement."""

    project: str
    lead: str
    agreement: float | None
    released_at: object
    main_pairs: int
    reason: str | None = None  # why it was released without a usable agreement


@dataclass(frozen=True)
class PairRef:
    """What assigning needs to know of a pair: its id, its query and the query's stratum."""

    pair_id: int
    query_id: int
    stratum: str


def _apportion(k: int, sizes: dict[str, int], rng: random.Random) -> dict[str, int]:
    """Split ``k`` items over groups: one each first (when ``k`` allows, else to the largest
    groups), the rest in proportion to the group sizes beyond that one, by largest remainder
    (Hamilton's method); ties broken in a seeded order."""
    keys = sorted(sizes)
    rng.shuffle(keys)  # seeded tie-break order
    quota = {key: 0 for key in keys}
    if k <= 0 or not keys:
        return quota
    if k < len(keys):
        for key in sorted(keys, key=lambda x: -sizes[x])[:k]:  # stable sort keeps the seeded order for ties
            quota[key] = 1
        return quota
    for key in keys:
        quota[key] = 1
    rest = k - len(keys)
    spare = {key: sizes[key] - 1 for key in keys}
    total = sum(spare.values())
    if rest and total:
        exact = {key: rest * spare[key] / total for key in keys}
        for key in keys:
            quota[key] += math.floor(exact[key])
        left = rest - sum(math.floor(v) for v in exact.values())
        for key in sorted(keys, key=lambda x: -(exact[x] - math.floor(exact[x])))[:left]:
            quota[key] += 1
    return quota


def draw_overlap(pairs: Sequence[PairRef], k: int, *, seed: int = 0) -> list[int]:
    """Draw ``k`` pair ids (all when fewer) spread across strata and queries.

    Strata get quotas by :func:`_apportion` over their pair counts (every stratum one pair when
    ``k`` is at least the number of strata, the rest proportionally, largest remainder). Within a
    stratum the pairs are taken round robin over its queries in a seeded order, each query's pairs
    in a seeded order, so the set covers as many queries as the quota allows. Deterministic for a
    given seed and input (the input order does not matter). Returns the ids sorted."""
    if k < 0:
        raise ValueError(f"overlap must be >= 0, got {k}")
    rng = random.Random(f"overlap:{seed}")
    by_stratum: dict[str, dict[int, list[int]]] = defaultdict(lambda: defaultdict(list))
    for p in sorted(pairs, key=lambda p: (p.stratum, p.query_id, p.pair_id)):
        by_stratum[p.stratum][p.query_id].append(p.pair_id)
    sizes = {s: sum(len(v) for v in qs.values()) for s, qs in by_stratum.items()}
    quota = _apportion(min(k, sum(sizes.values())), sizes, rng)
    chosen: list[int] = []
    for stratum in sorted(by_stratum):
        queries = sorted(by_stratum[stratum])
        rng.shuffle(queries)
        lists = []
        for q in queries:
            ids = list(by_stratum[stratum][q])
            rng.shuffle(ids)
            lists.append(ids)
        need, i = quota[stratum], 0
        while need > 0:
            for ids in lists:
                if i < len(ids) and need > 0:
                    chosen.append(ids[i])
                    need -= 1
            i += 1
    return sorted(chosen)


def split_main(
    groups: dict[int, int], judges: Sequence[int], *, loads: dict[int, int] | None = None, seed: int = 0
) -> dict[int, int]:
    """Give each query (``groups``: query id -> number of pairs) to one judge, balancing pair counts
    by greedy longest-processing-time: largest query first, to the judge with the fewest pairs so
    far (``loads``: pairs they already have; ties: the order of ``judges``); queries of equal size
    in a seeded order. Returns query id -> judge id."""
    if not judges:
        raise ValueError("judges: give at least one judge")
    rng = random.Random(f"split:{seed}")
    load = {j: (loads or {}).get(j, 0) for j in judges}
    order = sorted(groups)
    rng.shuffle(order)
    order.sort(key=lambda q: -groups[q])  # stable: equal sizes stay in the seeded order
    rank = {j: i for i, j in enumerate(judges)}
    out = {}
    for q in order:
        j = min(judges, key=lambda j: (load[j], rank[j]))
        out[q] = j
        load[j] += groups[q]
    return out


def _queue_order(pair_ids: Sequence[int], query_of: dict[int, int], rng: random.Random) -> list[int]:
    """The pairs grouped by query (one query at a time): queries in a seeded order, each query's
    pairs in a seeded order."""
    by_query: dict[int, list[int]] = defaultdict(list)
    for pid in sorted(pair_ids):
        by_query[query_of[pid]].append(pid)
    queries = sorted(by_query)
    rng.shuffle(queries)
    out = []
    for q in queries:
        ids = by_query[q]
        rng.shuffle(ids)
        out.extend(ids)
    return out


def main_visible(project: Project) -> bool:
    """Whether judges see their main pairs: the project does not hold them, or a lead released them."""
    return (not project.hold_main) or project.released_at is not None


def _resolve_judges(session: Session, judges: Sequence[User | str]) -> list[User]:
    if isinstance(judges, str):
        judges = [j for j in judges.split(",") if j.strip()]
    if not judges:
        raise ValueError("judges: name at least one judge, e.g. --judges alice,bob")
    out, seen = [], set()
    for j in judges:
        if isinstance(j, str):
            user = session.exec(select(User).where(User.name == j.strip())).first()
            if user is None:
                raise ValueError(
                    f"judges: no user {j.strip()!r}; add them with `golden user add {j.strip()} --role judge`"
                )
        else:
            user = j
        if user.id in seen:
            raise ValueError(f"judges: {user.name!r} is listed twice")
        if not user.active:
            raise ValueError(f"judges: {user.name!r} is disabled")
        seen.add(user.id)
        out.append(user)
    return out


def assign(
    session: Session,
    project: Project,
    judges: Sequence[User | str],
    *,
    overlap: int = 100,
    seed: int = 0,
    hold: bool | None = None,
    withhold: Collection[int] = (),
    order: str = "default",
    compare=(),
    metric: str = "ndcg@10",
    tie: float = 0.0,
    machine_figures=None,
) -> AssignReport:
    """Assign the project's pairs that no judge has yet, and commit.

    The first call draws ``overlap`` pairs (all pairs when the pool is smaller) for every listed
    judge (:func:`draw_overlap`); the other unassigned pairs become main work, split by
    :func:`split_main`. Later calls (after ``extend_pool``) add only new pairs, as main work,
    keeping a query's new pairs with the judge who already has that query when that judge is
    listed, and give a listed judge who lacks the existing overlap set their calibration rows.
    ``hold`` (default: hold when there is an overlap set and the project was not released) keeps
    main pairs hidden from judges until :func:`release`. Deterministic for a given ``seed`` and
    store contents. Pairs of dropped queries are not assigned. ``withhold``: pair ids left out of the
    main work (still eligible for the overlap set), e.g. those whose machine label is accepted
    (:func:`curation.machine.escalation.escalation`); a later call without them assigns them.
    ``order="decisive"`` records the comparisons ``compare`` (["A,B", ...]: is B higher than A on
    ``metric``?) and queues each judge's main pairs in blocks of a query's most decisive pairs, most
    unsettled weight first, shuffled within a block (:mod:`curation.judge.decisive`); the judges'
    open main pairs are re-queued that way too, so running it again after a batch of judgments
    re-prioritises. The overlap set is drawn as for the default order. ``machine_figures`` (with
    the decisive order; :func:`curation.machine.guide.project_figures`) guides the priorities by a
    machine judge's calibrated probabilities (:func:`curation.judge.decisive.guided_priorities`);
    the judges see nothing of it.
    ValueError when ``judges`` is empty, names an unknown user, or ``overlap`` < 0."""
    if isinstance(overlap, bool) or not isinstance(overlap, int) or overlap < 0:
        raise ValueError(f"overlap must be a whole number >= 0, got {overlap!r}")
    if order not in ("default", "decisive"):
        raise ValueError(f"order must be 'default' or 'decisive', not {order!r}")
    try:
        return _assign(session, project, judges, overlap=overlap, seed=seed, hold=hold, withhold=set(withhold),
                       order=order, compare=compare, metric=metric, tie=tie, machine_figures=machine_figures)
    except IntegrityError:  # another assign got there first (the lock makes this a last resort)
        session.rollback()
        raise ValueError(
            f"project {project.name!r}: the project was assigned while this command ran; run it again to add "
            "only the new pairs"
        ) from None
    except OperationalError as exc:
        session.rollback()
        if "locked" not in str(exc.orig).lower():
            raise
        raise ValueError(  # SQLite's busy timeout ran out while another command held the store
            f"project {project.name!r}: another command kept the store locked while this one waited to assign; "
            "run it again when that one has finished"
        ) from None


def _assign(session: Session, project: Project, judges: Sequence[User | str], *, overlap: int, seed: int,
            hold: bool | None, withhold: set[int] = frozenset(), order: str = "default", compare=(),
            metric: str = "ndcg@10", tie: float = 0.0, machine_figures=None) -> AssignReport:
    """:func:`assign` under the project's write lock: a concurrent assign waits for this one to
    commit, then reads what it added (so pairs are never handed out twice)."""
    lock_project(session, project)
    users = _resolve_judges(session, judges)
    pid = project.id
    refs = [
        PairRef(pair_id, query_id, stratum)
        for pair_id, query_id, stratum in session.exec(
            join_pair_text(select(PoolPair.id, PoolPair.query_id, Query.stratum_key))
            .where(PoolPair.project_id == pid, Query.status != "dropped")
        ).all()
    ]
    query_of = {r.pair_id: r.query_id for r in refs}
    existing = session.exec(
        select(Assignment.pair_id, Assignment.judge_id, Assignment.kind, Assignment.position).where(
            Assignment.project_id == pid
        )
    ).all()
    overlap_set = sorted({p for p, _, k, _ in existing if k == "overlap"})
    main_owner = {p: j for p, j, k, _ in existing if k == "main"}
    has_overlap: dict[int, set[int]] = defaultdict(set)
    next_pos: dict[tuple[int, str], int] = {}
    for p, j, k, pos in existing:
        if k == "overlap":
            has_overlap[j].add(p)
        key = (j, k)
        next_pos[key] = max(next_pos.get(key, 0), pos + 1)
    assigned = set(overlap_set) | main_owner.keys()
    new = [r for r in refs if r.pair_id not in assigned]

    no_overlap_note = None
    if not overlap_set and overlap > 0 and new:
        others = {j for _, j, _, _ in existing} - {u.id for u in users}
        if len(users) == 1 and not others:
            # Agreement needs two judges on the same pairs: an overlap set would only hold one judge's
            # work back for a calibration nobody can measure (issue 14).
            no_overlap_note = (f"no overlap set: {users[0].name} is the only judge, and agreement needs at least two "
                               "judges labelling the same pairs; all pairs are main work, not held back")
        else:
            overlap_set = draw_overlap(new, overlap, seed=seed)
    overlap_lookup = set(overlap_set)
    new_main = [r for r in new if r.pair_id not in overlap_lookup and r.pair_id not in withhold]

    judge_ids = [u.id for u in users]
    listed = set(judge_ids)
    # A query already (partly) owned by a listed judge keeps going to that judge.
    owners_of_query: dict[int, Counter] = defaultdict(Counter)
    for p, j in main_owner.items():
        if p in query_of:
            owners_of_query[query_of[p]][j] += 1
    groups: dict[int, list[int]] = defaultdict(list)
    for r in new_main:
        groups[r.query_id].append(r.pair_id)
    owner: dict[int, int] = {}
    free: dict[int, int] = {}
    for q, ids in groups.items():
        keep = [(c, j) for j, c in owners_of_query[q].items() if j in listed]
        if keep:
            owner[q] = max(keep, key=lambda cj: (cj[0], -judge_ids.index(cj[1])))[1]
        else:
            free[q] = len(ids)
    loads = Counter(main_owner.values())
    for q, j in owner.items():
        loads[j] += len(groups[q])
    owner.update(split_main(free, judge_ids, loads=dict(loads), seed=seed))

    priority = None
    if order == "decisive":
        from curation.judge import decisive

        decisive.record_comparisons(session, project, compare, metric=metric, tie=tie)
        session.flush()
        priority = decisive.pair_priority_map(session, project, machine=machine_figures)

    now = utcnow()
    rows = []
    withheld = sum(1 for r in new if r.pair_id not in overlap_lookup and r.pair_id in withhold)
    report = AssignReport(overlap_pairs=len(overlap_set), new_main_pairs=len(new_main), withheld_pairs=withheld,
                          note=no_overlap_note)
    refs_by_id = {r.pair_id: r for r in refs}
    report.overlap_queries = len({refs_by_id[p].query_id for p in overlap_set if p in refs_by_id})
    report.overlap_strata = len({refs_by_id[p].stratum for p in overlap_set if p in refs_by_id})
    for u in users:
        rng = random.Random(f"queue:{seed}:{u.name}")
        missing_overlap = [p for p in overlap_set if p not in has_overlap[u.id]]
        pos = next_pos.get((u.id, "overlap"), 0)
        for p in _queue_order(missing_overlap, query_of, rng):
            rows.append(dict(project_id=pid, pair_id=p, judge_id=u.id, kind="overlap", exclusive_pair_id=None,
                             position=pos, created_at=now, skipped=False))
            pos += 1
        if pos >= MAIN_BASE:
            raise ValueError(f"overlap: at most {MAIN_BASE - 1} overlap pairs per judge")
        mine = [p for q, j in owner.items() if j == u.id for p in groups[q]]
        pos = max(next_pos.get((u.id, "main"), MAIN_BASE), MAIN_BASE)
        queued = _queue_order(mine, query_of, rng) if priority is None else \
            decisive.decisive_queue_order(mine, query_of, priority, rng)
        for p in queued:
            rows.append(dict(project_id=pid, pair_id=p, judge_id=u.id, kind="main", exclusive_pair_id=p,
                             position=pos, created_at=now, skipped=False))
            pos += 1
        report.new_overlap_rows += len(missing_overlap)
        report.per_judge[u.name] = {
            "overlap": len(missing_overlap),
            "main": len(mine),
            "queries": len({query_of[p] for p in mine}),
        }
    proj = session.get(Project, pid)
    try:
        if rows:
            session.execute(insert(Assignment), rows)
        if priority is not None:  # the judges' open main pairs, earlier ones with these, queued by priority
            decisive.requeue_open(session, project, [u.id for u in users], query_of, priority, seed)
        if hold is not None:
            proj.hold_main = bool(hold)
            if hold:
                proj.released_at = None
        elif not existing:  # first assignment: hold main work while there is calibration to review
            proj.hold_main = bool(overlap_set)
        session.commit()
    except Exception:
        session.rollback()
        raise
    report.held = not main_visible(proj)
    assigned_now = assigned | {r["pair_id"] for r in rows}
    report.unassigned_pairs = sum(1 for r in refs if r.pair_id not in assigned_now)
    return report


def release(session: Session, project: Project, lead: User, *, agreement: float | None = None,
            reason: str | None = None) -> ReleaseRecord:
    """Release the held-back main pairs to their judges, recording who released them, when, at
    what agreement (e.g. Krippendorff's alpha on the overlap set) and, when a lead released without
    a usable agreement, why (``reason``), and commit. The check that an agreement was measured is
    :func:`curation.agree.release.review_and_release`'s. ValueError when ``lead`` is not a lead or
    admin, or ``agreement`` is not a finite number at most 1 (chance-corrected measures go below 0,
    and alpha can go below -1 on small samples)."""
    if lead.role not in ("lead", "admin"):
        raise ValueError(f"lead: {lead.name!r} is a {lead.role}; only a lead or admin can release work")
    if agreement is not None:
        if isinstance(agreement, bool) or not isinstance(agreement, (int, float)) or not math.isfinite(agreement) \
                or agreement > 1.0:
            raise ValueError(
                f"agreement must be a finite number at most 1 (e.g. Krippendorff's alpha), got {agreement!r}"
            )
        agreement = float(agreement)
    proj = session.get(Project, project.id)
    proj.released_at = utcnow()
    proj.released_by_id = lead.id
    proj.released_agreement = agreement
    proj.released_reason = (reason or "").strip() or None
    session.add(proj)
    detail = {"agreement": agreement} if proj.released_reason is None else {
        "agreement": agreement, "forced": proj.released_reason}
    record_audit(session, "release", actor=lead, target=proj.name, project=proj, detail=detail)
    session.commit()
    n = session.exec(
        select(func.count()).select_from(Assignment).where(Assignment.project_id == proj.id, Assignment.kind == "main")
    ).one()
    return ReleaseRecord(project=proj.name, lead=lead.name, agreement=agreement, released_at=proj.released_at,
                         main_pairs=n, reason=proj.released_reason)


def hold(session: Session, project: Project) -> None:
    """Hold main pairs back again (until the next :func:`release`) and commit."""
    proj = session.get(Project, project.id)
    proj.hold_main = True
    proj.released_at = None
    session.add(proj)
    session.commit()


def queue_summary(session: Session, project: Project) -> dict[str, dict[str, int]]:
    """Per judge name: overlap, main, done and remaining assignment counts (for leads and the CLI)."""
    rows = session.exec(
        select(
            User.name,
            func.sum(case((Assignment.kind == "overlap", 1), else_=0)),
            func.sum(case((Assignment.kind == "main", 1), else_=0)),
            func.sum(case((Assignment.done_at.is_not(None), 1), else_=0)),
        )
        .join(User, User.id == Assignment.judge_id)
        .where(Assignment.project_id == project.id)
        .group_by(User.name)
        .order_by(User.name)
    ).all()
    return {
        name: {
            "overlap": int(o or 0), "main": int(m or 0), "done": int(d or 0),
            "remaining": int((o or 0) + (m or 0) - (d or 0)),
        }
        for name, o, m, d in rows
    }
