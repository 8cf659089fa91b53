"""The pool's provenance, in one place: which runs put each pooled document where.

``PoolPair.systems_json`` holds ``{run: rank}`` (the document's rank in the run's top ``depth``),
its keys sorted; judges never see it. It is written when a pool is loaded or extended and read
back as the runs' rankings by the decisive order, the machine judge's bias checks and the version
comparison, all through this module: :data:`RANKS` to select the column, :func:`decode_ranks` to
read a value, :func:`encode_ranks` and :func:`merged_ranks` to write one.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from curation.store.models import PoolPair

RANKS = PoolPair.systems_json  # the column, for a select


def encode_ranks(systems: Mapping[str, int]) -> str:
    """``{run: rank}`` as stored (JSON, keys sorted)."""
    return json.dumps(dict(systems), sort_keys=True)


def decode_ranks(text: str | None) -> dict[str, int]:
    """A stored value as ``{run: rank}`` (``{}`` for a pair no run found, such as a seed's);
    ``json.JSONDecodeError`` when it is not JSON."""
    return json.loads(text or "{}")


def ranks_row(systems: Mapping[str, int]) -> dict[str, str]:
    """The provenance column of a new pool pair's row (for an insert of rows as dicts)."""
    return {"systems_json": encode_ranks(systems)}


def set_ranks(pair: PoolPair, text: str) -> None:
    """Store ``text`` (from :func:`encode_ranks` or :func:`merged_ranks`) as ``pair``'s provenance."""
    pair.systems_json = text


def merged_ranks(text: str | None, more: Mapping[str, int]) -> str:
    """A stored value with the ranks of ``more`` added (a run in both takes its rank from ``more``)."""
    merged = dict(decode_ranks(text))
    merged.update(more)
    return encode_ranks(merged)
