"""The export's fast qrels.jsonl line (label_record_line, label_vote_json) writes exactly the bytes of
the one general writer, format_label_record (json.dumps), for every kind of record."""

from __future__ import annotations

import json
import random

from curation.formats.qrels import format_label_record, label_record_line, label_vote_json

ODD = ["q1", "007", 'a"b', "back\\slash", "é", "日本", "tab\there", "\u2028", "ctl\x01", "emoji😀"]


def _record(rng: random.Random) -> dict:
    votes = [{"judge": rng.choice(ODD), "grade": rng.randrange(4), "unsure": rng.random() < 0.3,
              "guidelines_version": rng.choice((None, 1, 12))} for _ in range(rng.randrange(4))]
    source = rng.choice(("single", "unanimous", "majority", "lead", "adjudicated", "seed"))
    adjudication = None
    if source == "adjudicated":
        adjudication = {"lead": rng.choice(ODD), "grade": 1, "reason": rng.choice(ODD) + ' "why"',
                        "guidelines_version": rng.choice((None, 3))}
    seeds = [{"source": rng.choice(("ticket", "click")), "grade": rng.randrange(3)} for _ in range(rng.randrange(3))]
    return {"qid": rng.choice(ODD), "docid": rng.choice(ODD) + str(rng.randrange(99)), "grade": rng.randrange(4),
            "source": source, "seed_only": source == "seed", "judgments": votes, "adjudication": adjudication,
            "seeds": seeds, "pooled": rng.random() < 0.8, "guidelines_version": rng.choice((None, 2))}


def test_the_fast_line_is_the_general_writers_line_byte_for_byte():
    rng = random.Random(7)
    for _ in range(2000):
        r = _record(rng)
        votes = [label_vote_json(v["judge"], v["grade"], v["unsure"], v["guidelines_version"]) for v in r["judgments"]]
        fast = label_record_line(r["qid"], r["docid"], r["grade"], r["source"], votes, r["adjudication"], r["seeds"],
                                 r["pooled"], r["guidelines_version"])
        assert fast == format_label_record(r)
        assert json.loads(fast) == r
