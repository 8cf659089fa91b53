"""Allocation, drawing and the whole sample: properties, hand calculations and Monte Carlo checks."""

from __future__ import annotations

import collections
import hashlib
import json
import random

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from curation.formats.normalize import normalize_text
from curation.formats.queries import format_query, write_queries
from curation.formats.query_list import read_query_list
from curation.sample.draw import query_shapes
from curation.sample.sampling import (
    allocate,
    draw_stratum,
    qid_for,
    sample_queries,
)

# ---- allocation ------------------------------------------------------------------------------


def reference_quotas(traffic, available, size, floor):
    """Exact quotas by float bisection on the rate (an implementation independent of allocate())."""
    lows = [min(floor, a) for a in available]

    def total(lam):
        return sum(min(max(lam * t, lo), hi) for t, lo, hi in zip(traffic, lows, available))

    lo, hi = 0.0, max(a / t for a, t in zip(available, traffic)) + 1.0
    for _ in range(200):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if total(mid) < size else (lo, mid)
    lam = (lo + hi) / 2
    return [min(max(lam * t, lo_), hi_) for t, lo_, hi_ in zip(traffic, lows, available)], lam


strata_st = st.lists(st.tuples(st.integers(1, 10**6), st.integers(1, 400)), min_size=1, max_size=12)


@pytest.mark.slow
@settings(max_examples=300, deadline=None)
@given(strata=strata_st, floor=st.integers(0, 40), data=st.data())
def test_allocation_is_exact_respects_floors_and_sizes_and_stays_within_one_of_its_quota(strata, floor, data):
    traffic = [t for t, _ in strata]
    available = [a for _, a in strata]
    need = sum(min(floor, a) for a in available)
    if need > sum(available):
        return
    size = data.draw(st.integers(need, sum(available)))
    result = allocate(traffic, available, size=size, floor=floor)
    counts = result.counts
    assert sum(counts) == size
    for c, a in zip(counts, available):
        assert min(floor, a) <= c <= a
    quotas, lam = reference_quotas(traffic, available, size, floor)
    for c, q in zip(counts, quotas):
        assert abs(c - q) < 1 + 1e-6
    # Proportional above the floor: strata strictly between their floor and their size get
    # lam * traffic, rounded up or down.
    for c, t, a in zip(counts, traffic, available):
        if min(floor, a) < lam * t < a:
            assert np.floor(lam * t - 1e-6) <= c <= np.ceil(lam * t + 1e-6)


def test_proportional_hand_example():
    # 60/30/10 of traffic, 10 draws, no floor: 6, 3, 1
    assert allocate([600, 300, 100], [50, 50, 50], size=10, floor=0).counts == [6, 3, 1]


def test_largest_remainder_hand_example():
    # quotas 2.0, 1.2, 0.8 -> floors 2, 1, 0; one seat left goes to the largest remainder (0.8)
    result = allocate([5, 3, 2], [9, 9, 9], size=4, floor=0)
    assert result.counts == [2, 1, 1]
    assert [float(q) for q in result.quotas] == [2.0, 1.2, 0.8]


def test_floor_lifts_small_strata_and_the_rest_is_proportional():
    # size 20, floor 3: the two small strata get 3 each; 14 left for the big one
    result = allocate([9000, 50, 50], [500, 500, 500], size=20, floor=3)
    assert result.counts == [14, 3, 3]


def test_short_stratum_gives_all_and_its_shortfall_is_reallocated():
    # floor 5 but stratum 3 has 2 queries: it gives 2; 18 remain for strata of traffic 3:2 -> 10.8, 7.2,
    # rounded by largest remainder -> 11, 7
    result = allocate([300, 200, 10], [100, 100, 2], size=20, floor=5)
    assert result.counts == [11, 7, 2]
    assert result.floors == [5, 5, 2]


