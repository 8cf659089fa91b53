"""What a store holds that people made: the rows a command must not throw away silently.

``golden demo`` rebuilds its folder's store from scratch; before it does, it asks
:func:`work_counts` whether anyone has judged, adjudicated, imported, decided a leak, written a
guidelines version or frozen an export version in it (re-running the demo used to wipe
all of that without a word).
"""

from __future__ import annotations

from sqlalchemy import func
from sqlmodel import Session, select

from curation.store.models import Adjudication, ExportVersion, GuidelinesVersion, Judgment, LeakFinding, SeedJudgment


def work_counts(session: Session) -> dict[str, int]:
    """``{what: how many}`` for each kind of work found in the store (kinds with none left out):
    judgments (human or imported, skips included), adjudications, seed judgments, leak decisions,
    guidelines versions after the first, export versions."""
    def count(stmt) -> int:
        return int(session.exec(stmt).one())

    counts = {
        "judgments": count(select(func.count()).select_from(Judgment)),
        "adjudications": count(select(func.count()).select_from(Adjudication)),
        "seed judgments": count(select(func.count()).select_from(SeedJudgment)),
        "leak decisions": count(select(func.count()).select_from(LeakFinding)
                                .where(LeakFinding.decided_by_id.is_not(None))),
        "guidelines versions": count(select(func.count()).select_from(GuidelinesVersion)
                                     .where(GuidelinesVersion.version > 1)),
        "export versions": count(select(func.count()).select_from(ExportVersion)),
    }
    return {k: v for k, v in counts.items() if v}
