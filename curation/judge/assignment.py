"""Handing the pool out to judges: a shared overlap (calibration) set, then the rest split.

``assign`` draws an overlap set of pairs that every listed judge labels, spread across strata (in
proportion to their pairs, largest remainder) and within a stratum across as many queries as it can
(round robin over the queries in a seeded order). The other pairs ("main") are split between the
judges keeping each query's pairs with one judge, balanced by greedy longest-processing-time
(largest query first to the judge with the fewest main pairs). Each judge's queue starts with the
overlap pairs; main pairs are held back until a lead releases them when the project holds them.

k judges per pair (``judges_per_pair``): instead of every listed judge, each overlap pair goes to
``k`` of them, and a seeded share (``share``) of the main pairs gets ``k - 1`` judges besides its
owner; the judges of a pair are those with the fewest such pairs so far (:func:`spread_judges`). A
shared main pair keeps one owner row (``exclusive_pair_id``) and gets ``k - 1`` more main rows
without it, held back with the rest of the main work.

Queue positions: overlap rows take positions below :data:`~curation.store.models.MAIN_BASE`, main rows
positions from it, so a judge always meets the calibration pairs first. Within a block the pairs of
one query are consecutive (one query at a time) in a per-judge seeded shuffle.
"""

from __future__ import annotations

import math
import random
from collections import Counter, defaultdict
from collections.abc import Callable, Collection, Mapping, Sequence
from dataclasses import dataclass, field

from sqlalchemy import case, func, insert
from sqlalchemy.exc import IntegrityError, OperationalError
from sqlmodel import Session, select

from curation.store.audit import record_audit
from curation.store.lookups import join_pair_text, lock_project
from curation.store.models import KNOWN_KIND, MAIN_BASE, Assignment, PoolPair, Project, Query, User, utcnow
from curation.store.roles import is_lead


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
    judges_per_pair: int | None = None  # k judges per overlap (and shared main) pair; None: every listed judge
    shared_main_pairs: int = 0  # new main pairs given to k judges (the sampled share)


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


def spread_judges(pair_ids: Sequence[int], judge_ids: Sequence[int], k: int, *,
                  have: Mapping[int, Collection[int]] | None = None, loads: Mapping[int, int] | None = None,
                  seed: int = 0) -> dict[int, list[int]]:
    """Which judges to add so that each pair of ``pair_ids`` has ``k`` judges: ``have`` (pair ->
    the judges it already has) count towards ``k``; the added ones are the judges without the pair
    who have the fewest added pairs so far (``loads``: what they start with), ties in a seeded order
    of the judges; pairs in a seeded order. Returns pair id -> the judge ids to add (in
    ``judge_ids``' order). ValueError when ``k`` < 2 or more than the judges there are.

    >>> spread_judges([1, 2, 3], [10, 20, 30], 2, seed=0)
    {1: [10, 30], 2: [10, 20], 3: [20, 30]}
    """
    if k < 2:
        raise ValueError(f"judges_per_pair must be at least 2, got {k}")
    if k > len(judge_ids):
        raise ValueError(f"judges_per_pair: {k} judges per pair, but only {len(judge_ids)} judges are listed")
    rng = random.Random(f"spread:{seed}")
    tie = list(judge_ids)
    rng.shuffle(tie)
    tie_rank = {j: i for i, j in enumerate(tie)}
    load = {j: (loads or {}).get(j, 0) for j in judge_ids}
    order = sorted(set(pair_ids))
    rng.shuffle(order)
    out: dict[int, list[int]] = {}
    for p in order:
        already = set((have or {}).get(p, ()))
        need = k - len(already)
        if need <= 0:
            continue
        free = sorted((j for j in judge_ids if j not in already), key=lambda j: (load[j], tie_rank[j]))
        picked = free[:need]
        for j in picked:
            load[j] += 1
        out[p] = [j for j in judge_ids if j in picked]
    return out


def draw_share(pair_ids: Sequence[int], share: float, *, seed: int = 0) -> list[int]:
    """A seeded sample of ``round(share * len(pair_ids))`` of the pairs (the input order does not
    matter); returns the ids sorted."""
    if not 0.0 <= share <= 1.0:
        raise ValueError(f"share must be between 0 and 1, got {share!r}")
    ids = sorted(set(pair_ids))
    n = round(share * len(ids))
    return sorted(random.Random(f"share:{seed}").sample(ids, n))


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