def test_floors_alone_exceeding_the_size_fail_with_an_explanation():
    with pytest.raises(ValueError) as info:
        allocate([10, 10, 10, 10], [50, 50, 50, 3], size=30, floor=10)
    msg = str(info.value)
    # 10 + 10 + 10 + 3 = 33 > 30; largest floor that fits: 9 -> 9*3 + 3 = 30
    assert "floors alone need 33 queries" in msg and "size 30" in msg and "floor to at most 9" in msg


def test_size_above_the_queries_available_fails():
    with pytest.raises(ValueError, match="lower size to at most 7"):
        allocate([10, 10], [3, 4], size=8, floor=0)


def test_bad_allocation_arguments_name_the_parameter():
    with pytest.raises(ValueError, match="size"):
        allocate([1], [1], size=-1)
    with pytest.raises(ValueError, match="floor"):
        allocate([1], [1], size=1, floor=-1)
    with pytest.raises(ValueError, match="traffic"):
        allocate([0], [1], size=1)


# ---- drawing within a stratum ------------------------------------------------------------------


def test_traffic_draws_have_the_stated_inclusion_probabilities():
    """Monte Carlo: each query's draw frequency matches pi_i (certainty for the head, then k' t / T')."""
    t = np.array([50, 20, 10, 10, 5, 5])
    k = 3
    # By hand: 50 * 3 >= 100 -> certain; then k' = 2 over T' = 50: 20*2 = 40 < 50, so
    # pi = 2 t / 50 = 0.8, 0.4, 0.4, 0.2, 0.2 for the rest.
    expected = np.array([1.0, 0.8, 0.4, 0.4, 0.2, 0.2])
    runs = 4000
    hits = np.zeros(len(t))
    for s in range(runs):
        idx, probs = draw_stratum(t, k, weighting="traffic", rng=np.random.default_rng(s))
        assert len(idx) == k and len(set(idx.tolist())) == k
        hits[idx] += 1
        assert np.allclose(probs, expected[idx])
    se = np.sqrt(expected * (1 - expected) / runs)
    assert np.all(np.abs(hits / runs - expected) <= 4 * se + 1e-9)


def test_uniform_draws_are_equally_likely():
    t = np.array([1000, 1, 1, 1, 1])
    hits = np.zeros(5)
    for s in range(3000):
        idx, probs = draw_stratum(t, 2, weighting="uniform", rng=np.random.default_rng(s))
        hits[idx] += 1
        assert np.allclose(probs, 0.4)
    assert np.all(np.abs(hits / 3000 - 0.4) < 4 * np.sqrt(0.24 / 3000))


def test_uniform_draws_take_the_head_whole_then_the_rest_alike():
    # 2 k' t >= T': 2*5*600 >= 1060, then 2*4*300 >= 460, then 2*3*50 >= 160 (three taken: two draws
    # are left, the most the rule takes); the other 2 draws from the 7 others alike.
    from curation.sample.draw import head_units

    t = np.array([600, 300, 50, 40, 30, 20, 10, 5, 3, 2])
    assert head_units(t[:5], 5, int(t.sum())) == (3, 160 - 50)
    assert head_units([100, 1, 1], 3, 102)[0] == 1 and head_units([9, 9], 2, 18) == (0, 18)
    hits = np.zeros(len(t))
    runs = 3000
    for s in range(runs):
        idx, probs = draw_stratum(t, 5, weighting="uniform", rng=np.random.default_rng(s))
        assert {0, 1, 2} <= set(idx.tolist())
        assert np.allclose(probs, np.where(np.isin(idx, [0, 1, 2]), 1.0, 2 / 7))
        hits[idx] += 1
    p = 2 / 7
    assert np.all(np.abs(hits[3:] / runs - p) < 4 * np.sqrt(p * (1 - p) / runs))
    idx, probs = draw_stratum(t, 5, weighting="uniform", rng=np.random.default_rng(0), head="drawn")
    assert np.allclose(probs, 0.5)
    with pytest.raises(ValueError, match="head"):
        draw_stratum(t, 5, weighting="uniform", rng=np.random.default_rng(0), head="whole")


