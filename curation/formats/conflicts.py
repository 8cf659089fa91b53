"""Repeated records in one input file: identical repeats are counted, conflicting ones follow a policy.

One key (a qrels pair, a corpus id, a qid) seen twice in a file is either

* an *identical repeat* (the same value again): harmless, dropped and counted in :attr:`Dedup.repeats`
  so the command's summary can say so; or
* a *conflict* (another value: a second grade, another text): by default an :class:`InputError` that
  names both lines, because silently keeping one of them would change a result; the policy ``first``
  or ``last`` (a command's ``--on-conflict``) keeps one and counts it in :attr:`Dedup.conflicts`.

Every reader that can meet repeats uses one :class:`Dedup`, so the rule is the same for every format.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field

from curation.formats.fileio import InputError

POLICIES = ("error", "first", "last")  # the choices of curation.cli.base.on_conflict_option


@dataclass
class Dedup:
    """Track the keys of one file: :meth:`add` says whether to keep a record, and counts repeats."""

    path: str | os.PathLike
    policy: str = "error"
    what: str = "record"  # names the key in messages: "pair", "qid", "document"
    repeats: int = 0  # identical repeats dropped
    conflicts: int = 0  # conflicting repeats resolved by the policy
    _seen: dict = field(default_factory=dict, repr=False)  # key -> (line, value)

    def __post_init__(self) -> None:
        if self.policy not in POLICIES:
            raise ValueError(f"on_conflict: {self.policy!r} is not one of {', '.join(POLICIES)}")
        self.path = str(self.path)

    def add(self, key, value, lineno: int | None, *, label=None, path: str | os.PathLike | None = None) -> bool:
        """Record ``key`` with ``value`` read on ``lineno``; True when the record is to be kept (first
        seen, or replacing the earlier one under ``last``), False when it is to be dropped.
        :class:`InputError` naming both lines for a conflict under ``error``, showing ``label`` (say
        a query's text) for the value when given. ``path``: the file of this line, when a reader
        goes through several (a corpus in parts); by default the one the :class:`Dedup` was made for."""
        path = self.path if path is None else str(path)
        seen = self._seen.get(key)
        if seen is None:
            self._seen[key] = (lineno, value, label, path)
            return True
        first_line, first_value, first_label, first_path = seen
        if first_value == value:
            self.repeats += 1
            return False
        if self.policy == "error":
            here, there = (value, first_value) if label is None or label == first_label else (label, first_label)
            where = f"line {first_line}" + ("" if first_path == path else f" of {first_path}")
            raise InputError(
                path, lineno,
                f"{self.what} {_show(key)} has {_show(here)} here but {_show(there)} on {where}; "
                "fix the file, or choose one with --on-conflict first|last",
            )
        self.conflicts += 1
        if self.policy == "last":
            self._seen[key] = (lineno, value, label, path)
            return True
        return False

    def summary(self) -> str | None:
        """One line for a command's summary, or None when nothing was repeated."""
        if not self.repeats and not self.conflicts:
            return None
        parts = []
        if self.repeats:
            parts.append(f"{self.repeats} identical duplicate {self.what} line(s) dropped")
        if self.conflicts:
            parts.append(f"{self.conflicts} conflicting repeat(s) resolved by --on-conflict {self.policy}")
        return f"{self.path}: " + "; ".join(parts)


def _show(value) -> str:
    if isinstance(value, tuple):
        return "/".join(str(v) for v in value)
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."