BLOCK = 10  # pairs of one query queued together (in a seeded shuffle) by the decisive order


class Priorities(dict):
    """Pair id -> priority in the decisive order, and ``planned``: the pair ids that a machine-guided
    plan asks for (:mod:`curation.evaluate.plan`; empty for the blind order), which make their
    query's first block alone (:func:`first_block`)."""

    def __init__(self, *args, planned=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.planned = frozenset(planned)


def first_block(n_planned: int) -> int:
    """How many of a query's most decisive pairs make its first block: the pairs a machine-guided
    plan asks for in it (1 to :data:`BLOCK`) when there are any, else :data:`BLOCK`. With a plan,
    blocks are ranked by their MEAN priority (the plan's value per pair judged), else by their sum."""
    return min(n_planned, BLOCK) if n_planned > 0 else BLOCK


def decisive_queue_order(pair_ids, query_of: dict[int, int], priority: dict[int, float], rng) -> list[int]:
    """The decisive queue: each query's pairs cut into blocks of :data:`BLOCK`, its most decisive
    pairs first (ties in the seeded order); blocks ordered by their summed priority (ties in a
    seeded order); WITHIN a block the pairs are shuffled (seeded), so the order a judge sees inside a
    query never depends on a rank or a system. When a machine guides the order (``priority`` a
    :class:`Priorities` with planned pairs), a query's first block is its planned pairs alone
    (:func:`first_block`) and blocks are ordered by their mean priority."""
    from collections import defaultdict

    planned = getattr(priority, "planned", frozenset())
    by_query: dict[int, list[int]] = defaultdict(list)
    for pid in sorted(pair_ids):
        by_query[query_of[pid]].append(pid)
    blocks = []
    queries = sorted(by_query)
    rng.shuffle(queries)
    for tie_rank, q in enumerate(queries):
        ids = by_query[q]
        rng.shuffle(ids)
        ids.sort(key=lambda p: -priority.get(p, 0.0))  # stable: equal priorities keep the seeded order
        cuts = [0, first_block(sum(p in planned for p in ids))] if planned else [0]
        cuts += list(range(cuts[-1] + BLOCK, len(ids), BLOCK)) if planned else list(range(BLOCK, len(ids), BLOCK))
        for start, end in zip(cuts, [*cuts[1:], len(ids)]):
            block = ids[start:end]
            if not block:
                continue
            value = sum(priority.get(p, 0.0) for p in block)
            blocks.append((-(value / len(block) if planned else value), start, tie_rank, block))
    blocks.sort(key=lambda b: b[:3])
    out = []
    for *_, block in blocks:
        block = sorted(block)
        rng.shuffle(block)
        out.extend(block)
    return out



def requeue_open(session, project, judge_ids, query_of: dict[int, int], priority: dict[int, float], seed: int) -> int:
    """Re-number the positions of the listed judges' open main pairs (not yet labelled) in the
    decisive order, after the positions of their labelled ones; returns how many moved. Does not
    commit."""
    import random

    from sqlalchemy import update
    from sqlmodel import select

    from curation.store.models import MAIN_BASE, Assignment

    moved = 0
    for jid in judge_ids:
        rows = session.exec(select(Assignment.id, Assignment.pair_id, Assignment.position, Assignment.done_at,
                                   Assignment.kind).where(
            Assignment.project_id == project.id, Assignment.judge_id == jid, Assignment.kind.in_(("main", KNOWN_KIND))
        )).all()
        open_rows = {pid: aid for aid, pid, _, done, kind in rows
                     if done is None and pid in query_of and kind == "main"}
        if not open_rows:
            continue
        start = max([pos + 1 for _, _, pos, done, _ in rows if done is not None] + [MAIN_BASE])
        rng = random.Random(f"requeue:{seed}:{jid}")
        order = [open_rows[pid] for pid in decisive_queue_order(list(open_rows), query_of, priority, rng)]
        # Open known-answer rows keep their places in the open queue (after as many main rows as before).
        was = sorted(((pos, aid, kind) for aid, _, pos, done, kind in rows if done is None), key=lambda r: r[:2])
        for i, (_, aid, kind) in enumerate(was):
            if kind == KNOWN_KIND:
                order.insert(min(i, len(order)), aid)
        for i, aid in enumerate(order):
            session.execute(update(Assignment).where(Assignment.id == aid).values(position=start + i))
            moved += 1
    return moved


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
                    f"judges: no user {j.strip()!r}; add them with `golden admin user add {j.strip()} --role judge`"
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
    prioritise: Callable[[Session, Project], Mapping[int, float]] | None = None,
    judges_per_pair: int | None = None,
    share: float = 0.0,
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
    ``prioritise`` (the decisive order, :func:`curation.evaluate.decisive.assign_decisive`): called
    under the project's lock, it returns each pair's priority, and each judge's main pairs are
    queued in blocks of a query's most decisive pairs, most unsettled weight first, shuffled within a
    block (:func:`decisive_queue_order`); the judges' open main pairs are re-queued that way too, so
    running it again after a batch of judgments re-prioritises. The overlap set is drawn as for the
    default order.
    ``judges_per_pair`` (k >= 2; None: every listed judge): each overlap pair goes to k of the listed
    judges (:func:`spread_judges`), and ``share`` (0 to 1, with ``judges_per_pair``) of the new main
    pairs, drawn seeded (:func:`draw_share`), gets k - 1 judges besides its owner. A later call with
    k tops up pairs that have fewer than k judges.
    ValueError when ``judges`` is empty, names an unknown user, ``overlap`` < 0, k < 2 or more than
    the listed judges, or ``share`` is outside [0, 1] or given without k."""
    if isinstance(overlap, bool) or not isinstance(overlap, int) or overlap < 0:
        raise ValueError(f"overlap must be a whole number >= 0, got {overlap!r}")
    if judges_per_pair is not None and (isinstance(judges_per_pair, bool) or not isinstance(judges_per_pair, int)
                                        or judges_per_pair < 2):
        raise ValueError(f"judges_per_pair must be a whole number >= 2, got {judges_per_pair!r}")
    if isinstance(share, bool) or not isinstance(share, (int, float)) or not 0.0 <= share <= 1.0:
        raise ValueError(f"share must be a number between 0 and 1, got {share!r}")
    if share and judges_per_pair is None:
        raise ValueError("share: give judges_per_pair too (how many judges label the shared pairs)")
    try:
        return _assign(session, project, judges, overlap=overlap, seed=seed, hold=hold, withhold=set(withhold),
                       prioritise=prioritise, judges_per_pair=judges_per_pair, share=float(share))
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
            hold: bool | None, withhold: set[int] = frozenset(),
            prioritise: Callable[[Session, Project], Mapping[int, float]] | None = None,
            judges_per_pair: int | None = None, share: float = 0.0) -> AssignReport:
    """:func:`assign` under the project's write lock: a concurrent assign waits for this one to
    commit, then reads what it added (so pairs are never handed out twice)."""
    lock_project(session, project)
    users = _resolve_judges(session, judges)
    if judges_per_pair is not None and judges_per_pair > len(users):
        raise ValueError(f"judges_per_pair: {judges_per_pair} judges per pair, but only {len(users)} judges are "
                         "listed; list more judges with --judges")
    pid = project.id
    refs = [
        PairRef(pair_id, query_id, stratum)
        for pair_id, query_id, stratum in session.exec(
            join_pair_text(select(PoolPair.id, PoolPair.query_id, Query.stratum_key))
            .where(PoolPair.project_id == pid, Query.status != "dropped")
        ).all()
    ]
    query_of = {r.pair_id: r.query_id for r in refs}
    work = _existing_work(session, pid)
    new = [r for r in refs if r.pair_id not in work.assigned]

    overlap_set, no_overlap_note = work.overlap_set, None
    if not overlap_set and overlap > 0 and new:
        others = {j for _, j, _, _ in work.rows} - {u.id for u in users}
        if len(users) == 1 and not others:
            # Agreement needs two judges on the same pairs: an overlap set would only hold one judge's
            # work back for a calibration nobody can measure.
            no_overlap_note = (f"no overlap set: {users[0].name} is the only judge, and agreement needs at least two "
                               "judges labelling the same pairs; all pairs are main work, not held back")
        else:
            overlap_set = draw_overlap(new, overlap, seed=seed)
    overlap_lookup = set(overlap_set)
    new_main = [r for r in new if r.pair_id not in overlap_lookup and r.pair_id not in withhold]
    groups, owner = _main_owners(new_main, work.main_owner, query_of, [u.id for u in users], seed=seed)

    priority = None if prioritise is None else prioritise(session, project)

    withheld = sum(1 for r in new if r.pair_id not in overlap_lookup and r.pair_id in withhold)
    report = AssignReport(overlap_pairs=len(overlap_set), new_main_pairs=len(new_main), withheld_pairs=withheld,
                          note=no_overlap_note)
    refs_by_id = {r.pair_id: r for r in refs}
    report.overlap_queries = len({refs_by_id[p].query_id for p in overlap_set if p in refs_by_id})
    report.overlap_strata = len({refs_by_id[p].stratum for p in overlap_set if p in refs_by_id})
    plan = None
    if judges_per_pair is not None:
        plan = _k_plan(users, overlap_set, work, new_main, groups, owner, judges_per_pair, share, seed=seed)
        report.judges_per_pair = judges_per_pair
        report.shared_main_pairs = len(plan.shared)
    rows = _queue_rows(users, overlap_set, work, groups, owner, query_of, priority, report, pid=pid, seed=seed,
                       now=utcnow(), plan=plan)
    proj = session.get(Project, pid)
    try:
        if rows:
            session.execute(insert(Assignment), rows)
        if priority is not None:  # the judges' open main pairs, earlier ones with these, queued by priority
            requeue_open(session, project, [u.id for u in users], query_of, priority, seed)
        from curation.judge.gold import mix_known

        session.flush()
        mix_known(session, proj, seed=seed)  # known-answer pairs at the project's rate (none when it is 0)
        if hold is not None:
            proj.hold_main = bool(hold)
            if hold:
                proj.released_at = None
        elif not work.rows:  # first assignment: hold main work while there is calibration to review
            proj.hold_main = bool(overlap_set)
        session.commit()
    except Exception:
        session.rollback()
        raise
    report.held = not main_visible(proj)
    assigned_now = work.assigned | {r["pair_id"] for r in rows}
    report.unassigned_pairs = sum(1 for r in refs if r.pair_id not in assigned_now)
    return report


@dataclass
class _Work:
    """The project's assignment rows so far, as :func:`_assign` needs them."""

    rows: list  # (pair id, judge id, kind, position)
    overlap_set: list[int]  # the overlap pairs, sorted
    main_owner: dict[int, int]  # main pair -> its judge
    has_overlap: dict[int, set[int]]  # judge -> the overlap pairs they have
    next_pos: dict[tuple[int, str], int]  # (judge, kind) -> the next free queue position
    assigned: set[int]


@dataclass
class _KPlan:
    """With k judges per pair: the overlap pairs to add to each judge, and the shared main pairs'
    extra judges."""

    overlap_for: dict[int, list[int]]  # judge id -> the overlap pairs to add
    shared: dict[int, list[int]]  # shared main pair -> its extra judges (not its owner)


def _k_plan(users: list[User], overlap_set: list[int], work: _Work, new_main: list[PairRef],
            groups: dict[int, list[int]], owner: dict[int, int], k: int, share: float, *, seed: int) -> _KPlan:
    ids = [u.id for u in users]
    have: dict[int, set[int]] = defaultdict(set)
    for j, ps in work.has_overlap.items():
        for p in ps:
            have[p].add(j)
    loads = {j: len(work.has_overlap.get(j, ())) for j in ids}
    overlap_for: dict[int, list[int]] = defaultdict(list)
    for p, js in spread_judges(overlap_set, ids, k, have=have, loads=loads, seed=seed).items():
        for j in js:
            overlap_for[j].append(p)
    owner_of = {p: owner[q] for q, ps in groups.items() for p in ps}
    chosen = draw_share([r.pair_id for r in new_main], share, seed=seed) if share else []
    extra = spread_judges(chosen, ids, k, have={p: {owner_of[p]} for p in chosen}, seed=seed)
    return _KPlan(dict(overlap_for), extra)


def _existing_work(session: Session, pid: int) -> _Work:
    rows = session.exec(
        select(Assignment.pair_id, Assignment.judge_id, Assignment.kind, Assignment.position,
               Assignment.exclusive_pair_id).where(Assignment.project_id == pid)
    ).all()
    overlap_set = sorted({p for p, _, k, _, _ in rows if k == "overlap"})
    main_owner = {p: j for p, j, k, _, x in rows if k == "main" and x is not None}  # a shared pair's owner row
    rows = [r[:4] for r in rows]
    has_overlap: dict[int, set[int]] = defaultdict(set)
    next_pos: dict[tuple[int, str], int] = {}
    for p, j, k, pos in rows:
        if k == KNOWN_KIND:  # a known-answer row: in the main block of the queue, and the judge has the pair
            has_overlap[j].add(p)
            k = "main"
        if k == "overlap":
            has_overlap[j].add(p)
        key = (j, k)
        next_pos[key] = max(next_pos.get(key, 0), pos + 1)
    assigned = set(overlap_set) | main_owner.keys() | {p for p, _, k, _ in rows if k == KNOWN_KIND}
    return _Work(rows, overlap_set, main_owner, has_overlap, next_pos, assigned)


def _main_owners(new_main: list[PairRef], main_owner: dict[int, int], query_of: dict[int, int],
                 judge_ids: list[int], *, seed: int) -> tuple[dict[int, list[int]], dict[int, int]]:
    """The new main pairs by query, and each query's judge: a query already (partly) owned by a
    listed judge keeps going to that judge; the others are split by :func:`split_main`."""
    listed = set(judge_ids)
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
    return groups, owner


def _queue_rows(users: list[User], overlap_set: list[int], work: _Work, groups: dict[int, list[int]],
                owner: dict[int, int], query_of: dict[int, int], priority, report: AssignReport, *, pid: int,
                seed: int, now, plan: _KPlan | None = None) -> list[dict]:
    """Each listed judge's new assignment rows, in queue order: the overlap pairs they lack (with k
    judges per pair: those ``plan`` gives them), then their main pairs and the shared main pairs they
    were added to (in the decisive order when there are priorities); counted in ``report``."""
    rows = []
    shared_with: dict[int, set[int]] = defaultdict(set)
    for p, js in (plan.shared if plan else {}).items():
        for j in js:
            shared_with[j].add(p)
    for u in users:
        rng = random.Random(f"queue:{seed}:{u.name}")
        if plan is None:
            missing_overlap = [p for p in overlap_set if p not in work.has_overlap[u.id]]
        else:
            missing_overlap = sorted(plan.overlap_for.get(u.id, ()))
        pos = work.next_pos.get((u.id, "overlap"), 0)
        for p in _queue_order(missing_overlap, query_of, rng):
            rows.append(dict(project_id=pid, pair_id=p, judge_id=u.id, kind="overlap", exclusive_pair_id=None,
                             position=pos, created_at=now, skipped=False))
            pos += 1
        if pos >= MAIN_BASE:
            raise ValueError(f"overlap: at most {MAIN_BASE - 1} overlap pairs per judge")
        mine = [p for q, j in owner.items() if j == u.id for p in groups[q]]
        extra = shared_with.get(u.id, set())
        pos = max(work.next_pos.get((u.id, "main"), MAIN_BASE), MAIN_BASE)
        queued = _queue_order(mine + sorted(extra), query_of, rng) if priority is None else \
            decisive_queue_order(mine + sorted(extra), query_of, priority, rng)
        for p in queued:
            rows.append(dict(project_id=pid, pair_id=p, judge_id=u.id, kind="main",
                             exclusive_pair_id=None if p in extra else p,
                             position=pos, created_at=now, skipped=False))
            pos += 1
        report.new_overlap_rows += len(missing_overlap)
        report.per_judge[u.name] = {
            "overlap": len(missing_overlap),
            "main": len(mine) + len(extra),
            "queries": len({query_of[p] for p in mine} | {query_of[p] for p in extra}),
        }
    return rows


def release(session: Session, project: Project, lead: User, *, agreement: float | None = None,
            reason: str | None = None) -> ReleaseRecord:
    """Release the held-back main pairs to their judges, recording who released them, when, at
    what agreement (e.g. Krippendorff's alpha on the overlap set) and, when a lead released without
    a usable agreement, why (``reason``), and commit. The check that an agreement was measured is
    :func:`curation.agree.release.review_and_release`'s. ValueError when ``lead`` is not a lead or
    admin, or ``agreement`` is not a finite number at most 1 (chance-corrected measures go below 0,
    and alpha can go below -1 on small samples)."""
    if not is_lead(lead):
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
        .where(Assignment.project_id == project.id, Assignment.kind != KNOWN_KIND)  # pool work only
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