@settings(max_examples=150, deadline=None)
@given(st.data())
def test_a_stratum_in_any_order_with_tie_ranks_draws_what_it_draws_in_text_order(data):
    """LogPool draws a stratum without sorting its texts: tie_ranks orders only the queries among
    which draw_stratum breaks a tie. Ties are made common on purpose (few traffic values, keys
    drawn from a handful), and texts include non-ASCII and prefixes of each other."""
    import pyarrow as pa

    from curation.sample.sampling import tie_ranks

    texts = data.draw(st.lists(st.text(alphabet="ab\u00e9\u4e2d ", min_size=0, max_size=5), min_size=2,
                               max_size=40, unique=True))
    n = len(texts)
    traffic = np.array(data.draw(st.lists(st.sampled_from([1, 1, 2, 3, 50]), min_size=n, max_size=n)))
    keys = np.array(data.draw(st.lists(st.integers(0, 5 if data.draw(st.booleans()) else 2**64 - 1),
                                       min_size=n, max_size=n)), dtype=np.uint64)
    k = data.draw(st.integers(1, n - 1))
    weighting = data.draw(st.sampled_from(["traffic", "uniform"]))
    head = data.draw(st.sampled_from(["certain", "drawn"]))
    seed = data.draw(st.integers(0, 2**16))
    by_text = sorted(range(n), key=lambda i: texts[i])  # Python's order of str: code points
    idx, probs = draw_stratum(traffic[by_text], k, weighting=weighting, rng=np.random.default_rng(seed),
                              keys=keys[by_text], head=head)
    want = dict(zip((texts[by_text[i]] for i in idx), probs.tolist()))
    shuffled = data.draw(st.permutations(range(n)))
    arr = pa.array([texts[i] for i in shuffled], pa.string())
    by_key = np.argsort(keys[shuffled], kind="stable")  # sorted once, as LogPool does, for both
    ranks = tie_ranks(arr, traffic[shuffled], keys[shuffled], k, by_key)
    assert sorted(ranks.tolist()) == list(range(n))
    idx, probs = draw_stratum(traffic[shuffled], k, weighting=weighting, rng=np.random.default_rng(seed),
                              keys=keys[shuffled], head=head, ranks=ranks, by_key=by_key)
    assert dict(zip((texts[shuffled[i]] for i in idx), probs.tolist())) == want


@settings(max_examples=200, deadline=None)
@given(st.lists(st.sampled_from([0, 1, 1, 2, 3, 7, 50]), min_size=1, max_size=200), st.data())
def test_the_largest_queries_are_those_of_a_full_sort(traffic, data):
    """draw_stratum sorts only the queries with at least the k-th largest traffic: the same k
    queries, in the same order, as sorting all by (traffic descending, tie rank)."""
    from curation.sample.sampling import _largest

    t = np.array(traffic, dtype=np.int64)
    tie = np.array(data.draw(st.permutations(range(len(t)))), dtype=np.int64)
    k = data.draw(st.integers(0, len(t)))
    assert _largest(t, tie, k).tolist() == np.lexsort((tie, -t))[:k].tolist()


# ---- the whole sample ---------------------------------------------------------------------------


def make_log(path, rows=4000, seed=3):
    """A CSV log with a heavy head: 300 queries with Zipf-like traffic in two markets."""
    rnd = random.Random(seed)
    queries = [f"query {i}" for i in range(250)] + [f"how do i fix {i}" for i in range(50)]
    weights = [1 / (i + 1) for i in range(len(queries))]
    market = {q: ("us" if i % 4 else "de") for i, q in enumerate(queries)}
    lines = ["query,user,market"]
    for _ in range(rows):
        q = rnd.choices(queries, weights)[0]
        shown = q.upper() if rnd.random() < 0.2 else q
        lines.append(f"{shown},u{rnd.randint(0, 200)},{market[q]}")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


@pytest.fixture
def log(tmp_path):
    return make_log(tmp_path / "log.csv")


def _sample(log, **kw):
    args = dict(query_col="query", user_col="user", strata=["market"], shape=True, size=40, floor=5, seed=11)
    args.update(kw)
    return sample_queries(log, **args)


def test_rows_have_the_promised_fields_and_weights_sum_to_one(log):
    result = _sample(log)
    assert len(result.rows) == 40
    row = result.rows[0]
    assert list(row) == ["qid", "text", "stratum", "traffic", "users", "stratum_share", "inclusion", "weight", "pii",
                         "stratum_traffic", "stratum_size", "stratum_drawn", "user_weight", "stratum_user_share"]
    assert sum(r["weight"] for r in result.rows) == pytest.approx(1.0, abs=1e-12)
    for s in result.strata:
        rows = [r for r in result.rows if r["stratum"] == s.values]
        assert len(rows) == s.allocated
        assert sum(r["weight"] for r in rows) == pytest.approx(s.share, abs=1e-12)
        certain = [r for r in rows if r["inclusion"] == 1]
        share_left = s.share - sum(r["traffic"] for r in certain) / sum(x.traffic for x in result.strata)
        for r in rows:
            assert r["stratum_share"] == s.share
            if r["inclusion"] < 1:  # every other draw stands for an equal part of what is left
                assert r["weight"] == pytest.approx(share_left / (len(rows) - len(certain)), rel=1e-12)
            else:  # a certainty draw stands for its own traffic
                assert r["weight"] == pytest.approx(r["traffic"] / sum(x.traffic for x in result.strata), rel=1e-12)
        if not certain:
            assert all(r["weight"] == pytest.approx(s.share / s.allocated, rel=1e-12) for r in rows)
    assert {tuple(s.values) for s in result.strata} == {("market", "shape")}
    assert len({r["qid"] for r in result.rows}) == 40


def test_stratum_shares_and_traffic_match_a_hand_count(log):
    result = _sample(log)
    lines = log.read_text(encoding="utf-8").splitlines()[1:]
    counts = collections.Counter()
    for line in lines:
        q, _, m = line.rsplit(",", 2)
        counts[normalize_text(q), m] += 1
    total = sum(counts.values())
    for s in result.strata:
        shape = s.values["shape"]
        mine = sum(n for (q, m), n in counts.items()
                   if m == s.values["market"] and (q.startswith("how") == (shape == "question")))
        assert s.traffic == mine and s.share == pytest.approx(mine / total)
    for r in result.rows:
        assert r["traffic"] == sum(n for (q, _), n in counts.items() if q == r["text"])


def test_same_seed_same_bytes_and_row_order_of_the_log_does_not_matter(log, tmp_path):
    a, b, c = tmp_path / "a.jsonl", tmp_path / "b.jsonl", tmp_path / "c.jsonl"
    write_queries(_sample(log).rows, a)
    write_queries(_sample(log).rows, b)
    assert a.read_bytes() == b.read_bytes()
    lines = log.read_text(encoding="utf-8").splitlines()
    body = lines[1:]
    random.Random(0).shuffle(body)
    shuffled = tmp_path / "shuffled.csv"
    shuffled.write_text("\n".join([lines[0], *body]) + "\n", encoding="utf-8")
    write_queries(_sample(shuffled).rows, c)
    assert a.read_bytes() == c.read_bytes()
    write_queries(_sample(log, seed=12).rows, c)
    assert a.read_bytes() != c.read_bytes()


def test_qid_is_a_hash_prefix_of_the_normalised_text(log):
    for r in _sample(log).rows:
        assert r["qid"] == "q" + hashlib.sha256(r["text"].encode()).hexdigest()[:12]
    assert qid_for("weather") == "q" + hashlib.sha256(b"weather").hexdigest()[:12]


@pytest.mark.parametrize("weighting", ["traffic", "uniform"])
def test_weighted_mean_estimates_the_mean_over_searches(log, weighting):
    """Monte Carlo over seeds: the weighted sample mean of a per-query value is centred on the
    traffic-weighted mean over all searches (computed by hand from the log), within 2 standard
    errors of the simulation. (Uniform draws give Horvitz-Thompson weights, unbiased but much
    noisier on this Zipf head than traffic draws.)"""
    lines = log.read_text(encoding="utf-8").splitlines()[1:]
    per_search = [len(normalize_text(line.rsplit(",", 2)[0])) for line in lines]
    truth = sum(per_search) / len(per_search)
    estimates = []
    for seed in range(150):
        rows = _sample(log, seed=seed, weighting=weighting).rows
        estimates.append(sum(r["weight"] * len(r["text"]) for r in rows))
    se = np.std(estimates, ddof=1) / np.sqrt(len(estimates))
    assert abs(np.mean(estimates) - truth) <= 2 * se


def test_handwritten_queries_are_their_own_stratum_with_weight_zero(log, tmp_path):
    hand = tmp_path / "hand.txt"
    hand.write_text("Query 0\nwhat about refunds?\n\nwhat about REFUNDS?\n", encoding="utf-8")
    result = _sample(log, handwritten=hand)
    logged = [r for r in result.rows if r["stratum"] != {"source": "handwritten"}]
    handwritten = [r for r in result.rows if r["stratum"] == {"source": "handwritten"}]
    assert len(logged) == 40  # size counts logged queries only
    assert [r["text"] for r in handwritten] == ["query 0", "what about refunds?"]
    assert all(r["weight"] == 0 and r["stratum_share"] == 0 for r in handwritten)
    assert "query 0" not in {r["text"] for r in logged}  # only sampled as hand-written
    assert handwritten[0]["traffic"] > 0 and handwritten[1]["traffic"] == 0
    assert sum(r["weight"] for r in logged) == pytest.approx(1.0)
    assert any("duplicates of an earlier line" in w for w in result.warnings)
    assert result.strata[-1].label == "handwritten"


def test_exclude_keeps_a_new_set_disjoint_from_an_earlier_one(log, tmp_path):
    first = tmp_path / "first.jsonl"
    write_queries(_sample(log).rows, first)
    earlier = {json.loads(line)["text"] for line in first.read_text(encoding="utf-8").splitlines()}
    second = _sample(log, exclude=[first], seed=99)
    assert not earlier & {r["text"] for r in second.rows}
    assert len(second.rows) == 40
    assert any("--exclude" in w for w in second.warnings)


def test_personal_data_is_flagged_in_rows_and_warnings(tmp_path):
    log = tmp_path / "log.csv"
    log.write_text("query\njane@example.com\ncall +44 20 7946 0958\nweather\nweather\n", encoding="utf-8")
    result = sample_queries(log, query_col="query", size=3, floor=0)
    flags = {r["text"]: r["pii"] for r in result.rows}
    assert flags == {"jane@example.com": ["email"], "call +44 20 7946 0958": ["phone"], "weather": []}
    assert result.stats["pii"] == {"email": 1, "phone": 1}
    assert any("2 sampled queries look like personal data" in w for w in result.warnings)


def test_short_stratum_warns_and_the_total_stays_exact(tmp_path):
    log = tmp_path / "log.csv"
    rows = ["query,market"] + [f"q{i},big" for i in range(60)] + ["rare one,small", "rare two,small"]
    log.write_text("\n".join(rows) + "\n", encoding="utf-8")
    result = sample_queries(log, query_col="query", strata=["market"], size=10, floor=5)
    assert len(result.rows) == 10
    small = next(s for s in result.strata if s.values == {"market": "small"})
    assert small.allocated == 2 and small.short
    assert any("has only 2 distinct queries, fewer than the floor of 5" in w for w in result.warnings)


def test_floors_exceeding_the_size_stop_the_sample(log):
    with pytest.raises(ValueError, match="floors alone need"):
        _sample(log, size=10, floor=5)


def test_query_shapes():
    assert query_shapes(["how do i fix it", "what", "fix it", "is the store open", "store hours?",
                         "will smith movies", "can opener"]) == [
        "question", "question", "keyword", "question", "question", "keyword", "keyword"]


def test_query_shapes_in_bulk_agree_with_python_re_one_by_one():
    """Printable-ASCII texts are matched by pyarrow's RE2, the rest by Python's re: on texts built
    to tell the two apart (word boundaries beside non-ASCII letters, white space RE2 does not
    know, newlines before the end), the answer is always Python's."""
    import re

    from curation.sample.draw import QUESTION_PATTERN

    pattern = re.compile(QUESTION_PATTERN)
    atoms = ["what", "how", "is", "are", "can", "i", "the", "you", "?", " ", "  ", "\t", "\x0b", "\x1c", "\n",
             "\u00e9", "what\u00e9", "what_", "what1", "whatx", "is\u00a0the", "which", "where's", "a", "?\n",
             "\u2003", "x", "-", "\u0130", "\u00df", "\u0085", "\u00b2"]
    rnd = random.Random(4)
    texts = ["".join(rnd.choice(atoms) for _ in range(rnd.randint(0, 5))) for _ in range(20000)]
    expected = ["question" if pattern.search(t) else "keyword" for t in texts]
    assert query_shapes(texts) == expected
    assert expected.count("question") > 1000 and expected.count("keyword") > 1000


def test_read_query_list_formats_and_errors(tmp_path):
    (tmp_path / "a.csv").write_text("id,text\n1,Hello  World\n2,\n", encoding="utf-8")
    assert read_query_list(tmp_path / "a.csv") == [(2, "hello world")]
    (tmp_path / "b.jsonl").write_text('{"text": "x"}\n{"query": "Y"}\n{"other": 1}\n', encoding="utf-8")
    from curation.formats.fileio import InputError

    with pytest.raises(InputError) as info:
        read_query_list(tmp_path / "b.jsonl")
    assert info.value.line == 3
    (tmp_path / "c.tsv").write_text("text\textra\nx\n", encoding="utf-8")
    with pytest.raises(InputError) as info:
        read_query_list(tmp_path / "c.tsv")
    assert info.value.line == 2


def test_format_query_is_compact_and_keeps_unicode():
    assert format_query({"qid": "q1", "text": "café", "pii": []}) == '{"qid":"q1","text":"café","pii":[]}'


def test_bad_sampling_arguments_name_the_parameter(log):
    with pytest.raises(ValueError, match="weighting"):
        _sample(log, weighting="zipf")
    with pytest.raises(ValueError, match="seed"):
        _sample(log, seed=-1)
    with pytest.raises(ValueError, match="shape"):
        _sample(log, strata=["shape"], shape=True)


@pytest.mark.parametrize("with_shape", [True, False])
def test_strata_from_integer_codes_are_pandas_groups(with_shape):
    """The strata of a pool numbered by codes and a radix sort are pandas' groupby groups: the same
    keys in the same order, the same positions (ascending) in each, with or without the shape."""
    from curation.sample.sampling import _strata_by_pandas, _strata_members

    rng = np.random.default_rng(3)
    n = 5000
    pool = pd.DataFrame({
        "market": pd.array(rng.choice(["us", "uk", "", "d\u00e9", "a b"], size=n).tolist(), dtype="string"),
        "device": pd.array(rng.choice(["mobile", "desktop"], size=n, p=[0.99, 0.01]).tolist(), dtype="string"),
    })
    question = (rng.random(n) < 0.2).astype(np.int8) if with_shape else None
    dims = ("market", "device") + (("shape",) if with_shape else ())
    keys, members = _strata_members(pool, dims, question)
    want_keys, want_members = _strata_by_pandas(pool, dims, question)
    assert keys == want_keys and len(keys) >= 9  # (a rare device leaves a combination or two empty)
    assert all(np.array_equal(m, w) for m, w in zip(members, want_members, strict=True))
    few = pool.iloc[:3].reset_index(drop=True)  # strata left empty do not appear
    assert _strata_members(few, dims, None if question is None else question[:3])[0] == \
        _strata_by_pandas(few, dims, None if question is None else question[:3])[0]
